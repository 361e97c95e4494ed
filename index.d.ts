// Types of @oma-kernel/core: the shapes of open-multi-agent 1.7.0 (CONTRACT §0.2, §1), plus
// the additive fields this kernel reports (`aborted`, `timedOut`) and the `text_delta` events
// of `streamDeltas: true` (typed only where that option is passed, see `Agent.stream`).
//
// Zod types come from the `zod` the project resolves (a peer dependency, ^3.25 || ^4), as in
// the original: `ToolDefinition<T>` is `{ inputSchema: ZodSchema<T>, … }`. `defineTool` also
// accepts a schema of the other major version (e.g. `zod/v4` with zod 3.25 installed) and a
// plain JSON Schema object, which the kernel validates natively.
import type { ZodSchema } from 'zod'

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

/** The original's event union: an exhaustive `switch` over `StreamEvent['type']` stays exhaustive. */
export interface StreamEvent {
  readonly type: 'text' | 'reasoning' | 'tool_use' | 'tool_result' | 'loop_detected' | 'budget_exceeded' | 'done' | 'error'
  readonly data: unknown
}
/**
 * oma-kernel: token text as it arrives, yielded by `Agent.stream` / `AgentRunner.stream` only
 * when `streamDeltas: true` is passed (and the adapter is native), before the turn's `text` event.
 */
export interface TextDeltaEvent {
  readonly type: 'text_delta'
  readonly data: string
}
/** What `stream()` yields with `streamDeltas: true`: the original's events plus `text_delta`. */
export type StreamEventWithDeltas = StreamEvent | TextDeltaEvent

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
/**
 * A Zod schema of either major version (Zod 3.25+, Zod 4 classic or mini), read structurally:
 * each carries its output type in Standard Schema's `~standard.types`, and has the `safeParse`
 * the executor calls.
 */
export interface ZodSchemaLike<TOutput = unknown> {
  readonly '~standard': { readonly types?: { readonly output: TOutput } | undefined }
  safeParse(data: unknown, ...rest: any[]): unknown
}
/** The parsed (output) type of a Zod 3 or Zod 4 schema: what `execute` receives. */
export type InferSchemaOutput<TSchema> =
  TSchema extends { readonly _output: infer O } ? O
  : TSchema extends { readonly '~standard': { readonly types?: infer T } }
    ? NonNullable<T> extends { readonly output: infer O } ? O : unknown
    : unknown
/**
 * A plain JSON Schema object as a tool's `inputSchema` (oma-kernel: validated natively). Typed
 * loosely: an object literal or record, or a value of an interface type such as JSONSchema7;
 * anything with Zod's `safeParse` or Standard Schema's `~standard` is not one.
 */
export type JsonSchemaObject =
  | {
      readonly [key: string]: unknown
      readonly safeParse?: never
      readonly '~standard'?: never
    }
  | {
      readonly $schema?: unknown
      readonly $ref?: unknown
      readonly type?: unknown
      readonly title?: unknown
      readonly description?: unknown
      readonly properties?: unknown
      readonly required?: unknown
      readonly additionalProperties?: unknown
      readonly items?: unknown
      readonly enum?: unknown
      readonly const?: unknown
      readonly anyOf?: unknown
      readonly oneOf?: unknown
      readonly allOf?: unknown
      readonly default?: unknown
      readonly safeParse?: never
      readonly '~standard'?: never
    }
/** A tool's input schema: a Zod schema, or a plain JSON Schema object (validated natively). */
export type ToolInputSchema<T = Record<string, unknown>> = ZodSchemaLike<T> | JsonSchemaObject

export interface MemoryEntry {
  readonly key: string
  readonly value: string
  readonly metadata?: Readonly<Record<string, unknown>>
  readonly createdAt: Date
  readonly expiresAtTurn?: number
}
/** The team's key-value store (the kernel itself only calls `set`, from `delegate_to_agent`). */
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
  /** The run's id and task id, when the run has them (told to an `onToolCall` gate). */
  readonly runId?: string
  readonly taskId?: string
  /** Stable model-issued ID for this tool call (the `tool_use` block's id), set by the runner. */
  readonly toolCallId?: string
  /**
   * Where `bash` runs its commands (upstream 1.16). Runs set it from
   * {@link AgentConfig.shellExecutor} / {@link RunnerOptions.shellExecutor} (leased for the run);
   * without one, `bash` uses the host shell. Whoever calls `bashTool.execute()` with an executor
   * of their own owns its `start` / `dispose`.
   */
  readonly shellExecutor?: ShellExecutor
}

// ---- shell executor (upstream 1.16) ----------------------------------------------------------
/** One command's options, as `bash` hands them to {@link ShellExecutor.exec}. */
export interface ShellExecOptions {
  /** The bash input's `cwd`, to be read inside the executor's own environment. */
  readonly cwd?: string
  /** The executor must stop the command after this many milliseconds. */
  readonly timeoutMs: number
  /** When it aborts, the executor must stop the command. */
  readonly abortSignal?: AbortSignal
  /**
   * oma-kernel (additive): the filesystem sandbox root of the tool context running the command
   * (`AgentConfig.cwd`, by default `<process.cwd()>/.agent-workspace`); `null` when the context
   * disables the sandbox (`cwd: null`). Upstream's executors ignore it; a confining executor
   * confines the command to it. Absent when an executor is called directly.
   */
  readonly sandboxRoot?: string | null
}
/** What one command gave. */
export interface ShellExecResult {
  readonly stdout: string
  readonly stderr: string
  /** The command's exit code; by convention 124 after a timeout, 130 after an abort, 127 when it could not start. */
  readonly exitCode: number
}
/**
 * Runs the commands of the `bash` built-in (upstream 1.16): on the host, in a container, on a
 * remote sandbox. One instance is a reusable session: runs that use it call `start()` once
 * before their first command (shared by overlapping runs) and `dispose()` after the last of
 * them ends. `exec` may be called concurrently; an executor that cannot run two commands at
 * once must queue them itself.
 */
export interface ShellExecutor {
  /** Acquire what the session needs (a remote sandbox, a container). */
  start?(): Promise<void>
  /** Run one bash command to its end. */
  exec(command: string, options: ShellExecOptions): Promise<ShellExecResult>
  /** Release the session, stopping any command a timeout or abort left running. */
  dispose?(): Promise<void>
}
/**
 * The host's shell as a {@link ShellExecutor}: the `bash` built-in's own native spawn (the whole
 * process tree killed on timeout and abort, the environment allowlist, 10 MiB kept per stream).
 * Not a sandbox: commands run with the Node process's permissions.
 */
export declare class LocalShellExecutor implements ShellExecutor {
  exec(command: string, options: ShellExecOptions): Promise<ShellExecResult>
}
/** Resource limits of a {@link ConfinedShellExecutor}'s commands (each a positive integer; none by default). */
export interface ConfinedShellLimits {
  /** CPU seconds per process (RLIMIT_CPU): SIGXCPU, then SIGKILL a second later. */
  readonly cpuSeconds?: number
  /** Address space per process in bytes (RLIMIT_AS): allocations beyond it fail. */
  readonly addressSpaceBytes?: number
  /** Largest file a process may write, in bytes (RLIMIT_FSIZE): SIGXFSZ beyond it. */
  readonly fileSizeBytes?: number
  /** Open descriptors per process (RLIMIT_NOFILE). */
  readonly openFiles?: number
  /** Processes of the user (RLIMIT_NPROC); Linux does not apply it to root. */
  readonly processes?: number
}
export interface ConfinedShellExecutorOptions {
  /** `'deny'` (default): no socket but AF_UNIX, no TCP bind/connect. `'allow'` lifts both. */
  readonly network?: 'deny' | 'allow'
  /** Absolute paths the commands may also read (and execute from). */
  readonly readPaths?: readonly string[]
  /** Absolute paths the commands may also write. */
  readonly writePaths?: readonly string[]
  readonly limits?: ConfinedShellLimits
  /**
   * `true` (default): a host that cannot enforce every part of the policy fails each command
   * with an error naming what is missing. `false`: run with what the kernel enforces, warn once,
   * and say so in each result's `confinement`.
   */
  readonly required?: boolean
}
/** How a {@link ConfinedShellExecutor}'s command was confined. */
export interface ShellConfinement {
  /** Every part of the policy was enforced. */
  readonly enforced: boolean
  /** What the kernel could not enforce (only with `required: false`). */
  readonly missing: readonly string[]
  /** The Landlock ABI the rules were built for (0: none). */
  readonly landlockAbi: number
}
/** A {@link ShellExecResult} with the confinement it ran under (additive). */
export interface ConfinedShellExecResult extends ShellExecResult {
  readonly confinement: ShellConfinement
}
/** What the host offers the confined shell ({@link ConfinedShellExecutor.probe}). */
export interface ConfinedShellProbe {
  /** Node's `process.platform` spelling of the OS (`linux`, `macos`, …). */
  readonly platform: string
  /** The kernel's Landlock ABI (0: Landlock missing or disabled). */
  readonly landlockAbi: number
  /** The ABI the default `required: true` needs. */
  readonly requiredLandlockAbi: number
}
/**
 * bash confined on Linux, in-process (no container, no external binary): a command may write
 * only in the agent's filesystem sandbox root (the exec options' `sandboxRoot`, which `bash` sets
 * from the agent's `cwd`) and that root's private dir (`HOME`, `TMPDIR`), read only the system's read-only
 * locations, the root and `readPaths`, reach no network by default, and cannot signal, trace or
 * read the environment of processes outside its own tree (Landlock, seccomp, no_new_privs, no
 * capabilities, optional rlimits). It runs in the sandbox root; `cwd` may only name a directory
 * inside it. Rejects an exec without a sandbox root (`AgentConfig.cwd: null`), and on other
 * platforms. Options are checked at construction (TypeError / RangeError).
 */
export declare class ConfinedShellExecutor implements ShellExecutor {
  constructor(options?: ConfinedShellExecutorOptions)
  /** Creates the directory of the private dirs (one per sandbox root, made on its first command). */
  start(): Promise<void>
  exec(command: string, options: ShellExecOptions): Promise<ConfinedShellExecResult>
  /** Ends the commands still running and removes every private dir. A command's leftovers
   *  (background jobs, daemons) already ended with it. */
  dispose(): Promise<void>
  /** The host's Landlock ABI and platform, without starting anything. */
  static probe(): ConfinedShellProbe
}
/** What an `onToolCall` gate is told about a call: after input validation, before `execute`. */
export interface ToolCallContext {
  readonly toolName: string
  /** The validated input (what `execute` would get), as the gate's own deep copy: changing it
   *  (here or in code it is handed to) does not change what `execute` gets. */
  readonly input: Record<string, unknown>
  readonly agentName: string
  /** Present (and true) only for a tool declared `consequential`. */
  readonly consequential?: boolean
  readonly runId?: string
  readonly taskId?: string
  readonly toolCallId?: string
}
/**
 * A gate's verdict. `suspend` needs an orchestrated checkpointed task; this kernel runs single
 * agents, so a `suspend` ends the call with an error result (the tool does not run).
 */
export type ToolCallDecision =
  | { readonly action: 'allow' }
  | { readonly action: 'deny'; readonly reason?: string }
  | { readonly action: 'suspend'; readonly reason?: string }
/** Per-call tool gate: a deny (or a throw, or an invalid decision) gives an error ToolResult, never a throw. */
export type ToolCallGate = (context: ToolCallContext) => ToolCallDecision | Promise<ToolCallDecision>
export interface ToolCallGateMetadata {
  readonly action: ToolCallDecision['action']
  readonly reason?: string
}
export interface ToolResultMetadata {
  readonly tokenUsage?: TokenUsage
  /** Per-call gate decision, if an onToolCall hook evaluated this tool call. */
  readonly toolCallGate?: ToolCallGateMetadata
}
export interface ToolResult { readonly data: string; readonly isError?: boolean; readonly metadata?: ToolResultMetadata }

/**
 * A registered tool. With one type argument it is the original's `ToolDefinition<TInput>`
 * (`inputSchema: ZodSchema<TInput>`); `defineTool` fills `TSchema` with the schema's own type
 * (any Zod 3 / Zod 4 schema, or `JsonSchemaObject`).
 */
export interface ToolDefinition<TInput = Record<string, unknown>, TSchema = ZodSchema<TInput>> {
  readonly name: string
  readonly description: string
  readonly inputSchema: TSchema
  readonly outputSchema?: ZodSchema<string>
  readonly llmInputSchema?: Record<string, unknown>
  readonly maxOutputChars?: number
  /**
   * Marks a tool whose grant permits real side effects (told to an `onToolCall` gate). Never
   * inferred; set on the built-ins `bash`, `file_write` and `file_edit`.
   */
  readonly consequential?: boolean
  /**
   * oma-kernel: this tool's own timeout in milliseconds, over the `toolTimeoutMs` default (0 or
   * less: none, even when a default is set). When it passes before `execute` settles, the tool's
   * `abortSignal` aborts (reason: a `TimeoutError` DOMException) and the call resolves at once with
   * `{ data: 'Tool "<name>" timed out after <ms>ms.', isError: true }`. Covers `execute` only, not
   * an `onToolCall` gate's wait.
   */
  readonly timeoutMs?: number
  execute(input: TInput, context: ToolUseContext): Promise<ToolResult>
}
/** Any tool the registry accepts: Zod (either version) or JSON Schema input. */
export type AnyToolDefinition = ToolDefinition<any, any>

/** `defineTool`'s argument. */
export interface DefineToolConfig<TInput, TSchema> {
  name: string
  description: string
  inputSchema: TSchema
  outputSchema?: ZodSchemaLike<string>
  llmInputSchema?: Record<string, unknown>
  maxOutputChars?: number
  consequential?: boolean
  /** See {@link ToolDefinition.timeoutMs}. */
  timeoutMs?: number
  execute: (input: TInput, context: ToolUseContext) => Promise<ToolResult>
}

/** A Zod 3 or Zod 4 schema: `execute`'s input is the schema's parsed type. */
export declare function defineTool<TSchema extends ZodSchemaLike>(
  config: DefineToolConfig<InferSchemaOutput<TSchema>, TSchema>,
): ToolDefinition<InferSchemaOutput<TSchema>, TSchema>
/** The original's signature, for an explicit type argument: `defineTool<{ a: number }>({ … })`. */
export declare function defineTool<TInput>(config: DefineToolConfig<TInput, ZodSchema<TInput>>): ToolDefinition<TInput>
/** oma-kernel: a plain JSON Schema object, validated natively; `execute`'s input is loosely typed. */
export declare function defineTool<TInput = any>(
  config: DefineToolConfig<TInput, JsonSchemaObject>,
): ToolDefinition<TInput, JsonSchemaObject>

/**
 * Beyond the original (whose constructor takes no argument): `disallow` is a rail of tool names
 * that no agent using this registry is granted, whatever its `tools`, `toolPreset` or a runtime
 * registration say. `resolveTools` leaves them out with a warning, and `ToolExecutor.execute`
 * answers them with the not-granted text. Bad options throw a `TypeError`.
 */
export interface ToolRegistryOptions {
  readonly disallow?: readonly string[]
}

export declare class ToolRegistry {
  constructor(options?: ToolRegistryOptions)
  register(tool: AnyToolDefinition, options?: { runtimeAdded?: boolean }): void
  get(name: string): AnyToolDefinition | undefined
  list(): AnyToolDefinition[]
  getAll(): AnyToolDefinition[]
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
  /** Gate for every call through this executor (a per-execution one takes priority). */
  onToolCall?: ToolCallGate
  /**
   * oma-kernel: default timeout in milliseconds of every call through this executor (a
   * per-execution one and a tool's own {@link ToolDefinition.timeoutMs} take priority). Unset,
   * 0 or less: none.
   */
  toolTimeoutMs?: number
}
export interface ToolExecutorExecutionOptions {
  /** Per-execution gate override. Takes priority over the constructor option. */
  readonly onToolCall?: ToolCallGate
  /** oma-kernel: per-execution default tool timeout, over the constructor's (not over the tool's own). */
  readonly toolTimeoutMs?: number
}
export interface BatchToolCall { readonly id: string; readonly name: string; readonly input: Record<string, unknown> }

export declare class ToolExecutor {
  constructor(registry: ToolRegistry, options?: ToolExecutorOptions)
  execute(toolName: string, input: Record<string, unknown>, context: ToolUseContext, options?: ToolExecutorExecutionOptions): Promise<ToolResult>
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
/**
 * The options every model call carries, set on an agent (AgentConfig), on a runner (RunnerOptions)
 * and handed to the adapter with each call (LLMChatOptions): one list for the three. Not exported,
 * as upstream names no such type.
 */
interface ModelCallOptions {
  readonly maxTokens?: number
  readonly temperature?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly parallelToolCalls?: boolean
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
}
/**
 * What an agent's configuration hands its runner for each run: declared once for AgentConfig
 * and RunnerOptions. Not exported, as upstream names no such type.
 */
interface RunSettings extends ModelCallOptions {
  readonly model: string
  readonly systemPrompt?: string
  readonly maxTurns?: number
  readonly toolPreset?: 'readonly' | 'readwrite' | 'full'
  readonly disallowedTools?: readonly string[]
  readonly cwd?: string | null
  readonly maxTokenBudget?: number
  readonly contextStrategy?: ContextStrategy
  readonly loopDetection?: LoopDetectionConfig
  readonly compressToolResults?: boolean | { readonly minChars?: number }
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
}
export interface LLMChatOptions extends ModelCallOptions {
  readonly model: string
  readonly tools?: readonly LLMToolDef[]
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
  /** Required, as in the original; the runner never calls it (it calls `chat`). */
  stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncIterable<StreamEvent>
}

// ---- loop detection, structured output -------------------------------------------------
export interface LoopDetectionInfo { readonly kind: 'tool_repetition' | 'text_repetition'; readonly repetitions: number; readonly detail: string }
export interface LoopDetectionConfig {
  readonly maxRepetitions?: number
  readonly loopDetectionWindow?: number
  readonly onLoopDetected?: 'warn' | 'terminate' | ((info: LoopDetectionInfo) => 'continue' | 'inject' | 'terminate' | Promise<'continue' | 'inject' | 'terminate'>)
  /**
   * Beyond the original: how tool-call arguments are compared. `'exact'` (the default) is the
   * original's comparison; `'canonical'` also treats as equal string values that differ only in
   * surrounding or repeated whitespace, Unicode normalisation (NFC) or letter case, a numeric
   * string and the number it spells (`"1"` and `1`), and path-like strings that differ only by
   * a leading `./` or a trailing `/`. Any other value is a configuration error.
   */
  readonly match?: 'exact' | 'canonical'
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

/**
 * What `Agent.run()` and `Agent.stream()` take (upstream 1.15): a string is one user text message
 * (as in 1.7); a message list starts a fresh run with caller-owned conversation history. A list is
 * checked (an {@link InvalidMessageError} otherwise: `run()` rejects, `stream()` throws at the
 * call) and deep-copied, so changing it afterwards does not change the run.
 */
export type AgentRunInput = string | readonly LLMMessage[]
/**
 * What `Agent.prompt()` takes (upstream 1.15): a string, or content blocks (text, images, …)
 * appended to the conversation as exactly one new user message (checked and copied as a list is).
 */
export type AgentPromptInput = string | readonly ContentBlock[]
export interface BeforeRunHookContext {
  /** The text blocks of the latest user message, concatenated (`''` without one). */
  readonly prompt: string
  /**
   * A deep copy of the complete list of messages the run is about to send (upstream 1.15). Always
   * set by this kernel; optional in the type so that code typed against 1.7's context (which has
   * only `prompt` and `agent`) still compiles.
   */
  readonly messages?: readonly LLMMessage[]
  readonly agent: AgentConfig
}
/** What `beforeRun` returns (upstream 1.15). */
export interface BeforeRunHookResult {
  /**
   * When it differs from the context's prompt, it replaces the latest user message's text. Must be
   * a string once the run's messages are the caller's (a message-list or block input, or
   * `messages` returned here); else, as in 1.7, it is sent as is.
   */
  readonly prompt: string
  /** Replaces the whole message list (checked and copied as a `run()` input is). */
  readonly messages?: readonly LLMMessage[]
  /** Informational: changes to it are ignored. */
  readonly agent: AgentConfig
}

/**
 * Which origins the kernel's own LLM requests may go to (upstream 1.16):
 * - `'offline'`: loopback only (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`, by the URL's
 *   literal host; no DNS);
 * - `'allowlist'`: exactly the listed origins, e.g. `https://api.openai.com` or
 *   `http://127.0.0.1:11434` (no credentials, path, query or fragment; a port other than the
 *   default is part of the origin).
 * Every request of a native adapter (each retry and redirect hop; Bedrock, Gemini and Copilot's
 * token exchange included) is checked before it is sent, and no redirect is followed. It does not
 * cover tools, callbacks, a custom `adapter` (refused as `unsupported` under a policy) or anything
 * else the application runs.
 */
export type EgressPolicy =
  | { readonly mode: 'offline' }
  | { readonly mode: 'allowlist'; readonly allowedOrigins: readonly string[] }

export interface AgentConfig extends RunSettings {
  /**
   * Where this agent's `bash` runs its commands (upstream 1.16); the host shell when unset. It
   * grants nothing (`bash` must still be granted), and it is started lazily, on the first
   * command of a run, after the grant check and the `onToolCall` gate.
   */
  readonly shellExecutor?: ShellExecutor
  /**
   * Framework-owned LLM egress restriction (upstream 1.16): checked when the Agent is constructed
   * (an invalid policy throws an {@link EgressPolicyError}) and kept as a frozen normalised copy;
   * a refused run is a failed result whose output is the error's message.
   */
  readonly egressPolicy?: EgressPolicy
  /**
   * Called after a tool's input validates and before it executes; a deny gives an error
   * ToolResult without throwing. Not {@link RunOptions.onToolCall} (a notification).
   */
  readonly onToolCall?: ToolCallGate
  readonly name: string
  readonly adapter?: LLMAdapter
  readonly provider?: SupportedProvider
  readonly baseURL?: string
  readonly apiKey?: string
  readonly region?: string
  readonly customTools?: readonly ToolDefinition<any>[]
  readonly tools?: readonly string[]
  readonly timeoutMs?: number
  /**
   * Maximum wall-clock time in milliseconds for a single LLM call, re-armed fresh for every model
   * call (each turn and the `summarize` strategy's call). When it passes first, the run fails with
   * an {@link LLMCallTimeoutError}. Unset or `<= 0`: no per-call deadline. oma-kernel: a JS adapter
   * that ignores its signal is not waited for, and a native adapter's request is cancelled.
   */
  readonly callTimeoutMs?: number
  /**
   * oma-kernel: default timeout in milliseconds for each tool call of this agent's runs (a tool's
   * own {@link ToolDefinition.timeoutMs} wins). A timed-out call ends with an error result the
   * model sees, and the run goes on. Unset, 0 or less: none.
   */
  readonly toolTimeoutMs?: number
  readonly maxToolOutputChars?: number
  readonly outputSchema?: ZodSchema
  /**
   * Beyond the original: how many times a structured output that fails validation is retried
   * (an integer from 0 to 5; 0: none). Each retry sends the original's feedback text with the
   * latest errors. Set, every attempt's tokens count toward `maxTokenBudget`, and no retry starts
   * after an attempt that exceeded the budget or was aborted or timed out. Unset: the original's
   * single retry, unchanged. Any other value is a configuration error from the constructor.
   */
  readonly outputSchemaRetries?: number
  /**
   * oma-kernel: awaited under the caller's `abortSignal` (the `timeoutMs` window starts after it,
   * as upstream's): once it aborted, a hook that has not settled within 100 ms is left behind and
   * the run fails with `The run was aborted while beforeRun had not settled`.
   */
  readonly beforeRun?: (context: BeforeRunHookContext) => BeforeRunHookResult | Promise<BeforeRunHookResult>
  /**
   * oma-kernel: awaited under the run's signal (the caller's and `timeoutMs`): once it aborted, a
   * hook that has not settled within 100 ms is left behind and the run fails with
   * `The run was aborted while afterRun had not settled`.
   */
  readonly afterRun?: (result: AgentRunResult) => AgentRunResult | Promise<AgentRunResult>
  /**
   * The conversation `prompt()` continues (upstream 1.15): checked (an {@link InvalidMessageError}
   * from the constructor otherwise) and deep-copied when the Agent is constructed. `reset()` empties
   * the history as before; `getHistory()` stays 1.7's shallow copy.
   */
  readonly history?: readonly LLMMessage[]
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
export interface ToolCallTrace extends TraceEventBase {
  readonly type: 'tool_call'
  readonly tool: string
  readonly isError: boolean
  readonly input: Record<string, unknown>
  readonly output: string
  /** True when an onToolCall gate evaluated this tool invocation. */
  readonly gated?: boolean
  readonly gateAction?: ToolCallDecision['action']
  /** Optional denial/debug reason supplied by the gate (redacted). */
  readonly gateReason?: string
}
export interface AgentTrace extends TraceEventBase { readonly type: 'agent'; readonly turns: number; readonly tokens: TokenUsage; readonly toolCalls: number }
export interface TaskTrace extends TraceEventBase { readonly type: 'task'; readonly [k: string]: unknown }
export interface PlanReadyTrace extends TraceEventBase { readonly type: 'plan_ready'; readonly [k: string]: unknown }
export interface AgentStreamTrace extends TraceEventBase { readonly type: 'agent_stream'; readonly [k: string]: unknown }
export interface ConsensusTrace extends TraceEventBase { readonly type: 'consensus'; readonly [k: string]: unknown }
export type TraceEvent = LLMCallTrace | ToolCallTrace | TaskTrace | AgentTrace | PlanReadyTrace | AgentStreamTrace | ConsensusTrace

// ---- runner ----------------------------------------------------------------------------------
export interface RunnerOptions extends RunSettings {
  /** The run's shell executor: see {@link AgentConfig.shellExecutor}. */
  readonly shellExecutor?: ShellExecutor
  /** Optional per-call tool gate inherited from agent config (passed per execution). */
  readonly onToolCall?: ToolCallGate
  readonly abortSignal?: AbortSignal
  readonly allowedTools?: readonly string[]
  readonly agentName?: string
  readonly agentRole?: string
  /** Per single `adapter.chat()` call: see {@link AgentConfig.callTimeoutMs}. */
  readonly callTimeoutMs?: number
  /** Default per-tool-call timeout, passed per execution: see {@link AgentConfig.toolTimeoutMs}. */
  readonly toolTimeoutMs?: number
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
  /** With `streamDeltas: true`, `text_delta` events too. */
  stream(initialMessages: LLMMessage[], options: RunOptions & { readonly streamDeltas: true }): AsyncGenerator<StreamEventWithDeltas>
  /** The original's event sequence. */
  stream(initialMessages: LLMMessage[], options?: RunOptions & { readonly streamDeltas?: false }): AsyncGenerator<StreamEvent>
  stream(initialMessages: LLMMessage[], options?: RunOptions): AsyncGenerator<StreamEventWithDeltas>
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
  run(input: AgentRunInput, runOptions?: Partial<RunOptions>): Promise<AgentRunResult>
  prompt(input: AgentPromptInput): Promise<AgentRunResult>
  /** With `streamDeltas: true`, `text_delta` events too (native adapters). */
  stream(input: AgentRunInput, runOptions: Partial<RunOptions> & { readonly streamDeltas: true }): AsyncGenerator<StreamEventWithDeltas>
  /** The original's event sequence. */
  stream(input: AgentRunInput, runOptions?: Partial<RunOptions> & { readonly streamDeltas?: false }): AsyncGenerator<StreamEvent>
  stream(input: AgentRunInput, runOptions?: Partial<RunOptions>): AsyncGenerator<StreamEventWithDeltas>
  getState(): AgentState
  getHistory(): LLMMessage[]
  reset(): void
  addTool(tool: AnyToolDefinition): void
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
/** A single LLM call exceeded `callTimeoutMs` (and the caller's own signal had not fired). */
export declare class LLMCallTimeoutError extends Error {
  constructor(timeoutMs: number, agent?: string)
  readonly code: 'LLM_CALL_TIMEOUT'
  /** The per-call deadline, in milliseconds, that was exceeded. */
  readonly timeoutMs: number
  /** Name of the agent whose call timed out, when known. */
  readonly agent?: string
}
export type EgressPolicyErrorReason = 'invalid-policy' | 'denied' | 'unsupported' | 'unresolved-target'
/**
 * A kernel-owned LLM request refused by an {@link EgressPolicy}, or a policy that is invalid or
 * cannot be enforced (upstream 1.16). `code`: `INVALID_EGRESS_POLICY`, `EGRESS_POLICY_DENIED`,
 * `EGRESS_POLICY_UNSUPPORTED`, `EGRESS_POLICY_TARGET_UNRESOLVED`. Never retryable.
 */
export declare class EgressPolicyError extends Error {
  constructor(reason: EgressPolicyErrorReason, message: string, provider?: string, origin?: string)
  readonly code: string
  readonly reason: EgressPolicyErrorReason
  readonly provider?: string
  readonly origin?: string
}
/**
 * Whether another attempt might succeed: true unless the error is provably terminal (an exhausted
 * token budget, an invalid message, an egress policy error, a cancellation, a 4xx status other
 * than 408/409/429).
 */
export declare function isRetryableError(error: unknown): boolean
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
