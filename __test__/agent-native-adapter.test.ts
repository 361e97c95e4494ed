// Agent runs on a native adapter take the kernel's native path (the request body is built from
// the machine's own history); `streamDeltas` adds text_delta events. A real HTTP server on
// 127.0.0.1 plays the model.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, defineTool, createAdapter, StreamEventWithDeltas } from '../index'
import { eachServer, isolateEnv, sseData } from './llm-server'

const completion = (message: Record<string, unknown>) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-test',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
})
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'gpt-test', choices: [{ index: 0, delta, finish_reason: finish }],
})

isolateEnv(['OPENAI_BASE_URL'])
const server = eachServer()

function weatherAgent(extra: Record<string, unknown> = {}) {
  const registry = new ToolRegistry()
  const seen: string[] = []
  registry.register(defineTool({
    name: 'weather', description: 'Weather lookup', inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }: { city: string }) => { seen.push(city); return { data: `${city}: 18°C` } },
  }))
  const agent = new Agent({ name: 'w', model: 'gpt-test', provider: 'openai', apiKey: 'k', baseURL: `${server.url}/v1`, tools: ['weather'], ...extra }, registry, new ToolExecutor(registry))
  return { agent, seen }
}

test('provider + baseURL: a tool loop where the kernel builds each request from its own history', async () => {
  server.replies.push(
    { json: completion({ content: null, tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'weather', arguments: '{"city":"Bern"}' } }] }) },
    { json: completion({ content: 'Bern: 18°C' }) },
  )
  const { agent, seen } = weatherAgent({ systemPrompt: 'Be brief.' })
  const r = await agent.run('Weather in Bern?')
  expect(r.success).toBe(true)
  expect(r.output).toBe('Bern: 18°C')
  expect(seen).toEqual(['Bern'])
  expect(r.tokenUsage).toEqual({ input_tokens: 22, output_tokens: 14 })
  expect(server.requests).toHaveLength(2)
  expect(server.requests[1].body.messages).toEqual([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Weather in Bern?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'weather', arguments: '{"city":"Bern"}' } }] },
    { role: 'tool', tool_call_id: 'call_x', content: 'Bern: 18°C' },
  ])
  expect(server.requests[0].body.tools[0].function.name).toBe('weather')
  expect(r.messages[0].content).toEqual([{ type: 'tool_use', id: 'call_x', name: 'weather', input: { city: 'Bern' } }])
})

test('a failing provider call fails the run with the transport text', async () => {
  server.replies.push({ status: 400, json: { error: { message: 'bad request body' } } })
  const { agent } = weatherAgent()
  const r = await agent.run('x')
  expect(r.success).toBe(false)
  expect(r.output).toBe('400 bad request body')
  expect(agent.getState().error).toBeInstanceOf(Error)
})

async function events(gen: AsyncGenerator<StreamEventWithDeltas>) {
  const out: StreamEventWithDeltas[] = []
  for await (const e of gen) out.push(e)
  return out
}

test('streamDeltas: text_delta events arrive before the turn\'s text event; off by default', async () => {
  const stream = {
    sse: sseData([chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }), chunk({ content: 'lo' }, 'stop'),
      { id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'gpt-test', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }], { split: 5 }),
  }
  server.replies.push(stream)
  const { agent } = weatherAgent()
  const withDeltas = await events(agent.stream('hi', { streamDeltas: true }))
  expect(withDeltas.map((e) => e.type)).toEqual(['text_delta', 'text_delta', 'text', 'done'])
  expect(withDeltas.slice(0, 3).map((e) => e.data)).toEqual(['Hel', 'lo', 'Hello'])
  expect((withDeltas[3].data as any).tokenUsage).toEqual({ input_tokens: 3, output_tokens: 2 })
  expect(server.requests[0].body.stream).toBe(true)

  server.replies.push({ json: completion({ content: 'Hello' }) })
  const plain = await events(agent.stream('hi'))
  expect(plain.map((e) => e.type)).toEqual(['text', 'done'])
  expect(server.requests[1].body.stream).toBe(false)
})

test('streamDeltas over a tool loop keeps the contract order around the deltas', async () => {
  server.replies.push(
    { sse: sseData([chunk({ content: 'Checking' }), chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }, 'tool_calls')]) },
    { sse: sseData([chunk({ content: 'Cold' }, 'stop')]) },
  )
  const { agent, seen } = weatherAgent()
  const ev = await events(agent.stream('Oslo?', { streamDeltas: true }))
  expect(ev.map((e) => e.type)).toEqual(['text_delta', 'text', 'tool_use', 'tool_result', 'text_delta', 'text', 'done'])
  expect(seen).toEqual(['Oslo'])
})
