// One redirect rule for every provider and every path (crates/llm/src/transport.rs `redirect`): a
// redirect is followed only within the configured origin (scheme, host, port), with the
// request's headers; a redirect to another origin is the call's error and nothing reaches that
// origin. Two servers on 127.0.0.1 (two ports: two origins) record the headers they receive.
// Paths: chat on the JS thread's own HTTP client (plain-HTTP endpoints), chat on the I/O
// thread's reqwest (worker threads; Bedrock and Copilot always), and stream (reqwest).
import * as path from 'path'
import { Worker } from 'worker_threads'
import { createAdapter } from '../lib/llm'
import { ANTHROPIC_MESSAGE, BEDROCK_RESPONSE, collect, eachServer, GEMINI_RESPONSE, isolateEnv, OPENAI_COMPLETION } from './llm-server'

const ENTRY = path.resolve(__dirname, '..', 'index.js')
const ask = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'private question' }] }]


/** Every variable an adapter below could read, cleared before each test. */
const VARS = [
  'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'AZURE_OPENAI_API_KEY',
  'AZURE_OPENAI_ENDPOINT', 'AZURE_OPENAI_DEPLOYMENT', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL', 'DEEPSEEK_API_KEY',
  'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_BEARER_TOKEN_BEDROCK', 'AWS_ENDPOINT_URL_BEDROCK_RUNTIME', 'AWS_ENDPOINT_URL', 'GITHUB_COPILOT_TOKEN', 'GITHUB_TOKEN', 'GITHUB_API_URL',
]

isolateEnv(VARS, '/nonexistent-home')
const home = eachServer()
const elsewhere = eachServer()

interface Case {
  /** What `createAdapter` gets; the base URL is the `home` server. */
  make: (base: string) => Promise<any>
  /** The credential header the provider sends, and its value. */
  secret: [string, string]
  reply: unknown
  /** `createAdapter(provider, 'secret', base + path)` in a worker thread (chat on the I/O
   *  thread); absent where chat always runs there or the endpoint comes from the environment. */
  worker?: [string, string]
  /** Whether `stream` throws an opening error instead of yielding it (the OpenAI family). */
  throwsOnOpen: boolean
}

/** `make()` once `vars` are set in process.env (isolateEnv clears them after the test). */
function withVars(vars: Record<string, string>, make: () => Promise<any>) {
  Object.assign(process.env, vars)
  return make()
}

const CASES: Record<string, Case> = {
  openai: { make: (b) => createAdapter('openai', 'sk-secret', `${b}/v1`), secret: ['authorization', 'Bearer sk-secret'], reply: OPENAI_COMPLETION, throwsOnOpen: true, worker: ['openai', '/v1'] },
  deepseek: { make: (b) => createAdapter('deepseek', 'ds-secret', `${b}/v1`), secret: ['authorization', 'Bearer ds-secret'], reply: OPENAI_COMPLETION, throwsOnOpen: true, worker: ['deepseek', '/v1'] },
  'azure-openai': {
    make: (b) => createAdapter('azure-openai', 'az-secret', b),
    secret: ['api-key', 'az-secret'],
    reply: OPENAI_COMPLETION,
    throwsOnOpen: true,
    worker: ['azure-openai', ''],
  },
  anthropic: { make: (b) => createAdapter('anthropic', 'ant-secret', b), secret: ['x-api-key', 'ant-secret'], reply: ANTHROPIC_MESSAGE, throwsOnOpen: false, worker: ['anthropic', ''] },
  'anthropic (auth token)': { make: (b) => withVars({ ANTHROPIC_AUTH_TOKEN: 'tok-secret' }, () => createAdapter('anthropic', undefined, b)), secret: ['authorization', 'Bearer tok-secret'], reply: ANTHROPIC_MESSAGE, throwsOnOpen: false },
  gemini: { make: (b) => withVars({ GOOGLE_GEMINI_BASE_URL: b }, () => createAdapter('gemini', 'g-secret')), secret: ['x-goog-api-key', 'g-secret'], reply: GEMINI_RESPONSE, throwsOnOpen: false },
  'bedrock (SigV4)': {
    make: (b) => withVars({ AWS_ENDPOINT_URL_BEDROCK_RUNTIME: b, AWS_ACCESS_KEY_ID: 'AKIDSECRET', AWS_SECRET_ACCESS_KEY: 'aws-secret' }, () => createAdapter('bedrock', undefined, undefined, 'us-east-1')),
    // SigV4: the signature of each request (another one for the redirected path).
    secret: ['authorization', ''],
    reply: BEDROCK_RESPONSE,
    throwsOnOpen: false,
  },
  'bedrock (bearer)': { make: (b) => withVars({ AWS_ENDPOINT_URL_BEDROCK_RUNTIME: b, AWS_BEARER_TOKEN_BEDROCK: 'br-secret' }, () => createAdapter('bedrock', undefined, undefined, 'us-east-1')), secret: ['authorization', 'Bearer br-secret'], reply: BEDROCK_RESPONSE, throwsOnOpen: false },
}

/** What a call ended with: the text, or the error's message and status. */
async function chatOutcome(adapter: any) {
  try {
    const r = await adapter.chat(ask, { model: 'm' })
    return { text: r.content.map((b: any) => b.text).join('') }
  } catch (e: any) {
    return { error: e.message, status: e.status }
  }
}

async function streamOutcome(adapter: any) {
  try {
    const events = await collect(adapter.stream(ask, { model: 'm' })) as any[]
    const last = events[events.length - 1]
    return last.type === 'error' ? { error: last.data.message, status: last.data.status, yielded: true } : { done: true }
  } catch (e: any) {
    return { error: e.message, status: e.status, yielded: false }
  }
}

/** `chat` in a worker thread: the I/O thread's reqwest stack even for plain HTTP. */
async function chatInWorker(provider: string, apiKey: string, base: string) {
  const script = `
    const { parentPort, workerData: w } = require('worker_threads')
    const { createAdapter } = require(w.entry)
    createAdapter(w.provider, w.apiKey, w.base)
      .then((a) => a.chat([{ role: 'user', content: [{ type: 'text', text: 'private question' }] }], { model: 'm' }))
      .then((r) => parentPort.postMessage({ text: r.content[0].text }), (e) => parentPort.postMessage({ error: e.message, status: e.status }))
  `
  const w = new Worker(script, { eval: true, workerData: { entry: ENTRY, provider, apiKey, base } })
  try {
    return await new Promise((resolve, reject) => {
      w.once('message', resolve)
      w.once('error', reject)
    })
  } finally {
    await w.terminate()
  }
}

const refused = (status: number) => expect.stringMatching(new RegExp(`^${status} redirect to another origin refused: http://127\\.0\\.0\\.1:\\d+ → http://127\\.0\\.0\\.1:\\d+ \\(`))

describe.each(Object.entries(CASES))('%s', (_name, c) => {
  test('a redirect to another origin is refused on every path; nothing reaches it', async () => {
    const adapter = await c.make(home.url)
    const to = (status: number) => ({ status, headers: { location: `${elsewhere.url}/stolen` }, text: '' })
    home.replies.push(to(307), to(308), to(302))
    expect(await chatOutcome(adapter)).toEqual({ error: refused(307), status: 307 })
    expect(await streamOutcome(adapter)).toEqual({ error: refused(308), status: 308, yielded: !c.throwsOnOpen })
    expect(await chatOutcome(adapter)).toEqual({ error: refused(302), status: 302 })
    // Each call asked once (no retry) and carried the credential to its own origin only.
    expect(home.requests.length).toBe(3)
    for (const r of home.requests) expect(r.headers[c.secret[0]]).toBeDefined()
    expect(elsewhere.requests).toEqual([])
  })

  test('a redirect within the origin is followed with the credential', async () => {
    const adapter = await c.make(home.url)
    home.replies.push({ status: 307, headers: { location: '/moved/here' }, text: '' }, { json: c.reply })
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    expect(home.requests.map((r) => r.url)).toEqual([home.requests[0].url, '/moved/here'])
    const [name, value] = c.secret
    if (value) expect(home.requests[1].headers[name]).toBe(value)
    else expect(home.requests[1].headers[name]).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDSECRET\//)
    expect(home.requests[1].body).toEqual(home.requests[0].body)
    expect(home.requests[1].raw).toContain('private question')
    expect(elsewhere.requests).toEqual([])
  })

  const worker = c.worker
  if (worker !== undefined) {
    test('the same on the I/O thread (chat in a worker thread)', async () => {
      const [provider, suffix] = worker
      home.replies.push({ status: 301, headers: { location: `${elsewhere.url}/stolen` }, text: '' })
      expect(await chatInWorker(provider, 'secret', home.url + suffix)).toEqual({ error: refused(301), status: 301 })
      home.replies.push({ status: 308, headers: { location: '/moved' }, text: '' }, { json: c.reply })
      expect(await chatInWorker(provider, 'secret', home.url + suffix)).toEqual({ text: 'hi' })
      expect(home.requests.map((r) => r.url).slice(2)).toEqual(['/moved'])
      expect(home.requests[2].headers[c.secret[0]]).toMatch(/secret/)
      expect(elsewhere.requests).toEqual([])
    })
  }
})

test('a redirect loop within the origin ends with a clear error on every path', async () => {
  const adapter = await createAdapter('anthropic', 'ant-secret', home.url)
  const loop = () => Array.from({ length: 11 }, () => ({ status: 302, headers: { location: '/v1/messages' }, text: '' }))
  home.replies.push(...loop())
  expect(await chatOutcome(adapter)).toEqual({ error: '302 too many redirects (more than 10)', status: 302 })
  expect(home.requests.length).toBe(11)
  home.replies.push(...loop())
  expect(await streamOutcome(adapter)).toEqual({ error: '302 too many redirects (more than 10)', status: 302, yielded: true })
  // 301 / 302 after a POST continue as a GET without the body (as fetch does); the credential
  // stays, the conversation does not travel again.
  expect(home.requests[12].method).toBe('GET')
  expect(home.requests[12].raw).toBe('')
  expect(home.requests[12].headers['x-api-key']).toBe('ant-secret')
})

test('copilot: the token exchange and the chat endpoint follow the same rule', async () => {
  process.env.GITHUB_API_URL = home.url
  const adapter = await createAdapter('copilot', 'gho_secret')
  home.replies.push({ status: 307, headers: { location: `${elsewhere.url}/token` }, text: '' })
  expect(await chatOutcome(adapter)).toEqual({ error: refused(307), status: 307 })
  expect(home.requests[0].headers.authorization).toBe('token gho_secret')
  // The exchange succeeds; the chat endpoint it names redirects elsewhere.
  const now = Math.floor(Date.now() / 1000)
  home.replies.push(
    { json: { token: 'cop-secret', expires_at: now + 1800, endpoints: { api: `${home.url}/api` } } },
    { status: 308, headers: { location: `${elsewhere.url}/chat/completions` }, text: '' },
  )
  expect(await chatOutcome(adapter)).toEqual({ error: refused(308), status: 308 })
  expect(home.requests[2].headers.authorization).toBe('Bearer cop-secret')
  expect(elsewhere.requests).toEqual([])
})
