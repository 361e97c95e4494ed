import { createAdapter, LLMMessage, LLMResponse, StreamEvent } from '../lib/llm'
const { InvalidMessageError } = require('../lib/errors.js')
import { collect, eachServer, isolateEnv, sseData, startServer } from './llm-server'

const llm = require('../lib/llm.js')
const errors = require('../lib/errors.js')

const completion = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-test',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  ...extra,
})

const history: LLMMessage[] = [
  { role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris?' }] },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'need the tool', provenance: 'anthropic', signature: 'sig' },
      { type: 'text', text: 'Let me check. ' },
      { type: 'text', text: 'One moment.' },
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris', days: 2, units: { t: 'C' } } },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'call_1', content: 'sunny, 21°C', is_error: false },
      { type: 'text', text: 'Please be brief.' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    ],
  },
]

const tools = [
  { name: 'weather', description: 'Weather lookup', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
]

isolateEnv(['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DEEPSEEK_API_KEY', 'AZURE_OPENAI_API_KEY', 'AZURE_OPENAI_ENDPOINT', 'AZURE_OPENAI_DEPLOYMENT', 'AZURE_OPENAI_API_VERSION'])
const server = eachServer()

describe('OpenAI chat', () => {
  test('request body is the golden JSON and the response maps to an LLMResponse', async () => {
    server.replies.push({
      json: completion({
        content: 'It is sunny.',
        reasoning_content: 'thought about it',
        tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Lyon","n":1.0}' } }],
      }, { choices: [{ index: 0, message: { role: 'assistant', content: 'It is sunny.', reasoning_content: 'thought about it', tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Lyon","n":1.0}' } }] }, finish_reason: 'tool_calls' }] }),
    })
    const adapter = await createAdapter('openai', 'sk-test', `${server.url}/v1`)
    expect(adapter.name).toBe('openai')
    expect(adapter.capabilities).toEqual({ echoesReasoning: 'never' })
    const res = await adapter.chat(history, {
      model: 'gpt-test',
      tools,
      maxTokens: 512,
      temperature: 0.2,
      topP: 0.9,
      parallelToolCalls: false,
      thinking: { enabled: false, effort: 'low' },
      extraBody: { temperature: 0.7, seed: 42, model: 'ignored', tools: ['ignored'] },
      systemPrompt: 'Be helpful.',
    })
    expect(server.requests).toHaveLength(1)
    const req = server.requests[0]
    expect(req.method).toBe('POST')
    expect(req.url).toBe('/v1/chat/completions')
    expect(req.headers.authorization).toBe('Bearer sk-test')
    expect(req.headers['content-type']).toBe('application/json')
    const golden = {
      max_tokens: 512,
      temperature: 0.7,
      top_p: 0.9,
      parallel_tool_calls: false,
      reasoning_effort: 'low',
      seed: 42,
      model: 'gpt-test',
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather lookup', parameters: tools[0].inputSchema } }],
      messages: [
        { role: 'system', content: 'Be helpful.' },
        { role: 'user', content: 'What is the weather in Paris?' },
        {
          role: 'assistant',
          content: 'Let me check. One moment.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris","days":2,"units":{"t":"C"}}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21°C' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Please be brief.' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
      stream: false,
    }
    // Byte-exact, key order included.
    expect(req.raw).toBe(JSON.stringify(golden))
    expect(Object.keys(res)).toEqual(['id', 'content', 'model', 'stop_reason', 'usage'])
    expect(res).toStrictEqual({
      id: 'chatcmpl-1',
      content: [
        { type: 'reasoning', text: 'thought about it', provenance: 'openai' },
        { type: 'text', text: 'It is sunny.' },
        { type: 'tool_use', id: 'call_2', name: 'weather', input: { city: 'Lyon', n: 1 } },
      ],
      model: 'gpt-test',
      stop_reason: 'tool_use',
      usage: { input_tokens: 11, output_tokens: 7 },
    })
  })

  test('a local server without native tool calls: the text fallback extracts them', async () => {
    const text = 'I will call it.\n<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    server.replies.push({ json: completion({ content: text }) })
    server.replies.push({ json: completion({ content: 'He said "hi. {"name":"weather","arguments":"{\\"city\\":\\"Rome\\"}"}' }) })
    server.replies.push({ json: completion({ content: '{"name":"unknown_tool","arguments":{}}' }) })
    const adapter = await createAdapter('openai', 'ollama', `${server.url}/v1`)
    const r1 = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'qwen', tools })
    expect(r1.stop_reason).toBe('tool_use')
    expect(r1.content[0]).toEqual({ type: 'text', text })
    expect(r1.content[1]).toMatchObject({ type: 'tool_use', name: 'weather', input: { city: 'Oslo' } })
    expect((r1.content[1] as any).id).toMatch(/^extracted_call_\d+_\d+$/)
    // §21: a stray quote in the prose no longer hides the call.
    const r2 = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'qwen', tools })
    expect(r2.content[1]).toMatchObject({ type: 'tool_use', name: 'weather', input: { city: 'Rome' } })
    // Names outside the whitelist are ignored.
    const r3 = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'qwen', tools })
    expect(r3.content).toHaveLength(1)
    expect(r3.stop_reason).toBe('end_turn')
  })

  test('unparseable tool arguments go through repairToolArgs', async () => {
    server.replies.push({
      json: completion({ content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'bash', arguments: '{"command": "ls -la"' } }, { id: 'd', type: 'function', function: { name: 'bash', arguments: '{"command": "echo \\"x\\""}  trailing' } }] }),
    })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const r = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'x' }] }], { model: 'm' })
    expect(r.content).toEqual([
      { type: 'tool_use', id: 'c', name: 'bash', input: {} },
      { type: 'tool_use', id: 'd', name: 'bash', input: {} },
    ])
    expect(llm.repairToolArgs('{"command": "echo \\"x\\""}')).toEqual({ command: 'echo "x"' })
  })

  test('HTTP errors: retries on 429 / 5xx honouring retry-after, then `<status> <message>`', async () => {
    server.replies.push(
      { status: 429, headers: { 'retry-after-ms': '10' }, json: { error: { message: 'slow down' } } },
      { status: 503, headers: { 'retry-after': '0.01' }, json: { error: { message: 'busy' } } },
      { json: completion({ content: 'ok' }) },
    )
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const r = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'x' }] }], { model: 'm' })
    expect(r.content).toEqual([{ type: 'text', text: 'ok' }])
    expect(server.requests).toHaveLength(3)

    server.requests.length = 0
    server.replies.push(
      { status: 500, headers: { 'retry-after-ms': '5' }, json: { error: { message: 'boom' } } },
      { status: 500, headers: { 'retry-after-ms': '5' }, json: { error: { message: 'boom' } } },
      { status: 500, headers: { 'retry-after-ms': '5' }, json: { error: { message: 'boom' } } },
    )
    const err = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'x' }] }], { model: 'm' }).catch((e) => e)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe('500 boom')
    expect(err.status).toBe(500)
    expect(server.requests).toHaveLength(3)

    // 400 is final; x-should-retry: false makes a 503 final too.
    server.requests.length = 0
    server.replies.push({ status: 400, json: { error: { message: 'bad model', type: 'invalid_request_error' } } })
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow('400 bad model')
    server.replies.push({ status: 503, headers: { 'x-should-retry': 'false' }, text: '' })
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow('503 status code (no body)')
    expect(server.requests).toHaveLength(2)
  })

  test('connection errors are retried, then `Connection error.`', async () => {
    server.replies.push({ destroy: true }, { json: completion({ content: 'after reset' }) })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const r = await adapter.chat([], { model: 'm' })
    expect(r.content).toEqual([{ type: 'text', text: 'after reset' }])
    const dead = await createAdapter('openai', 'k', 'http://127.0.0.1:1/v1')
    await expect(dead.chat([], { model: 'm' })).rejects.toThrow('Connection error.')
  })

  test('only LLMChatOptions fields cross (callbacks, circular objects and tool extras are ignored)', async () => {
    server.replies.push({ json: completion({ content: 'ok' }) })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const circular: any = { name: 'c' }
    circular.self = circular
    const options: any = { model: 'm', onTrace: () => {}, schema: circular, tools: [{ ...tools[0], execute: () => {}, zod: circular }] }
    await adapter.chat([], options)
    expect(server.requests[0].body).toEqual({
      model: 'm',
      messages: [],
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather lookup', parameters: tools[0].inputSchema } }],
      stream: false,
    })
  })

  test('a malformed JSON body fails the call', async () => {
    server.replies.push({ text: '{"id": "x", "choices": [' })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow(/^Could not parse response body as JSON/)
    server.replies.push({ json: { id: 'x', choices: [] } })
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow('OpenAI returned a completion with no choices')
  })

  test('the abort signal cancels an in-flight request at once', async () => {
    const controller = new AbortController()
    server.replies.push({ hang: true, onRequest: () => controller.abort() })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const err = await adapter.chat([], { model: 'm', abortSignal: controller.signal }).catch((e) => e)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe('Request was aborted.')
    expect(server.requests).toHaveLength(1)
    // Already aborted: no request at all.
    await expect(adapter.chat([], { model: 'm', abortSignal: controller.signal })).rejects.toThrow('Request was aborted.')
    expect(server.requests).toHaveLength(1)
  })

  test('message validation throws InvalidMessageError (§15.1)', async () => {
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const cases: [unknown, string][] = [
      ['nope', 'messages must be an array, got string'],
      [[null], 'messages[0] must be an object, got null'],
      [[{ role: 'user', content: 'hi' }], 'messages[0].content must be a ContentBlock[], got string'],
      [[{ role: 'user', content: [{ text: 'x' }] }], 'messages[0].content[0] must be a content block with a string "type"'],
      [[{ role: 'user' }], 'messages[0].content must be a ContentBlock[], got undefined'],
      [[{ role: 'user', content: [[]] }], 'messages[0].content[0] must be a content block with a string "type"'],
    ]
    for (const [messages, message] of cases) {
      const err = await adapter.chat(messages as any, { model: 'm' }).catch((e) => e)
      expect(err).toBeInstanceOf(InvalidMessageError)
      expect(err).toBeInstanceOf(errors.InvalidMessageError)
      expect(err.code).toBe('INVALID_MESSAGE')
      expect(err.message).toBe(message)
    }
    // stream: thrown on the first iteration, not at call time
    const it = adapter.stream('nope' as any, { model: 'm' })[Symbol.asyncIterator]()
    await expect(it.next()).rejects.toThrow('messages must be an array, got string')
    expect(server.requests).toHaveLength(0)
  })
})

describe('OpenAI stream', () => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
    id: 'chatcmpl-s',
    object: 'chat.completion.chunk',
    model: 'gpt-test',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  })

  test('parses SSE split anywhere, yields events and a final done', async () => {
    server.replies.push({
      sse: [
        ': keep-alive comment\n\n',
        ...sseData([
          chunk({ role: 'assistant', content: '' }),
          chunk({ content: 'Hel' }),
          chunk({ content: 'lo ✓', reasoning_content: 'hmm' }),
          chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Nice"}' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: '"Metz"}' } }] }, 'tool_calls'),
          { id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'gpt-test', choices: [], usage: { prompt_tokens: 5, completion_tokens: 9 } },
        ], { split: 3 }),
      ],
    })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const events = await collect(adapter.stream(history, { model: 'gpt-test', tools, maxTokens: 64 }))
    const body = server.requests[0].body
    expect(body.stream).toBe(true)
    expect(body.stream_options).toEqual({ include_usage: true })
    expect(Object.keys(body)).toEqual(['max_tokens', 'model', 'messages', 'tools', 'stream', 'stream_options'])
    const done: LLMResponse = {
      id: 'chatcmpl-s',
      content: [
        { type: 'reasoning', text: 'hmm', provenance: 'openai' },
        { type: 'text', text: 'Hello ✓' },
        { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Nice' } },
        { type: 'tool_use', id: 'call_b', name: 'weather', input: { city: 'Metz' } },
      ],
      model: 'gpt-test',
      stop_reason: 'tool_use',
      usage: { input_tokens: 5, output_tokens: 9 },
    }
    expect(events).toEqual([
      { type: 'text', data: '' },
      { type: 'text', data: 'Hel' },
      { type: 'text', data: 'lo ✓' },
      { type: 'reasoning', data: 'hmm' },
      { type: 'tool_use', data: done.content[2] },
      { type: 'tool_use', data: done.content[3] },
      { type: 'done', data: done },
    ])
  })

  test('the text fallback also runs on streams (no name filter with tools: [])', async () => {
    server.replies.push({ sse: sseData([chunk({ content: '{"name":"anything","arguments":{"a":1}}' }, 'stop')]) })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const events = await collect(adapter.stream([], { model: 'm', tools: [] }))
    expect(events.map((e) => e.type)).toEqual(['text', 'tool_use', 'done'])
    const done = events[2].data as LLMResponse
    expect(done.stop_reason).toBe('tool_use')
    expect(done.content[1]).toMatchObject({ type: 'tool_use', name: 'anything', input: { a: 1 } })
  })

  test('malformed JSON mid-stream becomes an error event', async () => {
    server.replies.push({ sse: sseData([chunk({ content: 'partial' }), '{"choices": [oops'], { done: false }) })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const events = await collect(adapter.stream([], { model: 'm' }))
    expect(events).toHaveLength(2)
    expect(events[0]).toEqual({ type: 'text', data: 'partial' })
    expect(events[1].type).toBe('error')
    expect(events[1].data).toBeInstanceOf(Error)
    expect((events[1].data as Error).message).toMatch(/^Could not parse message into JSON/)
  })

  test('a connection cut mid-stream becomes an error event', async () => {
    server.replies.push({ sse: sseData([chunk({ content: 'so far' })], { done: false }), cut: true })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const events = await collect(adapter.stream([], { model: 'm' }))
    expect(events[0]).toEqual({ type: 'text', data: 'so far' })
    expect(events[1].type).toBe('error')
    expect((events[1].data as Error).message).toBe('Connection error.')
    expect(events).toHaveLength(2)
  })

  test('an error chunk becomes an error event', async () => {
    server.replies.push({ sse: sseData([{ error: { message: 'model overloaded' } }]) })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const events = await collect(adapter.stream([], { model: 'm' }))
    expect(events).toHaveLength(1)
    expect((events[0].data as Error).message).toBe('model overloaded')
  })

  test('HTTP errors opening the stream are thrown from the iterator', async () => {
    server.replies.push({ status: 401, json: { error: { message: 'Incorrect API key provided' } } })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const err = await collect(adapter.stream([], { model: 'm' })).catch((e) => e)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe('401 Incorrect API key provided')
  })

  test('abort mid-stream yields an error event; break stops the request', async () => {
    const controller = new AbortController()
    server.replies.push({
      custom: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(`data: ${JSON.stringify(chunk({ content: 'first' }))}\n\n`)
        // never ends
      },
    })
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const seen: StreamEvent[] = []
    for await (const ev of adapter.stream([], { model: 'm', abortSignal: controller.signal })) {
      seen.push(ev)
      if (ev.type === 'text') controller.abort()
    }
    expect(seen[0]).toEqual({ type: 'text', data: 'first' })
    expect(seen[1].type).toBe('error')
    expect((seen[1].data as Error).message).toBe('Request was aborted.')

    let closed!: () => void
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve))
    server.replies.push({
      custom: (_req, res) => {
        res.on('close', () => closed())
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(`data: ${JSON.stringify(chunk({ content: 'one' }))}\n\n`)
      },
    })
    const types: string[] = []
    for await (const ev of adapter.stream([], { model: 'm' })) {
      types.push(ev.type)
      break
    }
    expect(types).toEqual(['text'])
    // The client dropped the connection (the server never ends this response itself).
    await connectionClosed
  })
})

describe('OpenAI-compatible providers', () => {
  test('createAdapter: a new adapter object per call, and the environment read at each call', async () => {
    process.env.OPENAI_API_KEY = 'sk-one'
    const a = await createAdapter('openai', undefined, `${server.url}/v1`)
    const b = await createAdapter('openai', undefined, `${server.url}/v1`)
    expect(a).not.toBe(b)
    // Wrapping one adapter's chat leaves the other alone.
    a.chat = async () => { throw new Error('wrapped') }
    process.env.OPENAI_API_KEY = 'sk-two'
    const c = await createAdapter('openai', undefined, `${server.url}/v1`)
    server.replies.push({ json: completion({ content: 'b' }) }, { json: completion({ content: 'c' }) })
    await b.chat([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'm' })
    await c.chat([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'm' })
    await expect(a.chat([], { model: 'm' })).rejects.toThrow('wrapped')
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-one', 'Bearer sk-two'])
  })

  test('createAdapter: configurations in any order each get their own key and endpoint', async () => {
    const other = await startServer()
    try {
      const configs: [string, string][] = [['k1', server.url], ['k1', server.url], ['k2', server.url], ['k1', other.url], ['k1', server.url]]
      for (const [key, url] of configs) {
        const adapter = await createAdapter('openai', key, `${url}/v1`)
        ;(url === server.url ? server : other).replies.push({ json: completion({ content: 'ok' }) })
        await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'm' })
      }
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer k1', 'Bearer k1', 'Bearer k2', 'Bearer k1'])
      expect(other.requests.map((r) => r.headers.authorization)).toEqual(['Bearer k1'])
      // An adapter object hides its native handle from keys and JSON.
      const a = await createAdapter('openai', 'k1', `${server.url}/v1`)
      expect(Object.keys(a)).toEqual(['name', 'capabilities'])
      expect(JSON.parse(JSON.stringify(a))).toEqual({ name: 'openai', capabilities: { echoesReasoning: 'never' } })
    } finally {
      await other.close()
    }
  })

  test('presets: names, base URLs, key chains and capabilities', async () => {
    process.env.OPENAI_API_KEY = 'sk-fallback'
    const ds = await createAdapter('deepseek', undefined, `${server.url}/ds`)
    expect(ds.name).toBe('deepseek')
    expect(ds.capabilities).toEqual({ echoesReasoning: 'tool-use-only' })
    server.replies.push({ json: completion({ content: 'x', reasoning_content: 'r' }) })
    const r = await ds.chat(
      [
        { role: 'user', content: [{ type: 'text', text: 'q' }] },
        { role: 'assistant', content: [{ type: 'reasoning', text: 'mine', provenance: 'deepseek' }, { type: 'tool_use', id: 't', name: 'weather', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] },
      ],
      { model: 'deepseek-reasoner' },
    )
    expect(server.requests[0].url).toBe('/ds/chat/completions')
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-fallback')
    expect(server.requests[0].body.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 't', type: 'function', function: { name: 'weather', arguments: '{}' } }],
      reasoning_content: 'mine',
    })
    expect(r.content[0]).toEqual({ type: 'reasoning', text: 'r', provenance: 'deepseek' })

    process.env.DEEPSEEK_API_KEY = 'sk-ds'
    server.replies.push({ json: completion({ content: 'y' }) })
    await (await createAdapter('deepseek', undefined, `${server.url}/ds`)).chat([], { model: 'm' })
    expect(server.requests[1].headers.authorization).toBe('Bearer sk-ds')

    const expected: [string, string][] = [
      ['grok', 'never'], ['doubao', 'never'], ['qiniu', 'never'], ['minimax', 'never'],
      ['mimo', 'tool-use-only'], ['hunyuan', 'tool-use-only'],
    ]
    for (const [p, echoes] of expected) {
      const a = await createAdapter(p as any, 'k')
      expect(a.name).toBe(p)
      expect(a.capabilities).toEqual({ echoesReasoning: echoes })
    }
  })

  test('OPENAI_BASE_URL applies to provider openai only', async () => {
    process.env.OPENAI_BASE_URL = `${server.url}/from-env`
    server.replies.push({ json: completion({ content: 'x' }) })
    await (await createAdapter('openai', 'k')).chat([], { model: 'm' })
    expect(server.requests[0].url).toBe('/from-env/chat/completions')
  })

  test('missing key and unknown provider', async () => {
    await expect(createAdapter('openai')).rejects.toThrow(
      "The OPENAI_API_KEY environment variable is missing or empty; either provide it, or instantiate the OpenAI client with an apiKey option, like new OpenAI({ apiKey: 'My API Key' }).",
    )
    await expect(createAdapter('grok')).rejects.toThrow(/OPENAI_API_KEY/)
    const err = await createAdapter('nope' as any).catch((e) => e)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe('Unsupported LLM provider: nope')
  })

  test('Azure OpenAI: deployment URL, api-key header, api-version', async () => {
    process.env.AZURE_OPENAI_API_KEY = 'az-key'
    process.env.AZURE_OPENAI_DEPLOYMENT = 'my-deployment'
    const az = await createAdapter('azure-openai', undefined, `${server.url}/`)
    expect(az.name).toBe('azure-openai')
    server.replies.push({ json: completion({ content: 'hi from azure' }) })
    const r = await az.chat([{ role: 'user', content: [{ type: 'text', text: 'x' }] }], { model: '' })
    expect(r.content).toEqual([{ type: 'text', text: 'hi from azure' }])
    const req = server.requests[0]
    expect(req.url).toBe('/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21')
    expect(req.headers['api-key']).toBe('az-key')
    expect(req.headers.authorization).toBeUndefined()
    expect(req.body.model).toBe('my-deployment')

    delete process.env.AZURE_OPENAI_DEPLOYMENT
    const az2 = await createAdapter('azure-openai', 'k', server.url)
    await expect(az2.chat([], { model: ' ' })).rejects.toThrow(
      'Azure OpenAI deployment is required. Set agent model to your deployment name, or set AZURE_OPENAI_DEPLOYMENT.',
    )
    delete process.env.AZURE_OPENAI_API_KEY
    await expect(createAdapter('azure-openai', undefined, server.url)).rejects.toThrow(/AZURE_OPENAI_API_KEY/)
  })

  test('responses arrive whole whatever their strings hold (compact and JSON replies alike)', async () => {
    const calls = [
      { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{ "city" : "Rome", "days": 2.50 }' } },
    ]
    const cases: [Record<string, unknown>, Record<string, unknown>, unknown][] = [
      // The usual shape (sent compact) with several blocks, an empty text and non-ASCII.
      [{ content: '', tool_calls: calls }, {}, { id: 'chatcmpl-1', content: [{ type: 'text', text: '' }, { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Oslo' } }, { type: 'tool_use', id: 'call_b', name: 'weather', input: { city: 'Rome', days: 2.5 } }], model: 'gpt-test', stop_reason: 'tool_use', usage: { input_tokens: 11, output_tokens: 7 } }],
      [{ content: 'été ✓ 😀' }, {}, { id: 'chatcmpl-1', content: [{ type: 'text', text: 'été ✓ 😀' }], model: 'gpt-test', stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 7 } }],
      [{ content: null }, {}, { id: 'chatcmpl-1', content: [], model: 'gpt-test', stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 7 } }],
      // The separator inside a text, an id or a model, a reasoning block, fractional usage: JSON.
      [{ content: 'a\u0001b' }, {}, { id: 'chatcmpl-1', content: [{ type: 'text', text: 'a\u0001b' }], model: 'gpt-test', stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 7 } }],
      [{ content: 'x' }, { id: 'id\u0001', model: 'm\u0001' }, { id: 'id\u0001', content: [{ type: 'text', text: 'x' }], model: 'm\u0001', stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 7 } }],
      [{ content: 'x', reasoning_content: 'why' }, {}, { id: 'chatcmpl-1', content: [{ type: 'reasoning', text: 'why', provenance: 'openai' }, { type: 'text', text: 'x' }], model: 'gpt-test', stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 7 } }],
      [{ content: 'x' }, { usage: { prompt_tokens: 1.5, completion_tokens: 2 } }, { id: 'chatcmpl-1', content: [{ type: 'text', text: 'x' }], model: 'gpt-test', stop_reason: 'end_turn', usage: { input_tokens: 1.5, output_tokens: 2 } }],
    ]
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    for (const [message, extra, expected] of cases) {
      server.replies.push({ json: completion(message, extra) })
      const res = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'gpt-test' })
      expect(res).toStrictEqual(expected)
      expect(Object.keys(res)).toEqual(['id', 'content', 'model', 'stop_reason', 'usage'])
    }
  })

  test('a tool loop over a local OpenAI-compatible server', async () => {
    // Turn 1: the model asks for a tool; turn 2: it answers with the result in context.
    server.replies.push(
      { json: completion({ content: null, tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'weather', arguments: '{"city":"Bern"}' } }] }) },
      { json: completion({ content: 'Bern: 18°C' }) },
    )
    const adapter = await createAdapter('openai', 'local', `${server.url}/v1`)
    const messages: LLMMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'Weather in Bern?' }] }]
    for (let turn = 0; turn < 5; turn++) {
      const res = await adapter.chat(messages, { model: 'llama', tools })
      messages.push({ role: 'assistant', content: res.content })
      const calls = res.content.filter((b) => b.type === 'tool_use') as any[]
      if (res.stop_reason !== 'tool_use') break
      messages.push({ role: 'user', content: calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: `${c.input.city}: 18°C` })) })
    }
    expect(messages).toHaveLength(4)
    expect(server.requests[1].body.messages).toEqual([
      { role: 'user', content: 'Weather in Bern?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'weather', arguments: '{"city":"Bern"}' } }] },
      { role: 'tool', tool_call_id: 'call_x', content: 'Bern: 18°C' },
    ])
    expect(messages[3].content).toEqual([{ type: 'text', text: 'Bern: 18°C' }])
  })
})

describe('OpenAI chat with a growing history', () => {
  const server = eachServer()

  // The adapter object remembers what it sent and sends only new messages across; each request
  // must still be byte for byte what an adapter object that never sent anything builds.
  test('bodies match a fresh adapter through appends, in-place edits, removals and option changes', async () => {
    const cached = await createAdapter('openai', 'k', `${server.url}/v1`)
    let messages: any[] = JSON.parse(JSON.stringify(history))
    let options: any = { model: 'gpt-test', tools: JSON.parse(JSON.stringify(tools)), maxTokens: 50 }
    let k = 0
    const call = async (why: string) => {
      server.replies.push({ json: completion({ content: 'ok' }) }, { json: completion({ content: 'ok' }) })
      await cached.chat(messages, options)
      const fresh = await createAdapter('openai', 'k', `${server.url}/v1`)
      await fresh.chat(messages, options)
      const [a, b] = server.requests.slice(-2)
      expect({ why, body: a.raw }).toEqual({ why, body: b.raw })
    }
    await call('first call')
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: 'call_2', name: 'weather', input: { city: 'Bern' } }] })
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_2', content: 'rain' }] })
    await call('two appended')
    await call('nothing changed')
    messages[0].content[0].text = 'What is the weather in Rome?'
    await call('text edited in place')
    messages[1].content[3].input.units.t = 'F'
    await call('nested tool input edited in place')
    const input = messages[1].content[3].input
    const city = input.city
    delete input.city
    input.city = city
    await call('key order changed')
    messages[3] = JSON.parse(JSON.stringify(messages[3]))
    await call('a message replaced by an equal copy')
    messages[2].content.push({ type: 'text', text: 'and tomorrow?' })
    await call('a block appended to an earlier message')
    messages.splice(1, 2)
    await call('messages removed from the middle')
    options = { ...options, systemPrompt: 'Be brief.' }
    await call('options changed')
    options.tools[0].description = 'Weather, by city'
    await call('a tool description edited in place')
    options = { ...options, tools: [...options.tools] }
    await call('an equal options object')
    options.tools[0].inputSchema.properties.city.description = 'A city'
    await call('a tool schema edited in place')
    options = { ...options, tools: options.tools.map((t: any) => ({ ...t })) }
    await call('equal tool objects')
    // Options cross only when changed: back and forth, and after a call that threw.
    const before = options
    options = { ...options, systemPrompt: 'Be very brief.' }
    await call('other options')
    options = before
    await call('the earlier options again')
    await expect(cached.chat(messages, { ...options, tools: [{ name: 5, description: 'd', inputSchema: {} }] } as any)).rejects.toThrow('invalid chat options')
    await call('after a call that threw')
    messages.push({ role: 'user', content: [{ type: 'text', text: 'x', toJSON: () => ({ type: 'text', text: `n${k}` }) }] })
    await call('a block with toJSON')
    k++
    await call('the toJSON block again, with a new value')
    messages.push(messages[0])
    await call('the same message object twice')
    messages = messages.slice()
    await call('a new array of the same messages')
    messages.reverse()
    await call('reordered')
    // Only new messages are checked again, and errors still name the absolute index.
    const at = messages.length
    messages.push({ role: 'user', content: [null] })
    await expect(cached.chat(messages, options)).rejects.toThrow(`messages[${at}].content[0] must be a content block with a string "type"`)
  })

  // Replies sent back as assistant messages, edited or not: the bodies must be what a fresh
  // adapter sends from the same messages (integer-like keys of tool arguments included).
  test('replies sent back: the same bodies as a fresh adapter, through edits and concurrency', async () => {
    const cached = await createAdapter('openai', 'k', `${server.url}/v1`)
    const toolReply = (id: string, args: string) => ({ json: completion({ content: 'checking', tool_calls: [{ id, type: 'function', function: { name: 'weather', arguments: args } }] }) })
    const messages: any[] = [{ role: 'user', content: [{ type: 'text', text: 'Weather?' }] }]
    const options = { model: 'gpt-test', tools }
    const step = async (why: string, args: string, edit?: (content: any[]) => void) => {
      server.replies.push(toolReply(`call_${why}`, args))
      const res = await cached.chat(messages, options)
      messages.push({ role: 'assistant', content: res.content })
      edit?.(res.content)
      messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `call_${why}`, content: 'ok' }] })
      server.replies.push({ json: completion({ content: 'done' }) }, { json: completion({ content: 'done' }) })
      await cached.chat(messages, options)
      await (await createAdapter('openai', 'k', `${server.url}/v1`)).chat(messages, options)
      const [a, b] = server.requests.slice(-2)
      expect({ why, body: a.raw }).toEqual({ why, body: b.raw })
    }
    await step('as it came', '{"city":"Oslo"}')
    await step('integer-like keys', '{"b":1,"2":"x","1":{"z":0,"0":1}}')
    await step('input edited', '{"city":"Rome"}', (c) => { c[1].input.city = 'Paris' })
    await step('block appended', '{"city":"Bern"}', (c) => { c.push({ type: 'text', text: 'more' }) })
    await step('text edited', '{"city":"Bern"}', (c) => { c[0].text = 'changed' })
    await step('block replaced', '{"city":"Bern"}', (c) => { c[1] = { ...c[1] } })
    // The message carries another key, or is not the reply's own array.
    server.replies.push(toolReply('x', '{}'))
    let res = await cached.chat(messages, options)
    messages.push({ role: 'assistant', content: res.content, note: 'x' })
    await step('after a message with another key', '{"city":"Lima"}')
    server.replies.push(toolReply('y', '{}'))
    res = await cached.chat(messages, options)
    messages.push({ role: 'assistant', content: res.content }, { role: 'assistant', content: res.content })
    await step('the reply twice', '{"city":"Quito"}')
    // Two calls in flight: whichever reply comes back, sending it back still works.
    server.replies.push(toolReply('p', '{"n":1}'), toolReply('q', '{"n":2}'))
    const [r1, r2] = await Promise.all([cached.chat(messages, options), cached.chat(messages, options)])
    messages.push({ role: 'assistant', content: r1.content }, { role: 'assistant', content: r2.content })
    await step('after concurrent calls', '{"city":"Kyiv"}')
  })

  test('messages written field by field and edited in place are sent again', async () => {
    const cached = await createAdapter('openai', 'k', `${server.url}/v1`)
    const messages: any[] = [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'weather', input: { city: 'Oslo', days: [1, 2] } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'sun' }, { type: 'tool_result', tool_use_id: 'c2', content: 'x'.repeat(700), is_error: false }] },
    ]
    const call = async (why: string) => {
      server.replies.push({ json: completion({ content: 'ok' }) }, { json: completion({ content: 'ok' }) })
      await cached.chat(messages, { model: 'gpt-test' })
      await (await createAdapter('openai', 'k', `${server.url}/v1`)).chat(messages, { model: 'gpt-test' })
      const [a, b] = server.requests.slice(-2)
      expect({ why, body: a.raw }).toEqual({ why, body: b.raw })
    }
    await call('first')
    const edits: [string, () => void][] = [
      ['nothing', () => {}],
      ['text', () => { messages[0].content[0].text = 'Weather today?' }],
      ['role', () => { messages[0].role = 'assistant' }],
      ['tool id', () => { messages[1].content[0].id = 'c9' }],
      ['nested input', () => { messages[1].content[0].input.days.push(3) }],
      ['input replaced', () => { messages[1].content[0].input = { city: 'Oslo', days: [1, 2, 3] } }],
      ['result content', () => { messages[2].content[0].content = 'rain' }],
      ['long result', () => { messages[2].content[1].content = 'y'.repeat(700) }],
      ['is_error flipped', () => { messages[2].content[1].is_error = true }],
      ['is_error added', () => { messages[2].content[0].is_error = true }],
      ['is_error removed', () => { delete messages[2].content[0].is_error }],
      ['key added', () => { messages[0].content[0].cache = 'x' }],
      ['block removed', () => { messages[2].content.pop() }],
      ['block added', () => { messages[2].content.push({ type: 'text', text: 'and?' }) }],
      ['toJSON added', () => { messages[2].content[0].toJSON = () => ({ type: 'tool_result', tool_use_id: 'c1', content: 'from toJSON' }) }],
    ]
    for (const [why, edit] of edits) {
      edit()
      await call(why)
    }
  })

  test('tails written field by field are what JSON.stringify writes, or take the generic path', () => {
    const long = 'é'.repeat(600)
    class WithToJSON { toJSON() { return { type: 'text', text: 'from toJSON' } } }
    const withGetter = { type: 'text', get text() { return 'got' } }
    const hidden = { type: 'text', text: 'shown' }
    Object.defineProperty(hidden, 'secret', { value: 1, enumerable: false })
    const sym = { type: 'text', text: 's', [Symbol('k')]: 1 }
    const arr: any = [{ type: 'text', text: 'a' }]
    arr.extra = 1
    const tails: any[][] = [
      [],
      [{ role: 'user', content: [{ type: 'text', text: 'plain "quoted" \\ \n\u0001 😀 \ud800' }] }],
      [{ role: 'assistant', content: [{ type: 'text', text: '' }, { type: 'tool_use', id: 'c1', name: 'f', input: { b: [1, 2.5, null, true], a: { '2': 0, x: undefined } } }] }],
      [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: long }, { type: 'tool_result', tool_use_id: 'c2', content: 'x', is_error: true }, { type: 'tool_result', tool_use_id: 'c3', content: 'y', is_error: false }, { type: 'tool_result', tool_use_id: 'c4', content: 'z', is_error: undefined }] }],
      [{ role: 'user', content: [{ type: 'text', text: long }, { type: 'text', text: long + 'x' }] }, { role: 'assistant', content: [] }],
      // The generic path: other keys, orders, types and values, toJSON, undefined input.
      [{ content: [{ type: 'text', text: 'a' }], role: 'user' }],
      [{ role: 'user', content: [{ text: 'a', type: 'text' }] }],
      [{ role: 'user', content: [{ type: 'text', text: 'a', cache: 1 }] }],
      [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'x', is_error: 'yes' }] }],
      [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: [{ type: 'text', text: 't' }] }] }],
      [{ role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'f', input: undefined }] }],
      [{ role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'f', input: { toJSON: () => ({ swapped: 1 }) } }] }],
      [{ role: 'user', content: [new WithToJSON()] }],
      [{ role: 'user', content: [withGetter, hidden, sym] }],
      [{ role: 'user', content: arr }],
      [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }],
      [{ role: 'user', content: [{ type: 'text', text: 'a' }], toJSON: () => ({ role: 'user', content: [] }) }],
    ]
    // Which tails are written field by field (a toJSON inside an input, getters, hidden or
    // symbol keys and extra array properties are JSON.stringify's business only where it
    // meets them, so those stay on the fast path too).
    const st = { at: null, long: null, snaps: [] }
    const fast = tails.map((t) => t.every((m, i) => llm.messageWire(m, i, st) !== undefined))
    expect(fast.flatMap((f, n) => (f ? [n] : []))).toEqual([0, 1, 2, 3, 4, 11, 13, 14])
    for (const tail of tails) {
      const [json, long2] = llm.tailWire(tail)
      const [gjson, glong] = llm.tailWireGeneric(tail)
      expect({ tail: JSON.stringify(tail), json, long: long2 }).toEqual({ tail: JSON.stringify(tail), json: gjson, long: glong })
    }
    // Errors are JSON.stringify's own.
    const cyclic: any = { type: 'tool_use', id: 'c', name: 'f', input: {} }
    cyclic.input.self = cyclic.input
    expect(() => llm.tailWire([{ role: 'assistant', content: [cyclic] }])).toThrow(/circular/)
    expect(() => llm.tailWire([{ role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'f', input: { n: 1n } }] }])).toThrow(/BigInt/)
  })

  // Long strings of new messages cross beside their JSON (lib/llm.js `tailWire`); the message
  // list must be what the whole-JSON path (`stream`) builds from the same messages.
  test('long tool results and texts: the same message list as the whole-JSON path', async () => {
    const long = (tag: string) => `${tag} "quoted" back\\slash\nline\ttab é 😀 lone:\ud800 ${'z'.repeat(600)}`
    const withGetter = new (class { role = 'user'; get content() { return [{ type: 'text', text: long('inherited') }] } })()
    const cases: Array<[string, any[]]> = [
      ['a long text', [{ role: 'user', content: [{ type: 'text', text: long('t') }] }]],
      ['a long tool result after a call', [
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'weather', input: { city: 'Bern' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: long('r'), is_error: false }] },
      ]],
      ['several long blocks in one message', [{ role: 'user', content: [{ type: 'text', text: long('a') }, { type: 'text', text: 'short' }, { type: 'text', text: long('b') }] }]],
      ['a block with toJSON', [{ role: 'user', content: [{ type: 'text', text: long('x'), toJSON: () => ({ type: 'text', text: long('from toJSON') }) }] }]],
      ['a message with toJSON', [{ role: 'user', content: [{ type: 'text', text: long('y') }], toJSON: () => ({ role: 'user', content: [{ type: 'text', text: 'replaced' }] }) }]],
      ['an inherited content getter (not serialised)', [{ role: 'user', content: [{ type: 'text', text: 'first' }] }, withGetter]],
      ['a non-enumerable text', [{ role: 'user', content: [Object.defineProperty({ type: 'text' }, 'text', { value: long('hidden'), enumerable: false })] }]],
    ]
    for (const [why, messages] of cases) {
      const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
      server.replies.push({ json: completion({ content: 'ok' }) })
      await adapter.chat(messages, { model: 'gpt-test' })
      server.replies.push({ sse: sseData([{ id: 's', object: 'chat.completion.chunk', model: 'gpt-test', choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] }]) })
      await collect(adapter.stream(messages, { model: 'gpt-test' }))
      const [viaChat, viaStream] = server.requests.slice(-2)
      expect({ why, messages: viaChat.body.messages }).toEqual({ why, messages: viaStream.body.messages })
    }
    // The long strings arrived whole (half a surrogate pair becomes U+FFFD on both paths).
    const first = server.requests[0].body.messages[0].content
    expect(first).toBe(long('t').replace('\ud800', '\ufffd'))
  })

  test('a rejected call leaves the remembered history as it was', async () => {
    const adapter = await createAdapter('openai', 'k', `${server.url}/v1`)
    const messages: any[] = [{ role: 'user', content: [{ type: 'text', text: 'a' }] }]
    server.replies.push({ json: completion({ content: 'ok' }) })
    await adapter.chat(messages, { model: 'm' })
    const cyclic: any = { type: 'text', text: 'b' }
    cyclic.self = cyclic
    messages.push({ role: 'user', content: [cyclic] })
    await expect(adapter.chat(messages, { model: 'm' })).rejects.toThrow()
    messages[1] = { role: 'user', content: [{ type: 'text', text: 'c' }] }
    server.replies.push({ json: completion({ content: 'ok' }) })
    await adapter.chat(messages, { model: 'm' })
    expect(server.requests.at(-1)!.body.messages).toEqual([{ role: 'user', content: 'a' }, { role: 'user', content: 'c' }])
  })
})
