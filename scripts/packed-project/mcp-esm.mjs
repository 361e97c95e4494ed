// ESM: import { connectMCPTools } from '@oma-kernel/core/mcp' (the `import` condition, mcp.mjs).
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import * as path from 'node:path'
import mcp, { connectMCPTools } from '@oma-kernel/core/mcp'

const require = createRequire(import.meta.url)
assert.equal(connectMCPTools, require('@oma-kernel/core/mcp').connectMCPTools)
assert.equal(mcp.connectMCPTools, connectMCPTools)
const server = path.join(path.dirname(fileURLToPath(import.meta.url)), 'mcp-server.cjs')
const { tools, disconnect } = await connectMCPTools({ command: process.execPath, args: [server], namePrefix: 'p' })
assert.deepEqual(await tools[0].execute({ text: 'esm' }, {}), { data: 'echo:esm', isError: false })
await disconnect()
console.log(`mcp esm: ok (node ${process.version})`)
