// The addon keeps per-thread state (run and semaphore slabs): agents must work in worker
// threads alongside the main thread.
import { Worker } from 'worker_threads'
import * as path from 'path'
import * as fs from 'fs'
import { Agent, ToolRegistry, ToolExecutor, defineTool } from '../index'

const script = `
const { parentPort, workerData } = require('worker_threads')
const { Agent, ToolRegistry, ToolExecutor, defineTool } = require(workerData.entry)
const registry = new ToolRegistry()
registry.register(defineTool({ name: 'inc', description: 'd', inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }, execute: async ({ n }) => ({ data: String(n + 1) }) }))
let turn = 0
const adapter = { name: 'm', async chat() {
  turn++
  if (turn <= 3) return { id: 'r', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'tool_use', id: 'c' + turn, name: 'inc', input: { n: turn } }] }
  return { id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text: 'worker done' }] }
} }
new Agent({ name: 'w', model: 'm', adapter, tools: ['inc'] }, registry, new ToolExecutor(registry)).run('go')
  .then((r) => parentPort.postMessage({ output: r.output, results: r.toolCalls.map((c) => c.output) }))
`

test('agents run in worker threads and the main thread at the same time', async () => {
  const entry = path.resolve(__dirname, '..', 'index.js')
  const workers = [0, 1].map(() => new Worker(script, { eval: true, workerData: { entry } }))
  const fromWorkers = Promise.all(workers.map((w) => new Promise<any>((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })))

  const registry = new ToolRegistry()
  registry.register(defineTool({ name: 'inc', description: 'd', inputSchema: { type: 'object' }, execute: async () => ({ data: 'main' }) }))
  let turn = 0
  const adapter = { name: 'm', chat: async () => (++turn === 1
    ? { id: 'r', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'tool_use' as const, id: 'x', name: 'inc', input: {} }] }
    : { id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text' as const, text: 'main done' }] }), async *stream() {} }
  const main = await new Agent({ name: 'm', model: 'm', adapter, tools: ['inc'] }, registry, new ToolExecutor(registry)).run('go')

  expect(main.output).toBe('main done')
  expect(await fromWorkers).toEqual([
    { output: 'worker done', results: ['2', '3', '4'] },
    { output: 'worker done', results: ['2', '3', '4'] },
  ])
  await Promise.all(workers.map((w) => w.terminate()))
})

// The MCP bridge's connections are tasks on the addon's runtime: one per worker must come and
// go with its thread (sequential workers, and one terminated while connected).
const mcpScript = `
const { parentPort, workerData } = require('worker_threads')
const { connectMCPTools } = require(workerData.entry)
;(async () => {
  const c = await connectMCPTools({ command: process.execPath, args: [workerData.server, 'stdio'] })
  const echo = c.tools.find((t) => t.name === 'echo')
  const r = await echo.execute({ message: 'from worker ' + workerData.n }, { agent: { name: 'a', role: 'r', model: 'm' } })
  parentPort.postMessage(r)
  if (!workerData.hold) await c.disconnect()
})()
`

test('MCP connections in worker threads: sequential workers, and a worker terminated while connected', async () => {
  const entry = path.resolve(__dirname, '..', 'mcp.js')
  const server = path.resolve(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
  const once = (n: number, hold: boolean) => {
    const w = new Worker(mcpScript, { eval: true, workerData: { entry, server, n, hold } })
    const message = new Promise<any>((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
    return { w, message }
  }
  for (const n of [1, 2]) {
    const { w, message } = once(n, false)
    expect(await message).toEqual({ data: `Echo: from worker ${n}`, isError: false })
    expect(await new Promise((r) => w.once('exit', r))).toBe(0)
  }
  // Held open (no disconnect): the server is ended with the worker, not left running. Only this
  // process's children count (other suites may run the same server at the same time).
  const servers = () => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const ppid = Number(fs.readFileSync(`/proc/${d}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1])
      return ppid === process.pid && fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(server)
    } catch { return false }
  }).length
  const { w, message } = once(3, true)
  expect(await message).toEqual({ data: 'Echo: from worker 3', isError: false })
  await w.terminate()
  for (let i = 0; i < 100 && servers() > 0; i++) await new Promise((r) => setTimeout(r, 50))
  expect(servers()).toBe(0)
}, 60_000)
