// Types of lib/builtin.js: the built-in tools, path safety, the walker and redaction.
// ToolDefinition / ToolUseContext / ToolResult are declared minimally here (CONTRACT §1.4);
// the package entry's fuller types are structurally compatible.

export interface BuiltinTokenUsage {
  input_tokens: number
  output_tokens: number
}

export interface BuiltinToolResult {
  data: string
  isError?: boolean
  metadata?: { tokenUsage?: BuiltinTokenUsage }
}

export interface BuiltinAgentInfo {
  name: string
  role: string
  model: string
}

export interface BuiltinTeamInfo {
  name: string
  agents: readonly string[]
  sharedMemory?: { set(key: string, value: string, metadata?: Record<string, unknown>): Promise<void> }
  delegationDepth?: number
  maxDelegationDepth?: number
  delegationPool?: { availableRunSlots: number }
  delegationChain?: readonly string[]
  runDelegatedAgent?: (targetAgent: string, prompt: string) => Promise<{ success: boolean; output: string; tokenUsage: BuiltinTokenUsage }>
}

export interface BuiltinToolUseContext {
  agent: BuiltinAgentInfo
  team?: BuiltinTeamInfo
  abortSignal?: AbortSignal
  abortController?: AbortController
  /** string: sandbox root; null: sandbox disabled; undefined: defaultWorkspaceDir(). */
  cwd?: string | null
  metadata?: Readonly<Record<string, unknown>>
}

export interface BuiltinJsonSchemaProperty {
  type: 'string' | 'number' | 'boolean'
  description: string
}

export interface BuiltinInputSchema {
  type: 'object'
  properties: Record<string, BuiltinJsonSchemaProperty>
  required?: string[]
}

export interface BuiltinToolDefinition<TInput = Record<string, unknown>> {
  name: string
  description: string
  /** The plain JSON Schema shown to the LLM (§11.2). */
  inputSchema: BuiltinInputSchema
  execute(input: TInput, context: BuiltinToolUseContext): Promise<BuiltinToolResult>
}

export declare const bashTool: BuiltinToolDefinition<{ command: string; timeout?: number; cwd?: string }>
export declare const fileReadTool: BuiltinToolDefinition<{ path: string; offset?: number; limit?: number }>
export declare const fileWriteTool: BuiltinToolDefinition<{ path: string; content: string }>
export declare const fileEditTool: BuiltinToolDefinition<{ path: string; old_string: string; new_string: string; replace_all?: boolean }>
export declare const grepTool: BuiltinToolDefinition<{ pattern: string; path?: string; glob?: string; maxResults?: number }>
export declare const globTool: BuiltinToolDefinition<{ path?: string; pattern?: string; maxFiles?: number }>
export declare const delegateToAgentTool: BuiltinToolDefinition<{ target_agent: string; prompt: string }>

export declare const BUILT_IN_TOOLS: BuiltinToolDefinition<any>[]
export declare const ALL_BUILT_IN_TOOLS_WITH_DELEGATE: BuiltinToolDefinition<any>[]

export interface RegisterBuiltInToolsOptions {
  includeDelegateTool?: boolean
}
export declare function registerBuiltInTools(
  registry: { register(tool: BuiltinToolDefinition<any>): void },
  options?: RegisterBuiltInToolsOptions,
): void

export type SafePathResult = { ok: true; path: string; root: string } | { ok: false; error: string }
export declare const DEFAULT_WORKSPACE_DIRNAME: '.agent-workspace'
export declare function defaultWorkspaceDir(): string
export declare function resolvePathWithinCwd(
  inputPath: string,
  context: { cwd?: string | null },
  options?: { ensureRoot?: boolean },
): Promise<SafePathResult>

export declare const SKIP_DIRS: Set<string>
export declare function collectFiles(
  dir: string,
  glob: string | undefined,
  signal?: AbortSignal,
  options?: { maxFiles?: number },
): Promise<string[]>
export declare function matchesGlob(filename: string, glob: string): boolean

export declare function isSensitiveName(name: string): boolean
export declare function redactSensitiveText(text: string): string
export declare function redactSensitiveObject<T>(value: T): T
