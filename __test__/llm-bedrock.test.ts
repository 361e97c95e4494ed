import { createAdapter } from '../lib/llm'
import { collect, eachServer, isolateEnv } from './llm-server'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import * as crypto from 'crypto'

const AWS_VARS = [
  'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE',
  'AWS_SHARED_CREDENTIALS_FILE', 'AWS_BEARER_TOKEN_BEDROCK', 'AWS_ENDPOINT_URL_BEDROCK_RUNTIME', 'AWS_ENDPOINT_URL',
]

isolateEnv(AWS_VARS, '/nonexistent-home')
const server = eachServer()
beforeEach(async () => {
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = server.url
})

afterEach(async () => {
  jest.restoreAllMocks()
})

/** One AWS event-stream message with string headers (CRCs left zero; the client does not check them). */
function frame(eventType: string, payload: unknown, messageType = 'event'): Buffer {
  const headers: Buffer[] = []
  const kv = { ':event-type': eventType, ':content-type': 'application/json', ':message-type': messageType } as Record<string, string>
  if (messageType === 'exception') {
    delete kv[':event-type']
    kv[':exception-type'] = eventType
  }
  for (const [k, v] of Object.entries(kv)) {
    const name = Buffer.from(k)
    const value = Buffer.from(v)
    const len = Buffer.alloc(2)
    len.writeUInt16BE(value.length)
    headers.push(Buffer.from([name.length]), name, Buffer.from([7]), len, value)
  }
  const h = Buffer.concat(headers)
  const body = Buffer.from(JSON.stringify(payload))
  const prelude = Buffer.alloc(12)
  prelude.writeUInt32BE(16 + h.length + body.length, 0)
  prelude.writeUInt32BE(h.length, 4)
  return Buffer.concat([prelude, h, body, Buffer.alloc(4)])
}

describe('Bedrock (Converse API)', () => {
  test('SigV4-signed converse request, region, response mapping', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE'
    process.env.AWS_SECRET_ACCESS_KEY = 'secret'
    process.env.AWS_SESSION_TOKEN = 'session'
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {})
    const adapter = await createAdapter('bedrock', undefined, 'http://ignored', 'eu-west-3')
    expect(warn).toHaveBeenCalledWith('[open-multi-agent] baseURL is ignored for bedrock; pass region as the fourth arg or set AWS_REGION.')
    expect(adapter.name).toBe('bedrock')
    expect(adapter.capabilities).toEqual({ echoesReasoning: 'own-issued' })
    server.replies.push({
      headers: { 'x-amzn-requestid': 'req-123' },
      json: {
        output: { message: { role: 'assistant', content: [{ text: 'Hello' }, { toolUse: { toolUseId: 'tu1', name: 'lookup', input: { q: 'a' } } }] } },
        stopReason: 'tool_use',
        usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15 },
      },
    })
    const res = await adapter.chat(
      [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      { model: 'anthropic.claude-3-5-sonnet-20241022-v2:0', maxTokens: 100, systemPrompt: 'S', tools: [{ name: 'lookup', description: 'L', inputSchema: { type: 'object' } }] },
    )
    const req = server.requests[0]
    expect(req.url).toBe('/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse')
    expect(req.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-3\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    )
    expect(req.headers['x-amz-security-token']).toBe('session')
    // Recompute the signature independently (AWS SigV4 documentation, non-S3 path encoding).
    const amzDate = req.headers['x-amz-date'] as string
    const date = amzDate.slice(0, 8)
    const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
    const canonicalUri = req.url.split('/').map(enc).join('/')
    const canonicalHeaders = `content-type:application/json\nhost:${req.headers.host}\nx-amz-date:${amzDate}\nx-amz-security-token:session\n`
    const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex')
    const canonicalRequest = ['POST', canonicalUri, '', canonicalHeaders, 'content-type;host;x-amz-date;x-amz-security-token', sha(req.raw)].join('\n')
    const scope = `${date}/eu-west-3/bedrock/aws4_request`
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonicalRequest)].join('\n')
    const h = (k: crypto.BinaryLike, d: string) => crypto.createHmac('sha256', k).update(d).digest()
    const kSigning = h(h(h(h('AWS4secret', date), 'eu-west-3'), 'bedrock'), 'aws4_request')
    expect((req.headers.authorization as string).endsWith(`Signature=${crypto.createHmac('sha256', kSigning).update(toSign).digest('hex')}`)).toBe(true)
    expect(req.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/)
    expect(req.body).toEqual({
      inferenceConfig: { maxTokens: 100 },
      messages: [{ role: 'user', content: [{ text: 'hi' }] }],
      system: [{ text: 'S' }],
      toolConfig: { tools: [{ toolSpec: { name: 'lookup', description: 'L', inputSchema: { json: { type: 'object' } } } }] },
    })
    expect(res).toEqual({
      id: 'req-123',
      content: [{ type: 'text', text: 'Hello' }, { type: 'tool_use', id: 'tu1', name: 'lookup', input: { q: 'a' } }],
      model: 'anthropic.claude-3-5-sonnet-20241022-v2:0',
      stop_reason: 'tool_use',
      usage: { input_tokens: 12, output_tokens: 3 },
    })
  })

  test('credential chain: API key, shared credentials file, or the SDK error', async () => {
    const adapter = await createAdapter('bedrock')
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow('Could not load credentials from any providers')
    expect(server.requests).toHaveLength(0)

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-aws-'))
    fs.writeFileSync(path.join(dir, 'credentials'), '[dev]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n')
    process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(dir, 'credentials')
    process.env.AWS_PROFILE = 'dev'
    server.replies.push({ json: { output: { message: { content: [{ text: 'x' }] } }, stopReason: 'end_turn' } })
    await (await createAdapter('bedrock')).chat([], { model: 'm' })
    expect(server.requests[0].headers.authorization).toContain('Credential=AKIDFILE/')
    fs.rmSync(dir, { recursive: true })

    process.env.AWS_BEARER_TOKEN_BEDROCK = 'bedrock-api-key'
    server.replies.push({ json: { output: { message: { content: [{ text: 'x' }] } }, stopReason: 'end_turn' } })
    await (await createAdapter('bedrock')).chat([], { model: 'm' })
    expect(server.requests[1].headers.authorization).toBe('Bearer bedrock-api-key')
  })

  test('errors use the AWS message; throttling is retried', async () => {
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'k'
    server.replies.push(
      { status: 429, headers: { 'retry-after-ms': '5' }, json: { message: 'Too many requests, please wait before trying again.' } },
      { status: 403, json: { message: 'The security token included in the request is invalid.' } },
    )
    const adapter = await createAdapter('bedrock')
    await expect(adapter.chat([], { model: 'm' })).rejects.toThrow('The security token included in the request is invalid.')
    expect(server.requests).toHaveLength(2)
  })

  test('converse-stream: binary event-stream frames split anywhere', async () => {
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'k'
    const bytes = Buffer.concat([
      frame('messageStart', { role: 'assistant' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'thinking…' } } }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'SIG' } } }),
      frame('contentBlockStop', { contentBlockIndex: 0 }),
      frame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Hi ' } }),
      frame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'there' } }),
      frame('contentBlockStop', { contentBlockIndex: 1 }),
      frame('contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tu', name: 'lookup' } } }),
      frame('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{"q":' } } }),
      frame('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '"z"}' } } }),
      frame('contentBlockStop', { contentBlockIndex: 2 }),
      frame('messageStop', { stopReason: 'tool_use' }),
      frame('metadata', { usage: { inputTokens: 7, outputTokens: 8 }, metrics: { latencyMs: 1 } }),
    ])
    server.replies.push({
      custom: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'rid' })
        let i = 0
        const next = () => {
          if (i >= bytes.length) return res.end()
          res.write(bytes.subarray(i, i + 17), () => setImmediate(next))
          i += 17
        }
        next()
      },
    })
    const adapter = await createAdapter('bedrock')
    const events = await collect(adapter.stream([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'm' }))
    expect(server.requests[0].url).toBe('/model/m/converse-stream')
    const tool = { type: 'tool_use', id: 'tu', name: 'lookup', input: { q: 'z' } }
    expect(events).toEqual([
      { type: 'reasoning', data: 'thinking…' },
      { type: 'text', data: 'Hi ' },
      { type: 'text', data: 'there' },
      { type: 'tool_use', data: tool },
      {
        type: 'done',
        data: {
          id: 'rid',
          content: [{ type: 'reasoning', text: 'thinking…', signature: 'SIG', provenance: 'bedrock' }, { type: 'text', text: 'Hi there' }, tool],
          model: 'm',
          stop_reason: 'tool_use',
          usage: { input_tokens: 7, output_tokens: 8 },
        },
      },
    ])

    server.replies.push({
      custom: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' })
        res.end(Buffer.concat([frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'a' } }), frame('throttlingException', { message: 'Slow down' }, 'exception')]))
      },
    })
    const failed = await collect(adapter.stream([], { model: 'm' }))
    expect(failed.map((e) => e.type)).toEqual(['text', 'error'])
    expect((failed[1].data as Error).message).toBe('Slow down')
  })
})
