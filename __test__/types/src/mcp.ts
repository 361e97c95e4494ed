// The MCP bridge's subpath (@oma-kernel/core/mcp): the original's names and shapes, and its
// tools usable wherever a ToolDefinition goes.
import { connectMCPTools } from '@oma-kernel/core/mcp'
import type { ConnectMCPToolsConfig, ConnectMCPToolsHttpConfig, ConnectedMCPTools } from '@oma-kernel/core/mcp'
import { Agent, ToolExecutor, ToolRegistry } from '@oma-kernel/core'
import type { ToolDefinition } from '@oma-kernel/core'

export async function main(): Promise<void> {
  const config: ConnectMCPToolsConfig = {
    command: 'npx',
    args: ['-y', '@modelcontextprotocol/server-filesystem', '.'],
    env: { DEBUG: undefined, TOKEN: 'x' },
    cwd: '/tmp',
    namePrefix: 'fs',
    requestTimeoutMs: 5000,
    clientName: 'app',
    clientVersion: '1.0.0',
  }
  // @ts-expect-error command is required
  const noCommand: ConnectMCPToolsConfig = { args: [] }
  // @ts-expect-error env values are strings
  const badEnv: ConnectMCPToolsConfig = { command: 'x', env: { A: 1 } }
  console.log(noCommand, badEnv)

  const connected: ConnectedMCPTools = await connectMCPTools(config)
  // The original's type: ToolDefinition[].
  const asOriginal: ToolDefinition[] = connected.tools
  const registry = new ToolRegistry()
  const agent = new Agent({ name: 'a', model: 'm' }, registry, new ToolExecutor(registry))
  for (const tool of connected.tools) agent.addTool(tool)
  registry.register(connected.tools[0], { runtimeAdded: true })
  const done: Promise<void> = connected.disconnect()
  await done
  console.log(asOriginal.length)
  // @ts-expect-error connectMCPTools takes a config
  await connectMCPTools()

  // oma-kernel: Streamable HTTP.
  const remote: ConnectMCPToolsHttpConfig = {
    url: 'https://mcp.example.com/mcp',
    headers: { 'X-Api-Key': 'k' },
    authToken: async () => 'fresh-token',
    namePrefix: 'remote',
    requestTimeoutMs: 10_000,
  }
  const fixedToken: ConnectMCPToolsHttpConfig = { url: 'http://127.0.0.1:3000/mcp', authToken: 'token' }
  const fenced: ConnectMCPToolsHttpConfig = { url: 'https://mcp.example.com/mcp', egressPolicy: { mode: 'allowlist', allowedOrigins: ['https://mcp.example.com'] } }
  // @ts-expect-error an egress policy's mode is 'offline' or 'allowlist'
  const badPolicy: ConnectMCPToolsHttpConfig = { url: 'http://h/mcp', egressPolicy: { mode: 'open' } }
  console.log(fenced, badPolicy)
  // @ts-expect-error a token function returns a string
  const badToken: ConnectMCPToolsHttpConfig = { url: 'http://h/mcp', authToken: () => 1 }
  // @ts-expect-error header values are strings
  const badHeaders: ConnectMCPToolsHttpConfig = { url: 'http://h/mcp', headers: { A: 1 } }
  console.log(badToken, badHeaders)
  const overHttp: ConnectedMCPTools = await connectMCPTools(remote)
  await connectMCPTools(fixedToken)
  await overHttp.disconnect()
}
