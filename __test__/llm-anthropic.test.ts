import { createAdapter, LLMMessage, LLMResponse } from '../lib/llm'
import { collect, eachServer, isolateEnv, sseEvents } from './llm-server'

isolateEnv(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL'])
const server = eachServer()

const message = (content: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-test',
  content,
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 3 },
  ...extra,
})

const tools = [{ name: 'lookup', description: 'Look up', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }]

const history: LLMMessage[] = [
  { role: 'user', content: [{ type: 'text', text: 'Find x' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/' } }] },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'let me think', signature: 'sig-1', provenance: 'anthropic' },
      { type: 'reasoning', text: '', redactedData: 'opaque', provenance: 'anthropic' },
      { type: 'reasoning', text: 'foreign thought', provenance: 'openai' },
      { type: 'text', text: 'Looking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found', is_error: true }] },
]

describe('Anthropic chat', () => {
  test('golden request body, headers and response mapping', async () => {
    server.replies.push({
      json: message(
        [
          { type: 'thinking', thinking: 'deliberating', signature: 'sig-2' },
          { type: 'redacted_thinking', data: 'xyz' },
          { type: 'text', text: 'Here.' },
          { type: 'tool_use', id: 'toolu_2', name: 'lookup', input: { q: 'y' } },
          { type: 'web_search_tool_result', content: [] },
        ],
        { stop_reason: 'tool_use' },
      ),
    })
    const adapter = await createAdapter('anthropic', 'sk-ant', server.url)
    expect(adapter.name).toBe('anthropic')
    expect(adapter.capabilities).toEqual({ echoesReasoning: 'own-issued' })
    const res = await adapter.chat(history, {
      model: 'claude-test',
      tools,
      temperature: 0.3,
      topK: 5,
      minP: 0.1,
      frequencyPenalty: 1,
      extraBody: { top_k: 9, metadata: { user_id: 'u' }, system: 'overridden', model: 'overridden' },
      systemPrompt: '',
      thinking: { enabled: true, budgetTokens: 2048 },
      preserveReasoningAsText: true,
    })
    const req = server.requests[0]
    expect(req.url).toBe('/v1/messages')
    expect(req.headers['x-api-key']).toBe('sk-ant')
    expect(req.headers['anthropic-version']).toBe('2023-06-01')
    const golden = {
      max_tokens: 4096,
      temperature: 0.3,
      top_k: 9,
      metadata: { user_id: 'u' },
      system: '',
      model: 'claude-test',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Find x' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/' } }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'let me think', signature: 'sig-1' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: '<thinking>foreign thought</thinking>' },
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found', is_error: true }] },
      ],
      tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      thinking: { type: 'enabled', budget_tokens: 2048 },
    }
    expect(req.raw).toBe(JSON.stringify(golden))
    expect(res).toEqual({
      id: 'msg_1',
      content: [
        { type: 'reasoning', text: 'deliberating', signature: 'sig-2', provenance: 'anthropic' },
        { type: 'reasoning', text: '', redactedData: 'xyz', provenance: 'anthropic' },
        { type: 'text', text: 'Here.' },
        { type: 'tool_use', id: 'toolu_2', name: 'lookup', input: { q: 'y' } },
        { type: 'text', text: '[unsupported block type: web_search_tool_result]' },
      ],
      model: 'claude-test',
      stop_reason: 'tool_use',
      usage: { input_tokens: 20, output_tokens: 5 },
    })
  })

  test('errors thrown before any request: thinking budget, unknown block type', async () => {
    const adapter = await createAdapter('anthropic', 'k', server.url)
    await expect(adapter.chat([], { model: 'c', thinking: { enabled: true, budgetTokens: 1000 } })).rejects.toThrow(
      '[anthropic] thinking.budgetTokens must be >= 1024 (got 1000); the Anthropic API enforces this minimum.',
    )
    await expect(
      adapter.chat([], { model: 'c', maxTokens: 3000, thinking: { enabled: true, budgetTokens: 3000 }, extraBody: { max_tokens: 64000 } }),
    ).rejects.toThrow(
      '[anthropic] thinking.budgetTokens (3000) must be < maxTokens (3000); the Anthropic API rejects requests where budget_tokens >= max_tokens. Either lower thinking.budgetTokens or raise maxTokens.',
    )
    const bad = [{ role: 'user', content: [{ type: 'document', url: 'x' }] }] as any
    await expect(adapter.chat(bad, { model: 'c' })).rejects.toThrow('Unhandled content block type: {"type":"document","url":"x"}')
    // stream: the same errors are thrown from the iterator
    await expect(collect(adapter.stream(bad, { model: 'c' }))).rejects.toThrow('Unhandled content block type')
    expect(server.requests).toHaveLength(0)
  })

  test('HTTP errors carry the JSON of the whole body; overloaded is retried', async () => {
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }
    server.replies.push(
      { status: 529, headers: { 'retry-after-ms': '5' }, json: body },
      { status: 529, headers: { 'retry-after-ms': '5' }, json: body },
      { status: 529, headers: { 'retry-after-ms': '5' }, json: body },
    )
    const adapter = await createAdapter('anthropic', 'k', server.url)
    const err = await adapter.chat([], { model: 'c' }).catch((e) => e)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe(`529 ${JSON.stringify(body)}`)
    expect(server.requests).toHaveLength(3)
  })

  test('credentials: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, or the SDK error', async () => {
    process.env.ANTHROPIC_BASE_URL = server.url
    const none = await createAdapter('anthropic')
    await expect(none.chat([], { model: 'c' })).rejects.toThrow(
      'Could not resolve authentication method. Expected either apiKey or authToken to be set. Or for one of the "X-Api-Key" or "Authorization" headers to be explicitly omitted',
    )
    const events = await collect(none.stream([], { model: 'c' }))
    expect(events).toHaveLength(1)
    expect(events[0].type).toBe('error')
    expect(server.requests).toHaveLength(0)

    process.env.ANTHROPIC_AUTH_TOKEN = 'tok'
    server.replies.push({ json: message([{ type: 'text', text: 'ok' }]) })
    await (await createAdapter('anthropic')).chat([], { model: 'c' })
    expect(server.requests[0].headers.authorization).toBe('Bearer tok')
    expect(server.requests[0].headers['x-api-key']).toBeUndefined()
  })
})

describe('Anthropic stream', () => {
  const streamEvents = [
    { event: 'message_start', data: { type: 'message_start', message: message([], { stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } }) } },
    { event: 'ping', data: { type: 'ping' } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'step 1' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-s' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi ' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'there' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_s', name: 'lookup', input: {} } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"q": "st' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'ream"}' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 2 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]

  test('events, tool input assembly and the final message', async () => {
    // Split the CRLF stream at awkward places, including between \r and \n.
    const whole = sseEvents(streamEvents).join('')
    const pieces: string[] = []
    for (let i = 0; i < whole.length; i += 13) pieces.push(whole.slice(i, i + 13))
    server.replies.push({ sse: pieces })
    const adapter = await createAdapter('anthropic', 'k', server.url)
    const events = await collect(adapter.stream([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'claude-test', tools }))
    expect(server.requests[0].body.stream).toBe(true)
    const done: LLMResponse = {
      id: 'msg_1',
      content: [
        { type: 'reasoning', text: 'step 1', signature: 'sig-s', provenance: 'anthropic' },
        { type: 'text', text: 'Hi there' },
        { type: 'tool_use', id: 'toolu_s', name: 'lookup', input: { q: 'stream' } },
      ],
      model: 'claude-test',
      stop_reason: 'tool_use',
      usage: { input_tokens: 12, output_tokens: 30 },
    }
    expect(events).toEqual([
      { type: 'reasoning', data: 'step 1' },
      { type: 'text', data: 'Hi ' },
      { type: 'text', data: 'there' },
      { type: 'tool_use', data: { type: 'tool_use', id: 'toolu_s', name: 'lookup', input: { q: 'stream' } } },
      { type: 'done', data: done },
    ])
  })

  test('HTTP errors and error events are yielded, not thrown', async () => {
    server.replies.push({ status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } } })
    const adapter = await createAdapter('anthropic', 'k', server.url)
    const events = await collect(adapter.stream([], { model: 'c' }))
    expect(events).toHaveLength(1)
    expect(events[0].type).toBe('error')
    expect((events[0].data as Error).message).toBe('400 {"type":"error","error":{"type":"invalid_request_error","message":"bad"}}')

    server.replies.push({
      sse: sseEvents([
        streamEvents[0],
        { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
      ]),
    })
    const events2 = await collect(adapter.stream([], { model: 'c' }))
    expect(events2).toHaveLength(1)
    expect((events2[0].data as Error).message).toBe('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
  })

  test('a connection cut mid-stream and an abort are error events', async () => {
    server.replies.push({ sse: sseEvents(streamEvents.slice(0, 8)), cut: true })
    const adapter = await createAdapter('anthropic', 'k', server.url)
    const events = await collect(adapter.stream([], { model: 'c' }))
    expect(events.map((e) => e.type)).toEqual(['reasoning', 'text', 'error'])
    expect((events[2].data as Error).message).toBe('Connection error.')

    const controller = new AbortController()
    server.replies.push({ hang: true, onRequest: () => controller.abort() })
    const aborted = await collect(adapter.stream([], { model: 'c', abortSignal: controller.signal }))
    expect(aborted).toHaveLength(1)
    expect((aborted[0].data as Error).message).toBe('Request was aborted.')
  })

  test('a tool loop keeps thinking blocks with their signatures', async () => {
    server.replies.push(
      { json: message([{ type: 'thinking', thinking: 'plan', signature: 'S' }, { type: 'tool_use', id: 'toolu_a', name: 'lookup', input: { q: 'a' } }], { stop_reason: 'tool_use' }) },
      { json: message([{ type: 'text', text: 'done' }]) },
    )
    const adapter = await createAdapter('anthropic', 'k', server.url)
    const messages: LLMMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'go' }] }]
    const r1 = await adapter.chat(messages, { model: 'c', tools })
    messages.push({ role: 'assistant', content: r1.content })
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' }] })
    const r2 = await adapter.chat(messages, { model: 'c', tools })
    expect(r2.stop_reason).toBe('end_turn')
    expect(server.requests[1].body.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'thinking', thinking: 'plan', signature: 'S' }, { type: 'tool_use', id: 'toolu_a', name: 'lookup', input: { q: 'a' } }],
    })
  })
})
