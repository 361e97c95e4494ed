// The MCP bridge's subpath (@oma-kernel/core/mcp): the original's names and shapes, and its
// tools usable wherever a ToolDefinition goes.
import { connectMCPTools } from '@oma-kernel/core/mcp'
import type { ConnectMCPToolsConfig, ConnectedMCPTools } from '@oma-kernel/core/mcp'
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
}
