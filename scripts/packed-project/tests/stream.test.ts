// stream(): the original's event sequence, and an abort signal that ends a run.
import { z } from 'zod'
import { Agent, ToolExecutor, ToolRegistry, defineTool, type StreamEvent } from '@oma-kernel/core'
import { resp, scripted } from './mock'

test('stream yields tool_use, tool_result, text, done in order', async () => {
  const registry = new ToolRegistry()
  registry.register(defineTool({ name: 'echo', description: 'echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => ({ data: `echo:${text}` }) }))
  const adapter = scripted([
    resp([{ type: 'tool_use', id: 't', name: 'echo', input: { text: 'hi' } }], 'tool_use'),
    resp([{ type: 'text', text: 'bye' }]),
  ])
  const agent = new Agent({ name: 's', model: 'm', adapter, tools: ['echo'] }, registry, new ToolExecutor(registry))
  const events: StreamEvent[] = []
  for await (const ev of agent.stream('go')) events.push(ev)
  expect(events.map((e) => e.type)).toEqual(['tool_use', 'tool_result', 'text', 'done'])
  expect(events[2].data).toBe('bye')
})

test('an abort signal stops a run waiting on a slow tool', async () => {
  const registry = new ToolRegistry()
  registry.register(defineTool({
    name: 'slow',
    description: 'waits',
    inputSchema: z.object({}),
    execute: () => new Promise((resolve) => setTimeout(() => resolve({ data: 'late' }), 2000)),
  }))
  const adapter = scripted([resp([{ type: 'tool_use', id: 't', name: 'slow', input: {} }], 'tool_use'), resp([{ type: 'text', text: 'x' }])])
  const agent = new Agent({ name: 'a', model: 'm', adapter, tools: ['slow'] }, registry, new ToolExecutor(registry))
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 50)
  const t0 = Date.now()
  const r = await agent.run('go', { abortSignal: controller.signal })
  expect(Date.now() - t0).toBeLessThan(1500)
  expect(r.aborted).toBe(true)
  expect(r.toolCalls[0].output).toBe('Tool "slow" was aborted during execution.')
})
