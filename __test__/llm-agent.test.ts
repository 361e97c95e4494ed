// Full Agent runs with a tool over each native provider family, against local servers.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, createAdapter } from '../index'
import type { AgentConfig } from '../index'
import { eachServer, isolateEnv } from './llm-server'
import { recordingTool } from './helpers/mock-adapter'

isolateEnv(/^(OPENAI|ANTHROPIC|AZURE_OPENAI|GEMINI|GOOGLE|AWS|DEEPSEEK)_/)
const server = eachServer()

function agentWith(config: Partial<AgentConfig>) {
  const registry = new ToolRegistry()
  const lookup = recordingTool('lookup', 'Look a city up', z.object({ city: z.string() }), (input) => `${input.city}: 21°C`)
  registry.register(lookup.tool)
  const agent = new Agent({ name: 'native', model: 'test-model', tools: ['lookup'], ...config } as AgentConfig, registry, new ToolExecutor(registry))
  return { agent, seen: lookup.seen }
}

const openaiReply = (message: Record<string, unknown>, finish: string, usage = { prompt_tokens: 10, completion_tokens: 5 }) => ({
  id: 'c', model: 'test-model', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }], usage,
})

describe('Agent over native adapters', () => {
  test('openai-compatible server: tool round trip, usage, history', async () => {
    server.replies.push(
      { json: openaiReply({ content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } }] }, 'tool_calls') },
      { json: openaiReply({ content: 'It is 21°C in Oslo.' }, 'stop', { prompt_tokens: 30, completion_tokens: 8 }) },
    )
    const { agent, seen } = agentWith({ provider: 'openai', apiKey: 'local', baseURL: `${server.url}/v1`, systemPrompt: 'Be brief.' })
    const r = await agent.run('Weather in Oslo?')
    expect(r.success).toBe(true)
    expect(r.output).toBe('It is 21°C in Oslo.')
    expect(seen).toEqual([{ city: 'Oslo' }])
    expect(r.tokenUsage).toEqual({ input_tokens: 40, output_tokens: 13 })
    expect(r.toolCalls.map((c) => [c.toolName, c.input, c.output])).toEqual([['lookup', { city: 'Oslo' }, 'Oslo: 21°C']])
    const second = server.requests[1].body
    expect(second.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Oslo: 21°C' },
    ])
    expect(second.tools[0].function.name).toBe('lookup')
    expect(second.tools[0].function.parameters.properties).toEqual({ city: { type: 'string' } })
  })

  test('model replies reach the run whole whatever their strings hold (compact and JSON replies alike)', async () => {
    server.replies.push(
      { json: openaiReply({ content: 'checking\u0001', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } }] }, 'tool_calls') },
      { json: openaiReply({ content: null, tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '{ "city": "Bern", "2": 1, "1": [0] }' } }] }, 'tool_calls') },
      { json: openaiReply({ content: 'Done: été ✓' }, 'stop', { prompt_tokens: 30.5, completion_tokens: 8 }) },
    )
    const { agent, seen } = agentWith({ provider: 'openai', apiKey: 'local', baseURL: `${server.url}/v1` })
    const r = await agent.run('Weather?')
    expect(r.success).toBe(true)
    expect(seen).toEqual([{ city: 'Oslo' }, { city: 'Bern' }])
    expect(r.output).toBe('Done: été ✓')
    expect(r.tokenUsage).toEqual({ input_tokens: 50.5, output_tokens: 18 })
    expect(r.messages.map((m) => m.content)).toStrictEqual([
      [{ type: 'text', text: 'checking\u0001' }, { type: 'tool_use', id: 'call_1', name: 'lookup', input: { city: 'Oslo' } }],
      [{ type: 'tool_result', tool_use_id: 'call_1', content: 'Oslo: 21°C', is_error: undefined }],
      [{ type: 'tool_use', id: 'call_2', name: 'lookup', input: { city: 'Bern', 1: [0], 2: 1 } }],
      [{ type: 'tool_result', tool_use_id: 'call_2', content: 'Bern: 21°C', is_error: undefined }],
      [{ type: 'text', text: 'Done: été ✓' }],
    ])
    // Sent back as JS would write the parsed arguments (integer-like keys first).
    expect(server.requests[2].body.messages[3].tool_calls[0].function.arguments).toBe('{"1":[0],"2":1,"city":"Bern"}')
  })

  test('half a surrogate pair in a message is sent as U+FFFD, as in tool results (no parse failure)', async () => {
    for (let i = 0; i < 3; i++) server.replies.push({ json: openaiReply({ content: 'ok' }, 'stop') })
    const { agent } = agentWith({ provider: 'openai', apiKey: 'local', baseURL: `${server.url}/v1` })
    const r = await agent.run('odd \ud800 text, whole 😀 pair')
    expect(r.success).toBe(true)
    expect(server.requests[0].body.messages).toEqual([{ role: 'user', content: 'odd \ufffd text, whole 😀 pair' }])
    // Through the JSON path too (a conversation that is not a bare prompt).
    await agent.prompt('first')
    await agent.prompt('then \udc00 more')
    expect(server.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'then \ufffd more' })
  })

  test('a bare prompt skips the JSON round trip: the same bodies as the JSON path', async () => {
    const { agent } = agentWith({ provider: 'openai', apiKey: 'local', baseURL: `${server.url}/v1`, systemPrompt: 'S' })
    const runner: any = await (agent as any)._getRunner()
    const text = 'Quote " back\\slash\nline é 😀'
    const viaJson = { type: 'text', text, toJSON: () => ({ type: 'text', text }) }
    const cases: Array<[string, any[], unknown]> = [
      ['bare prompt', [{ role: 'user', content: [{ type: 'text', text }] }], text],
      ['a block with toJSON (JSON path)', [{ role: 'user', content: [viaJson] }], text],
      ['extra keys are ignored on both paths', [{ role: 'user', content: [{ type: 'text', text, cache: 1 }], name: 'x' }], text],
      ['a non-enumerable text is not sent', [{ role: 'user', content: [Object.defineProperty({ type: 'text' }, 'text', { value: text, enumerable: false })] }], undefined],
      ['an inherited role is not sent (read as user)', [Object.assign(Object.create({ role: 'user' }), { content: [{ type: 'text', text }] })], text],
    ]
    for (const [why, messages, content] of cases) {
      server.replies.push({ json: openaiReply({ content: 'ok' }, 'stop') })
      const r = await runner.run(messages)
      expect({ why, output: r.output }).toEqual({ why, output: 'ok' })
      const user = server.requests.at(-1)!.body.messages[1]
      expect({ why, user }).toEqual({ why, user: content === undefined ? { role: 'user' } : { role: 'user', content } })
    }
  })

  test('the run reuses the text of its history in request bodies, byte for byte what a fresh build sends', async () => {
    // Five tool turns; the sliding window replaces the history from the third call on, and
    // compressToolResults rewrites old results: every body must match the one built from the
    // conversation as JS holds it (an adapter whose chat is wrapped takes that path).
    const script = () => {
      for (let i = 0; i < 5; i++) {
        server.replies.push({ json: openaiReply({ content: i % 2 ? `step ${i}` : null, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ city: `C"${i}\n` }) } }] }, 'tool_calls') })
      }
      server.replies.push({ json: openaiReply({ content: 'done' }, 'stop') })
    }
    const bodies = async (wrap: boolean) => {
      const from = server.requests.length
      script()
      const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
      if (wrap) {
        const chat = adapter.chat
        adapter.chat = (m, o) => chat.call(adapter, m, o)
      }
      const { agent } = agentWith({ adapter, systemPrompt: 'S', contextStrategy: { type: 'sliding-window', maxTurns: 2 }, compressToolResults: { minChars: 5 } })
      const r = await agent.run('Go')
      expect(r.output).toBe('done')
      return server.requests.slice(from).map((q) => q.raw)
    }
    const cached = await bodies(false)
    const fresh = await bodies(true)
    expect(cached).toHaveLength(6)
    expect(cached).toEqual(fresh)
    // The window did drop messages (the test would not see a stale prefix otherwise).
    expect(JSON.parse(cached[5]).messages.length).toBeLessThan(JSON.parse(cached[4]).messages.length + 2)
  })

  test('local model printing its tool call as text: the fallback drives the loop', async () => {
    server.replies.push(
      { json: openaiReply({ content: '<tool_call>{"name": "lookup", "arguments": {"city": "Lima"}}</tool_call>' }, 'stop') },
      { json: openaiReply({ content: 'Lima: 21°C.' }, 'stop') },
    )
    const { agent, seen } = agentWith({ provider: 'openai', apiKey: 'ollama', baseURL: `${server.url}/v1` })
    const r = await agent.run('Weather in Lima?')
    expect(seen).toEqual([{ city: 'Lima' }])
    expect(r.output).toBe('Lima: 21°C.')
  })

  test('anthropic: tool round trip', async () => {
    const msg = (content: unknown[], stop: string) => ({ id: 'm', type: 'message', role: 'assistant', model: 'claude', content, stop_reason: stop, usage: { input_tokens: 7, output_tokens: 3 } })
    server.replies.push(
      { json: msg([{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { city: 'Rome' } }], 'tool_use') },
      { json: msg([{ type: 'text', text: 'Rome: 21°C.' }], 'end_turn') },
    )
    const { agent, seen } = agentWith({ provider: 'anthropic', apiKey: 'sk-ant', baseURL: server.url })
    const r = await agent.run('Weather in Rome?')
    expect(r.success).toBe(true)
    expect(r.output).toBe('Rome: 21°C.')
    expect(seen).toEqual([{ city: 'Rome' }])
    expect(server.requests[1].body.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Rome: 21°C' }] })
  })

  test('gemini: tool round trip with the thought signature echoed', async () => {
    process.env.GOOGLE_GEMINI_BASE_URL = server.url
    const reply = (parts: unknown[]) => ({ candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2 } })
    server.replies.push(
      { json: reply([{ functionCall: { name: 'lookup', args: { city: 'Kyiv' } }, thoughtSignature: 'SIG' }]) },
      { json: reply([{ text: 'Kyiv: 21°C.' }]) },
    )
    const { agent, seen } = agentWith({ provider: 'gemini', apiKey: 'g' })
    const r = await agent.run('Weather in Kyiv?')
    expect(r.output).toBe('Kyiv: 21°C.')
    expect(seen).toEqual([{ city: 'Kyiv' }])
    expect(server.requests[1].body.contents.slice(1)).toEqual([
      { role: 'model', parts: [{ functionCall: { name: 'lookup', args: { city: 'Kyiv' } }, thoughtSignature: 'SIG' }] },
      { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { output: 'Kyiv: 21°C' } } }] },
    ])
  })

  test('bedrock and azure-openai: tool round trips', async () => {
    process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = server.url
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'k'
    server.replies.push(
      { json: { output: { message: { role: 'assistant', content: [{ toolUse: { toolUseId: 'tu', name: 'lookup', input: { city: 'Baku' } } }] } }, stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 } } },
      { json: { output: { message: { role: 'assistant', content: [{ text: 'Baku: 21°C.' }] } }, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1 } } },
    )
    const bed = agentWith({ provider: 'bedrock' })
    expect((await bed.agent.run('Weather in Baku?')).output).toBe('Baku: 21°C.')
    expect(bed.seen).toEqual([{ city: 'Baku' }])

    process.env.AZURE_OPENAI_API_KEY = 'az'
    server.replies.push(
      { json: openaiReply({ content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Riga"}' } }] }, 'tool_calls') },
      { json: openaiReply({ content: 'Riga: 21°C.' }, 'stop') },
    )
    const az = agentWith({ provider: 'azure-openai', baseURL: server.url, model: 'my-deployment' })
    expect((await az.agent.run('Weather in Riga?')).output).toBe('Riga: 21°C.')
    expect(server.requests[3].url).toBe('/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21')
  })

  test('provider failures become the run output', async () => {
    const { agent } = agentWith({ provider: 'openai' })
    const r = await agent.run('hi')
    expect(r.success).toBe(false)
    expect(r.output).toBe(
      "The OPENAI_API_KEY environment variable is missing or empty; either provide it, or instantiate the OpenAI client with an apiKey option, like new OpenAI({ apiKey: 'My API Key' }).",
    )
    server.replies.push({ status: 400, json: { error: { message: 'model not found' } } })
    const bad = agentWith({ provider: 'deepseek', apiKey: 'k', baseURL: `${server.url}/v1` })
    const r2 = await bad.agent.run('hi')
    expect(r2.success).toBe(false)
    expect(r2.output).toBe('400 model not found')
  })

  test('Agent.stream over a native adapter', async () => {
    server.replies.push({ json: openaiReply({ content: 'streamed answer' }, 'stop') })
    const { agent } = agentWith({ provider: 'openai', apiKey: 'k', baseURL: `${server.url}/v1` })
    const types: string[] = []
    for await (const ev of agent.stream('hi')) types.push(ev.type)
    expect(types).toEqual(['text', 'done'])
  })
})
