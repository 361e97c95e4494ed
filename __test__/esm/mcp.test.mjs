// @oma-kernel/core/mcp as native ESM: resolved by the package's own name through the `exports`
// map's `./mcp` entry (mcp.mjs), the same function as the CommonJS entry's, and working.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import * as path from 'node:path'
import mcp, { connectMCPTools } from '@oma-kernel/core/mcp'
import * as ns from '@oma-kernel/core/mcp'
import { ToolRegistry, ToolExecutor } from '@oma-kernel/core'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))

test('named, namespace and default imports are the CommonJS entry', () => {
  const cjs = require('@oma-kernel/core/mcp')
  assert.equal(connectMCPTools, cjs.connectMCPTools)
  assert.equal(mcp, cjs)
  assert.deepEqual(Object.keys(ns).sort(), ['connectMCPTools', 'default'])
})

test('connects over stdio and its tools run through the registry and executor', async () => {
  const server = path.join(here, '..', 'fixtures', 'mcp', 'server.mjs')
  const { tools, disconnect } = await connectMCPTools({ command: process.execPath, args: [server], namePrefix: 'esm' })
  try {
    const registry = new ToolRegistry()
    for (const t of tools) registry.register(t, { runtimeAdded: true })
    const r = await new ToolExecutor(registry).execute('esm_ns_echo', { text: 'from esm' }, { agent: { name: 'a', role: 'r', model: 'm' } })
    assert.deepEqual(r, { data: 'echo:from esm', isError: false })
  } finally {
    await disconnect()
  }
})
