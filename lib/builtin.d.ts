// Types of lib/builtin.js: the built-in tools, path safety, the walker and redaction. The tools
// are the original's `ToolDefinition<TInput>` objects: `inputSchema` is a Zod schema (built on
// first access from the project's `zod`, a peer dependency), `execute` takes the tool's input.

import type { ToolDefinition, ToolUseContext, ToolResult, TokenUsage, AgentInfo, TeamInfo } from '../index'

/** @deprecated The package entry's `ToolUseContext`; kept as an alias. */
export type BuiltinToolUseContext = ToolUseContext
/** @deprecated The package entry's `ToolResult`; kept as an alias. */
export type BuiltinToolResult = ToolResult
/** @deprecated The package entry's `TokenUsage`; kept as an alias. */
export type BuiltinTokenUsage = TokenUsage
/** @deprecated The package entry's `AgentInfo`; kept as an alias. */
export type BuiltinAgentInfo = AgentInfo
/** @deprecated The package entry's `TeamInfo`; kept as an alias. */
export type BuiltinTeamInfo = TeamInfo
/** @deprecated The package entry's `ToolDefinition`; kept as an alias. */
export type BuiltinToolDefinition<TInput = Record<string, unknown>> = ToolDefinition<TInput>

export declare const bashTool: ToolDefinition<{ command: string; timeout?: number; cwd?: string }>
export declare const fileReadTool: ToolDefinition<{ path: string; offset?: number; limit?: number }>
export declare const fileWriteTool: ToolDefinition<{ path: string; content: string }>
export declare const fileEditTool: ToolDefinition<{ path: string; old_string: string; new_string: string; replace_all?: boolean }>
export declare const grepTool: ToolDefinition<{ pattern: string; path?: string; glob?: string; maxResults?: number }>
export declare const globTool: ToolDefinition<{ path?: string; pattern?: string; maxFiles?: number }>
export declare const delegateToAgentTool: ToolDefinition<{ target_agent: string; prompt: string }>

export declare const BUILT_IN_TOOLS: ToolDefinition<any>[]
export declare const ALL_BUILT_IN_TOOLS_WITH_DELEGATE: ToolDefinition<any>[]

export interface RegisterBuiltInToolsOptions {
  readonly includeDelegateTool?: boolean
}
export declare function registerBuiltInTools(
  registry: { register(tool: ToolDefinition<any, any>): void },
  options?: RegisterBuiltInToolsOptions,
): void

export type SafePathResult = { ok: true; path: string; root: string } | { ok: false; error: string }
export declare const DEFAULT_WORKSPACE_DIRNAME: '.agent-workspace'
export declare function defaultWorkspaceDir(): string
export declare function resolvePathWithinCwd(
  inputPath: string,
  context: { readonly cwd?: string | null },
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

// The host shell's ShellExecutor, declared with the package entry's other shell types.
export { LocalShellExecutor } from '../index'

// For lib/confined-shell.js, not the package entry (typed here because a require of
// './builtin.js' resolves to this file).
/** The allowlisted host variables as `[name, value]` pairs. */
export declare function hostEnv(): string[][]
/** A timer delay as Node's setTimeout reads it: anything outside 1..2^31-1 (NaN included) is 1 ms. */
export declare function timerDelay(ms: unknown): number
