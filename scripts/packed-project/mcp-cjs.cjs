'use strict'
// CommonJS: require('@oma-kernel/core/mcp') from the installed package; connect, call, disconnect.
const assert = require('assert')
const path = require('path')
const { connectMCPTools } = require('@oma-kernel/core/mcp')

async function main() {
  const { tools, disconnect } = await connectMCPTools({ command: process.execPath, args: [path.join(__dirname, 'mcp-server.cjs')] })
  assert.deepStrictEqual(tools.map((t) => [t.name, t.description]), [['packed_echo', 'MCP tool: packed/echo']])
  assert.deepStrictEqual(await tools[0].execute({ text: 'cjs' }, {}), { data: 'echo:cjs', isError: false })
  await disconnect()
  console.log(`mcp cjs: ok (node ${process.version})`)
}
main().catch((err) => {
  console.error(err)
  process.exit(1)
})
