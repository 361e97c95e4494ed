// The addon keeps per-thread state (run and semaphore slabs): agents must work in worker
// threads alongside the main thread.
import { Worker } from 'worker_threads'
import * as path from 'path'
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
