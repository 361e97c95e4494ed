import { createAdapter, LLMMessage } from '../lib/llm'
import { collect, eachServer, isolateEnv, sseData } from './llm-server'

isolateEnv(['GEMINI_API_KEY', 'GOOGLE_API_KEY'])
const server = eachServer()
beforeEach(async () => {
  process.env.GOOGLE_GEMINI_BASE_URL = server.url
})

const tools = [{ name: 'search', description: 'Search', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' } }]

const response = (parts: unknown[], finishReason = 'STOP') => ({
  candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }],
  usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4, thoughtsTokenCount: 2, totalTokenCount: 15 },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'resp-1',
})

describe('Gemini', () => {
  test('key chain, golden request and response mapping with thought signatures', async () => {
    await expect(createAdapter('gemini')).rejects.toThrow(/GEMINI_API_KEY/)
    process.env.GOOGLE_API_KEY = 'g-key'
    const adapter = await createAdapter('gemini', undefined, 'http://ignored.example')
    expect(adapter.name).toBe('gemini')
    expect(adapter.capabilities).toEqual({ echoesReasoning: 'own-issued' })
    server.replies.push({
      json: response([
        { text: 'considering', thought: true, thoughtSignature: 'TS1' },
        { text: 'Searching.' },
        { functionCall: { name: 'search', args: { q: 'rust' } }, thoughtSignature: 'TS2' },
      ]),
    })
    const history: LLMMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'find rust' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA=' } }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'old', signature: 'OLD', provenance: 'gemini' }, { type: 'tool_use', id: 'c0', name: 'search', input: { q: 'x' }, signature: 'SIG0' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c0', content: 'no hits', is_error: true }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'not mine', provenance: 'anthropic' }] },
    ]
    const res = await adapter.chat(history, { model: 'gemini-2.5-flash', tools, systemPrompt: 'Be terse.', maxTokens: 256, temperature: 0, topP: 0.5 })
    const req = server.requests[0]
    expect(req.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent')
    expect(req.headers['x-goog-api-key']).toBe('g-key')
    const golden = {
      generationConfig: { maxOutputTokens: 256, temperature: 0, topP: 0.5 },
      contents: [
        { role: 'user', parts: [{ text: 'find rust' }, { inlineData: { mimeType: 'image/png', data: 'AAA=' } }] },
        {
          role: 'model',
          parts: [
            { text: 'old', thought: true, thoughtSignature: 'OLD' },
            { functionCall: { id: 'c0', name: 'search', args: { q: 'x' } }, thoughtSignature: 'SIG0' },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { id: 'c0', name: 'search', response: { error: 'no hits' } } }] },
      ],
      systemInstruction: { parts: [{ text: 'Be terse.' }] },
      tools: [{ functionDeclarations: [{ name: 'search', description: 'Search', parametersJsonSchema: tools[0].inputSchema }] }],
    }
    expect(req.raw).toBe(JSON.stringify(golden))
    expect(res.id).toBe('resp-1')
    expect(res.model).toBe('gemini-2.5-flash')
    expect(res.stop_reason).toBe('tool_use')
    expect(res.usage).toEqual({ input_tokens: 9, output_tokens: 6 })
    expect(res.content.slice(0, 2)).toEqual([
      { type: 'reasoning', text: 'considering', signature: 'TS1', provenance: 'gemini' },
      { type: 'text', text: 'Searching.' },
    ])
    expect(res.content[2]).toMatchObject({ type: 'tool_use', name: 'search', input: { q: 'rust' }, signature: 'TS2' })
    expect(typeof (res.content[2] as any).id).toBe('string')
  })

  test('stream: SSE chunks, thinking config, usage and the final response', async () => {
    server.replies.push({
      sse: sseData(
        [
          { candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }] },
          { candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] } }] },
          {
            candidates: [{ content: { role: 'model', parts: [{ functionCall: { id: 'fc-1', name: 'search', args: { q: 'z' } } }] }, finishReason: 'STOP' }],
            usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 8 },
            modelVersion: 'gemini-x',
          },
        ],
        { done: false, split: 11 },
      ),
    })
    const adapter = await createAdapter('gemini', 'k')
    const events = await collect(adapter.stream([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'models/gemini-x', thinking: { enabled: true, budgetTokens: 512 } }))
    expect(server.requests[0].url).toBe('/v1beta/models/gemini-x:streamGenerateContent?alt=sse')
    expect(server.requests[0].body.generationConfig).toEqual({ thinkingConfig: { includeThoughts: true, thinkingBudget: 512 } })
    const call = { type: 'tool_use', id: 'fc-1', name: 'search', input: { q: 'z' } }
    expect(events).toEqual([
      { type: 'text', data: 'Hel' },
      { type: 'text', data: 'lo' },
      { type: 'tool_use', data: call },
      {
        type: 'done',
        data: { id: '', content: [{ type: 'text', text: 'Hello' }, call], model: 'gemini-x', stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 8 } },
      },
    ])
  })

  test('errors: `<status> <message>` and yielded stream errors', async () => {
    const body = { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } }
    server.replies.push({ status: 400, json: body }, { status: 400, json: body })
    const adapter = await createAdapter('gemini', 'bad')
    await expect(adapter.chat([], { model: 'g' })).rejects.toThrow('400 API key not valid. Please pass a valid API key.')
    const events = await collect(adapter.stream([], { model: 'g' }))
    expect(events).toHaveLength(1)
    expect((events[0].data as Error).message).toBe('400 API key not valid. Please pass a valid API key.')
    server.replies.push({ json: { promptFeedback: { blockReason: 'SAFETY' } } })
    await expect(adapter.chat([], { model: 'g' })).rejects.toThrow('Gemini returned no candidates (blockReason: SAFETY)')
  })
})
