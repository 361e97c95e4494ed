// Types of the installed MCP subpath (mcp.d.mts through the `import` condition).
import { connectMCPTools } from '@oma-kernel/core/mcp'
import type { ConnectMCPToolsConfig, ConnectedMCPTools } from '@oma-kernel/core/mcp'
import type { ToolDefinition } from '@oma-kernel/core'

const config: ConnectMCPToolsConfig = { command: 'node', args: ['mcp-server.cjs'], namePrefix: 'p' }
export async function tools(): Promise<ToolDefinition[]> {
  const connected: ConnectedMCPTools = await connectMCPTools(config)
  await connected.disconnect()
  return connected.tools
}
