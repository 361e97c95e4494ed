// The public type shapes of @open-multi-agent/core 1.7.0 that the kernel must match, written
// out here from the contract (CONTRACT.md §1, §8) so compat.ts can check that the kernel's
// types are assignable to them and back. Only shapes are restated; nothing here is executed.
import type { ZodSchema } from 'zod'

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
export interface StreamEvent {
  readonly type: 'text' | 'reasoning' | 'tool_use' | 'tool_result' | 'loop_detected' | 'budget_exceeded' | 'done' | 'error'
  readonly data: unknown
}
export interface LLMToolDef { readonly name: string; readonly description: string; readonly inputSchema: Record<string, unknown> }

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
  | { type: 'custom'; compress: (messages: LLMMessage[], estimatedTokens: number) => Promise<LLMMessage[]> | LLMMessage[] }

export interface MemoryEntry {
  readonly key: string
  readonly value: string
  readonly metadata?: Readonly<Record<string, unknown>>
  readonly createdAt: Date
  readonly expiresAtTurn?: number
}
export interface MemoryStore {
  get(key: string): Promise<MemoryEntry | null>
  set(key: string, value: string, metadata?: Record<string, unknown>): Promise<void>
  setWithExpiry?(key: string, value: string, expiresAtTurn: number, metadata?: Record<string, unknown>): Promise<void>
  list(): Promise<MemoryEntry[]>
  delete(key: string): Promise<void>
  clear(): Promise<void>
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
  readonly abortSignal?: AbortSignal
  readonly abortController?: AbortController
  readonly cwd?: string | null
  readonly metadata?: Readonly<Record<string, unknown>>
}
export interface ToolResultMetadata { readonly tokenUsage?: TokenUsage }
export interface ToolResult { readonly data: string; readonly isError?: boolean; readonly metadata?: ToolResultMetadata }
export interface ToolDefinition<TInput = Record<string, unknown>> {
  readonly name: string
  readonly description: string
  readonly inputSchema: ZodSchema<TInput>
  readonly outputSchema?: ZodSchema<string>
  readonly llmInputSchema?: Record<string, unknown>
  readonly maxOutputChars?: number
  execute(input: TInput, context: ToolUseContext): Promise<ToolResult>
}

export interface ThinkingConfig { readonly enabled: boolean; readonly budgetTokens?: number; readonly effort?: 'low' | 'medium' | 'high' }
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
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
  readonly systemPrompt?: string
  readonly abortSignal?: AbortSignal
}
export interface LLMStreamOptions extends LLMChatOptions {}
export interface LLMAdapter {
  readonly name: string
  chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse>
  stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncIterable<StreamEvent>
  readonly capabilities?: { readonly echoesReasoning: 'never' | 'own-issued' | 'tool-use-only' }
}

export type SupportedProvider =
  | 'anthropic' | 'azure-openai' | 'bedrock' | 'copilot' | 'deepseek' | 'doubao' | 'grok' | 'hunyuan'
  | 'minimax' | 'mimo' | 'openai' | 'gemini' | 'qiniu'

export interface LoopDetectionInfo { readonly kind: 'tool_repetition' | 'text_repetition'; readonly repetitions: number; readonly detail: string }
export interface LoopDetectionConfig {
  readonly maxRepetitions?: number
  readonly loopDetectionWindow?: number
  readonly onLoopDetected?: 'warn' | 'terminate' | ((info: LoopDetectionInfo) => 'continue' | 'inject' | 'terminate' | Promise<'continue' | 'inject' | 'terminate'>)
}
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
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
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly parallelToolCalls?: boolean
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
  readonly timeoutMs?: number
  readonly loopDetection?: LoopDetectionConfig
  readonly maxToolOutputChars?: number
  readonly compressToolResults?: boolean | { readonly minChars?: number }
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
  readonly outputSchema?: ZodSchema
  readonly beforeRun?: (context: BeforeRunHookContext) => Promise<BeforeRunHookContext> | BeforeRunHookContext
  readonly afterRun?: (result: AgentRunResult) => Promise<AgentRunResult> | AgentRunResult
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
}

/** The original's `defineTool` signature (tool/framework.ts). */
export declare function defineTool<TInput>(config: {
  name: string
  description: string
  inputSchema: ZodSchema<TInput>
  outputSchema?: ZodSchema<string>
  llmInputSchema?: Record<string, unknown>
  maxOutputChars?: number
  execute: (input: TInput, context: ToolUseContext) => Promise<ToolResult>
}): ToolDefinition<TInput>
