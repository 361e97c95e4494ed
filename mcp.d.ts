// Types of @oma-kernel/core/mcp (the MCP bridge), as @open-multi-agent/core/mcp declares them.
import type { EgressPolicy, ToolDefinition } from './index.js'

export interface ConnectMCPToolsConfig {
  /** The server's executable (stdio transport). */
  command: string
  /** Default `[]`. */
  args?: string[]
  /**
   * Set over the default environment (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER` from
   * `process.env`, as the MCP SDK's stdio transport); an `undefined` value removes a variable.
   */
  env?: Record<string, string | undefined>
  cwd?: string
  /**
   * Optional segment prepended to MCP tool names for the framework tool (and LLM) name.
   * Example: prefix `github` + MCP tool `search_issues` → `github_search_issues`.
   */
  namePrefix?: string
  /** Timeout (ms) for `initialize`, the whole `tools/list` listing (all pages) and each call. Defaults to 60000. */
  requestTimeoutMs?: number
  /** Client metadata sent to the MCP server (defaults `open-multi-agent`, `0.0.0`). */
  clientName?: string
  clientVersion?: string
}

/**
 * oma-kernel: a server over Streamable HTTP (the original speaks stdio only). Same session
 * settings as {@link ConnectMCPToolsConfig}.
 */
export interface ConnectMCPToolsHttpConfig {
  /** The server's MCP endpoint (`http:` or `https:`). */
  url: string
  /** Sent with every request (not to another origin: a redirect there is refused). */
  headers?: Record<string, string>
  /**
   * A bearer token (`Authorization: Bearer …`), or a function asked for a fresh one before
   * connect and before each tool call.
   */
  authToken?: string | (() => string | Promise<string>)
  /**
   * Upstream 1.16's egress policy, as for the LLM adapters: the URL is checked before connecting
   * (a refusal rejects with `EgressPolicyError`) and every request natively before it is sent;
   * under a policy no redirect is followed.
   */
  egressPolicy?: EgressPolicy
  namePrefix?: string
  requestTimeoutMs?: number
  clientName?: string
  clientVersion?: string
}

export interface ConnectedMCPTools {
  /**
   * One tool per server tool. `inputSchema` is the server's JSON Schema (input is validated
   * natively against it); `llmInputSchema` the same object.
   */
  tools: ToolDefinition<Record<string, unknown>, any>[]
  /** Ends the server and its process tree (on Linux including descendants that left its group). */
  disconnect: () => Promise<void>
}

/**
 * Connects to an MCP server over stdio (`command`) or Streamable HTTP (`url`) and converts its
 * tools into ToolDefinitions (register them, e.g. with `agent.addTool`, as runtime tools).
 */
export declare function connectMCPTools(config: ConnectMCPToolsConfig | ConnectMCPToolsHttpConfig): Promise<ConnectedMCPTools>
