// Types of @oma-kernel/core: the shapes of open-multi-agent 1.7.0 (CONTRACT §0.2, §1), plus
// the additive fields this kernel reports (`aborted`, `timedOut`).

// ---- content & messages ----------------------------------------------------------------
export interface TextBlock { readonly type: 'text'; readonly text: string }
export interface ReasoningBlock {
  readonly type: 'reasoning'
  readonly text: string
  readonly signature?: string
  readonly redactedData?: string
  readonly provenance?: string
}
export interface ToolUseBlock {
  readonly type: 'tool_use'
  readonly id: string
  readonly name: string
  readonly input: Record<string, unknown>
  readonly signature?: string
}
export interface ToolResultBlock {
  readonly type: 'tool_result'
  readonly tool_use_id: string
  readonly content: string
  readonly is_error?: boolean
}
export interface ImageBlock {
  readonly type: 'image'
  readonly source: { readonly type: 'base64'; readonly media_type: string; readonly data: string }
}
export type ContentBlock = ReasoningBlock | TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock

export interface LLMMessage { readonly role: 'user' | 'assistant'; readonly content: ContentBlock[] }
export interface TokenUsage { readonly input_tokens: number; readonly output_tokens: number }
export interface LLMResponse {
  readonly id: string
  readonly content: ContentBlock[]
  readonly model: string
  readonly stop_reason: string
  readonly usage: TokenUsage
}
export interface LLMToolDef { readonly name: string; readonly description: string; readonly inputSchema: Record<string, unknown> }

export interface StreamEvent {
  /** `text_delta` (oma-kernel): token text as it arrives; only with `RunOptions.streamDeltas` and a native adapter. */
  readonly type: 'text' | 'text_delta' | 'reasoning' | 'tool_use' | 'tool_result' | 'loop_detected' | 'budget_exceeded' | 'done' | 'error'
  readonly data: unknown
}

export type ContextStrategy =
  | { type: 'sliding-window'; maxTurns: number }
  | { type: 'summarize'; maxTokens: number; summaryModel?: string }
  | {
      type: 'compact'
      maxTokens: number
      preserveRecentTurns?: number
      minToolResultChars?: number
      minTextBlockChars?: number
      textBlockExcerptChars?: number
    }
  | { type: 'custom'; compress: (messages: LLMMessage[], estimatedTokens: number) => LLMMessage[] | Promise<LLMMessage[]> }

// ---- tools -------------------------------------------------------------------------------
/** Structural view of a Zod (3 or 4) schema: only what the kernel calls. */
export interface ZodLikeSchema<T = unknown> {
  safeParse(data: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } }
}
/** A tool's input schema: a Zod schema, or a plain JSON Schema object (validated natively). */
export type ToolInputSchema<T = Record<string, unknown>> = ZodLikeSchema<T> | Record<string, unknown>

export interface MemoryStore {
  set(key: string, value: string, metadata?: Record<string, unknown>): Promise<void>
  [key: string]: unknown
}
export interface AgentInfo { readonly name: string; readonly role: string; readonly model: string }
export interface DelegationPoolView { readonly availableRunSlots: number }
export interface TeamInfo {
  readonly name: string
  readonly agents: readonly string[]
  readonly sharedMemory?: MemoryStore
  readonly delegationDepth?: number
  readonly maxDelegationDepth?: number
  readonly delegationPool?: DelegationPoolView
  readonly delegationChain?: readonly string[]
  readonly runDelegatedAgent?: (targetAgent: string, prompt: string) => Promise<AgentRunResult>
}
export interface ToolUseContext {
  readonly agent: AgentInfo
  readonly team?: TeamInfo
  abortSignal?: AbortSignal
  abortController?: AbortController
  readonly cwd?: string | null
  readonly metadata?: Readonly<Record<string, unknown>>
}
export interface ToolResultMetadata { readonly tokenUsage?: TokenUsage }
export interface ToolResult { readonly data: string; readonly isError?: boolean; readonly metadata?: ToolResultMetadata }

export interface ToolDefinition<TInput = Record<string, unknown>> {
  readonly name: string
  readonly description: string
  readonly inputSchema: ToolInputSchema<TInput> | any
  readonly outputSchema?: ZodLikeSchema<string> | any
  readonly llmInputSchema?: Record<string, unknown>
  readonly maxOutputChars?: number
  execute(input: TInput, context: ToolUseContext): Promise<ToolResult>
}

export declare function defineTool<TInput = any>(config: {
  name: string
  description: string
  inputSchema: ToolInputSchema<TInput> | any
  outputSchema?: ZodLikeSchema<string> | any
  llmInputSchema?: Record<string, unknown>
  maxOutputChars?: number
  execute: (input: TInput, context: ToolUseContext) => Promise<ToolResult>
}): ToolDefinition<TInput>

export declare class ToolRegistry {
  constructor()
  register(tool: ToolDefinition<any>, options?: { runtimeAdded?: boolean }): void
  get(name: string): ToolDefinition<any> | undefined
  list(): ToolDefinition<any>[]
  getAll(): ToolDefinition<any>[]
  has(name: string): boolean
  unregister(name: string): void
  deregister(name: string): void
  toToolDefs(): LLMToolDef[]
  toRuntimeToolDefs(): LLMToolDef[]
  toLLMTools(): Array<{ name: string; description: string; input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; [k: string]: unknown } }>
}

export interface ToolExecutorOptions {
  /** Bounds every tool execution through this executor, the runner's included. Default 4. */
  maxConcurrency?: number
  maxToolOutputChars?: number
}
export interface BatchToolCall { readonly id: string; readonly name: string; readonly input: Record<string, unknown> }

export declare class ToolExecutor {
  constructor(registry: ToolRegistry, options?: ToolExecutorOptions)
  execute(toolName: string, input: Record<string, unknown>, context: ToolUseContext): Promise<ToolResult>
  executeBatch(calls: BatchToolCall[], context: ToolUseContext): Promise<Map<string, ToolResult>>
}

export declare function truncateToolOutput(data: string, maxChars: number): string
export declare function zodToJsonSchema(schema: unknown): Record<string, unknown>

export declare class Semaphore {
  constructor(max: number)
  readonly limit: number
  readonly active: number
  readonly pending: number
  acquire(): Promise<void>
  release(): void
  run<T>(fn: () => Promise<T>): Promise<T>
}

// ---- LLM adapter ---------------------------------------------------------------------------
export interface ThinkingConfig { enabled: boolean; budgetTokens?: number; effort?: 'low' | 'medium' | 'high' }
export interface LLMChatOptions {
  readonly model: string
  readonly tools?: readonly LLMToolDef[]
  readonly maxTokens?: number
  readonly temperature?: number
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly parallelToolCalls?: boolean
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { minChars?: number }
  readonly systemPrompt?: string
  readonly abortSignal?: AbortSignal
}
export type LLMStreamOptions = LLMChatOptions
export interface LLMAdapter {
  readonly name: string
  readonly capabilities?: { readonly echoesReasoning: 'never' | 'own-issued' | 'tool-use-only' }
  chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse>
  stream?(messages: LLMMessage[], options: LLMStreamOptions): AsyncIterable<StreamEvent>
}

// ---- loop detection, structured output -------------------------------------------------
export interface LoopDetectionInfo { readonly kind: 'tool_repetition' | 'text_repetition'; readonly repetitions: number; readonly detail: string }
export interface LoopDetectionConfig {
  readonly maxRepetitions?: number
  readonly loopDetectionWindow?: number
  readonly onLoopDetected?: 'warn' | 'terminate' | ((info: LoopDetectionInfo) => 'continue' | 'inject' | 'terminate' | Promise<'continue' | 'inject' | 'terminate'>)
}
export declare class LoopDetector {
  constructor(config?: LoopDetectionConfig)
  recordToolCalls(blocks: ReadonlyArray<{ readonly name: string; readonly input: Record<string, unknown> }>): LoopDetectionInfo | null
  recordText(text: string): LoopDetectionInfo | null
}

export declare function buildStructuredOutputInstruction(schema: unknown): string
export declare function extractJSON(raw: string): unknown
export declare function validateOutput(schema: ZodLikeSchema<any> | any, data: unknown): unknown

// ---- agent -------------------------------------------------------------------------------
export type SupportedProvider =
  | 'anthropic' | 'azure-openai' | 'bedrock' | 'copilot' | 'deepseek' | 'doubao' | 'grok' | 'hunyuan'
  | 'minimax' | 'mimo' | 'openai' | 'gemini' | 'qiniu'

export interface BeforeRunHookContext { readonly prompt: string; readonly agent: AgentConfig }

export interface AgentConfig {
  readonly name: string
  readonly model: string
  readonly adapter?: LLMAdapter
  readonly provider?: SupportedProvider
  readonly baseURL?: string
  readonly apiKey?: string
  readonly region?: string
  readonly systemPrompt?: string
  readonly customTools?: readonly ToolDefinition<any>[]
  readonly tools?: readonly string[]
  readonly disallowedTools?: readonly string[]
  readonly toolPreset?: 'readonly' | 'readwrite' | 'full'
  readonly cwd?: string | null
  readonly maxTurns?: number
  readonly maxTokens?: number
  readonly maxTokenBudget?: number
  readonly contextStrategy?: ContextStrategy
  readonly temperature?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly parallelToolCalls?: boolean
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
  readonly timeoutMs?: number
  readonly loopDetection?: LoopDetectionConfig
  readonly maxToolOutputChars?: number
  readonly compressToolResults?: boolean | { readonly minChars?: number }
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
  readonly outputSchema?: ZodLikeSchema<any> | any
  readonly beforeRun?: (context: BeforeRunHookContext) => BeforeRunHookContext | Promise<BeforeRunHookContext>
  readonly afterRun?: (result: AgentRunResult) => AgentRunResult | Promise<AgentRunResult>
}

export interface AgentState {
  status: 'idle' | 'running' | 'completed' | 'error'
  messages: LLMMessage[]
  tokenUsage: TokenUsage
  error?: Error
}
export interface ToolCallRecord { readonly toolName: string; readonly input: Record<string, unknown>; readonly output: string; readonly duration: number }
export interface AgentRunResult {
  readonly success: boolean
  readonly output: string
  readonly messages: LLMMessage[]
  readonly tokenUsage: TokenUsage
  readonly toolCalls: ToolCallRecord[]
  readonly structured?: unknown
  readonly loopDetected?: boolean
  readonly budgetExceeded?: boolean
  /** oma-kernel: the run stopped because its abort signal fired (timeouts included). */
  readonly aborted?: boolean
  /** oma-kernel: the agent's `timeoutMs` fired during the run. */
  readonly timedOut?: boolean
}

// ---- traces ----------------------------------------------------------------------------------
export type TraceEventType = 'llm_call' | 'tool_call' | 'task' | 'agent' | 'plan_ready' | 'agent_stream' | 'consensus'
export interface TraceEventBase {
  readonly runId: string
  readonly type: TraceEventType
  readonly startMs: number
  readonly endMs: number
  readonly durationMs: number
  readonly agent: string
  readonly taskId?: string
}
export interface LLMCallTrace extends TraceEventBase { readonly type: 'llm_call'; readonly model: string; readonly phase?: 'turn' | 'summary'; readonly turn: number; readonly tokens: TokenUsage }
export interface ToolCallTrace extends TraceEventBase { readonly type: 'tool_call'; readonly tool: string; readonly isError: boolean; readonly input: Record<string, unknown>; readonly output: string }
export interface AgentTrace extends TraceEventBase { readonly type: 'agent'; readonly turns: number; readonly tokens: TokenUsage; readonly toolCalls: number }
export interface TaskTrace extends TraceEventBase { readonly type: 'task'; readonly [k: string]: unknown }
export interface PlanReadyTrace extends TraceEventBase { readonly type: 'plan_ready'; readonly [k: string]: unknown }
export interface AgentStreamTrace extends TraceEventBase { readonly type: 'agent_stream'; readonly [k: string]: unknown }
export interface ConsensusTrace extends TraceEventBase { readonly type: 'consensus'; readonly [k: string]: unknown }
export type TraceEvent = LLMCallTrace | ToolCallTrace | TaskTrace | AgentTrace | PlanReadyTrace | AgentStreamTrace | ConsensusTrace

// ---- runner ----------------------------------------------------------------------------------
export interface RunnerOptions {
  readonly model: string
  readonly systemPrompt?: string
  readonly maxTurns?: number
  readonly maxTokens?: number
  readonly temperature?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly parallelToolCalls?: boolean
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
  readonly abortSignal?: AbortSignal
  readonly toolPreset?: 'readonly' | 'readwrite' | 'full'
  readonly allowedTools?: readonly string[]
  readonly disallowedTools?: readonly string[]
  readonly cwd?: string | null
  readonly agentName?: string
  readonly agentRole?: string
  readonly loopDetection?: LoopDetectionConfig
  readonly maxTokenBudget?: number
  readonly contextStrategy?: ContextStrategy
  readonly compressToolResults?: boolean | { readonly minChars?: number }
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
}
export interface RunOptions {
  readonly onToolCall?: (name: string, input: Record<string, unknown>) => void
  readonly onToolResult?: (name: string, result: ToolResult) => void
  readonly onMessage?: (message: LLMMessage) => void
  readonly onWarning?: (message: string) => void
  readonly onTrace?: (event: TraceEvent) => void | Promise<void>
  readonly runId?: string
  readonly taskId?: string
  readonly traceAgent?: string
  readonly abortSignal?: AbortSignal
  readonly team?: TeamInfo
  /**
   * oma-kernel: with a native adapter (`provider` / `createAdapter`), stream the model's answer
   * and also yield `{ type: 'text_delta', data: string }` events as tokens arrive, before the
   * turn's usual `text` event. Off by default: the event sequence is then exactly the original's.
   * Ignored for JS adapters.
   */
  readonly streamDeltas?: boolean
}
export interface RunResult {
  readonly messages: LLMMessage[]
  readonly output: string
  readonly toolCalls: ToolCallRecord[]
  readonly tokenUsage: TokenUsage
  readonly turns: number
  readonly loopDetected?: boolean
  readonly budgetExceeded?: boolean
  /** oma-kernel: the loop ended because the abort signal fired between turns. */
  readonly aborted?: boolean
}

export declare class AgentRunner {
  constructor(adapter: LLMAdapter, toolRegistry: ToolRegistry, toolExecutor: ToolExecutor, options: RunnerOptions)
  run(messages: LLMMessage[], options?: RunOptions): Promise<RunResult>
  stream(initialMessages: LLMMessage[], options?: RunOptions): AsyncGenerator<StreamEvent>
}

export declare const TOOL_PRESETS: {
  readonly readonly: readonly string[]
  readonly readwrite: readonly string[]
  readonly full: readonly string[]
}
export declare const AGENT_FRAMEWORK_DISALLOWED: readonly string[]

export declare class Agent {
  constructor(config: AgentConfig, toolRegistry: ToolRegistry, toolExecutor: ToolExecutor)
  readonly name: string
  readonly config: AgentConfig
  /** Internal, test-visible (CONTRACT §19.2): assign a runner before the first run to inject it. */
  runner: AgentRunner | null
  /** Internal, test-visible (CONTRACT §19.2): the persistent history `prompt()` reads and appends to. */
  messageHistory: LLMMessage[]
  run(prompt: string, runOptions?: Partial<RunOptions>): Promise<AgentRunResult>
  prompt(message: string): Promise<AgentRunResult>
  stream(prompt: string, runOptions?: Partial<RunOptions>): AsyncGenerator<StreamEvent>
  getState(): AgentState
  getHistory(): LLMMessage[]
  reset(): void
  addTool(tool: ToolDefinition<any>): void
  removeTool(name: string): void
  getTools(): string[]
  buildToolContext(abortSignal?: AbortSignal): ToolUseContext
}

// ---- errors & utilities -------------------------------------------------------------------
export declare class TokenBudgetExceededError extends Error {
  constructor(agent: string, tokensUsed: number, budget: number)
  readonly code: 'TOKEN_BUDGET_EXCEEDED'
  readonly agent: string
  readonly tokensUsed: number
  readonly budget: number
}
export declare class InvalidMessageError extends Error {
  constructor(message: string)
  readonly code: 'INVALID_MESSAGE'
}
export declare function generateRunId(): string
export declare function estimateTokens(messages: LLMMessage[]): number
export declare function emitTrace(fn: ((event: TraceEvent) => void | Promise<void>) | undefined, event: TraceEvent): void
export declare function defaultWorkspaceDir(): string
export { createAdapter, NativeAdapter, extractToolCallsFromText, repairToolArgs, assertValidMessages } from './lib/llm'
export declare const DEFAULT_WORKSPACE_DIRNAME: '.agent-workspace'

// ---- built-in tools, path safety, walker, redaction (lib/builtin) ---------------------------
export {
  bashTool, fileReadTool, fileWriteTool, fileEditTool, grepTool, globTool, delegateToAgentTool,
  BUILT_IN_TOOLS, ALL_BUILT_IN_TOOLS_WITH_DELEGATE, registerBuiltInTools, RegisterBuiltInToolsOptions,
  resolvePathWithinCwd, SafePathResult, collectFiles, SKIP_DIRS, matchesGlob,
  isSensitiveName, redactSensitiveText, redactSensitiveObject,
} from './lib/builtin'
