// The MCP subpath from an ES module: mcp.d.mts gives the CommonJS entry's types.
import mcp, { connectMCPTools } from '@oma-kernel/core/mcp'
import type { ConnectedMCPTools } from '@oma-kernel/core/mcp'

export const same: typeof connectMCPTools = mcp.connectMCPTools
export const connected: ConnectedMCPTools = await connectMCPTools({ command: 'server' })
// @ts-expect-error a number is not a command
await connectMCPTools({ command: 1 })
