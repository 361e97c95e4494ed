// Egress policy (upstream 1.16), enforced by the kernel's transport (crates/llm/src/egress.rs and
// transport::send): createAdapter's fifth argument and AgentConfig.egressPolicy. Servers on
// 127.0.0.1 only: two ports are two origins, one allowed. A refused request must never reach the
// other server: a listener there records the peer of each connection it accepts, and a probe that
// connects after the call must be the first it sees. Paths: chat on the JS thread's own HTTP client
// (plain-HTTP endpoints on the main thread), stream and worker threads (reqwest on the I/O thread),
// Bedrock and Copilot (always the I/O thread).
import * as http from 'http'
import * as net from 'net'
import * as path from 'path'
import { Worker } from 'worker_threads'
import { Agent, EgressPolicyError, ToolExecutor, ToolRegistry, createAdapter, isRetryableError } from '../index'
import { BEDROCK_RESPONSE, collect, eachServer, GEMINI_RESPONSE, isolateEnv, OPENAI_COMPLETION } from './llm-server'

const ENTRY = path.resolve(__dirname, '..', 'index.js')
const ask = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'private question' }] }]

const VARS = [
  'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'AZURE_OPENAI_API_KEY',
  'AZURE_OPENAI_ENDPOINT', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL', 'AWS_REGION', 'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_SHARED_CREDENTIALS_FILE', 'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_ENDPOINT_URL_BEDROCK_RUNTIME', 'AWS_ENDPOINT_URL', 'GITHUB_COPILOT_TOKEN', 'GITHUB_TOKEN', 'GITHUB_API_URL',
  'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy',
]

/** An HTTP server that answers every request with an OpenAI completion and records the remote
 *  port of every connection it accepts. */
interface Watched {
  url: string
  peers: number[]
  /** Resolves once at least `n` connections were accepted. */
  accepted(n: number): Promise<void>
  close(): Promise<void>
}

async function watchedServer(): Promise<Watched> {
  const peers: number[] = []
  const waiting: Array<() => void> = []
  const sockets = new Set<net.Socket>()
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(OPENAI_COMPLETION))
  })
  server.on('connection', (s) => {
    peers.push(s.remotePort!)
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    for (const w of waiting.splice(0)) w()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  const accepted = (n: number): Promise<void> =>
    peers.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(() => resolve(accepted(n))))
  return {
    url: `http://127.0.0.1:${port}`,
    peers,
    accepted,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    }),
  }
}

/** `w` has accepted no connection: a probe connecting now is the first one it accepts. */
async function expectNeverConnected(w: Watched): Promise<void> {
  const probe = net.connect(Number(new URL(w.url).port), '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    probe.once('connect', resolve)
    probe.once('error', reject)
  })
  const mine = probe.localPort
  await w.accepted(1)
  probe.destroy()
  expect(w.peers[0]).toBe(mine)
}

let other: Watched

isolateEnv(VARS, '/nonexistent-home')
const home = eachServer()
beforeEach(async () => {
  other = await watchedServer()
})

afterEach(async () => {
  await other.close()
  jest.restoreAllMocks()
})

const allowHome = () => ({ mode: 'allowlist' as const, allowedOrigins: [home.url] })
const denied = (provider: string, origin: string) => `Egress policy denied framework-owned provider "${provider}" request to ${origin}.`
const refusedRedirect = (status: number, from: string, to: string) =>
  `${status} redirect refused under the egress policy: ${from} → ${to} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)`

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

async function chatOutcome(adapter: any) {
  try {
    const r = await adapter.chat(ask, { model: 'm' })
    return { text: r.content.map((b: any) => b.text).join('') }
  } catch (e: any) {
    return { error: e.message, status: e.status, name: e.name }
  }
}

describe('createAdapter(…, egressPolicy)', () => {
  test('a target outside the allowlist is refused before any I/O; the allowed origin works', async () => {
    const err = await rejection(createAdapter('openai', 'sk-secret', `${other.url}/v1`, undefined, allowHome()))
    expect(err).toBeInstanceOf(EgressPolicyError)
    expect(err).toBeInstanceOf(Error)
    expect(err.message).toBe(denied('openai', other.url))
    expect({ name: err.name, reason: err.reason, code: err.code, provider: err.provider, origin: err.origin }).toEqual({
      name: 'EgressPolicyError', reason: 'denied', code: 'EGRESS_POLICY_DENIED', provider: 'openai', origin: other.url,
    })
    expect(isRetryableError(err)).toBe(false)
    await expectNeverConnected(other)

    home.replies.push({ json: OPENAI_COMPLETION }, { json: OPENAI_COMPLETION })
    const adapter = await createAdapter('openai', 'sk-secret', `${home.url}/v1`, undefined, allowHome())
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    // The allowlist entry is an origin: any path under it is allowed.
    const deeper = await createAdapter('openai', 'sk-secret', `${home.url}/some/deeper/path`, undefined, allowHome())
    expect(await chatOutcome(deeper)).toEqual({ text: 'hi' })
    expect(home.requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/some/deeper/path/chat/completions'])
  })

  test('the port is part of the origin; the default port is elided', async () => {
    const port = Number(new URL(home.url).port)
    const policy = { mode: 'allowlist' as const, allowedOrigins: [`http://127.0.0.1:${port + 1 === 65536 ? 1 : port + 1}`, 'http://127.0.0.1:80'] }
    const err = await rejection(createAdapter('openai', 'k', `${home.url}/v1`, undefined, policy))
    expect(err.message).toBe(denied('openai', home.url))
    // http://127.0.0.1:80 normalised to http://127.0.0.1: the same origin as a URL without a port.
    const noPort = await rejection(createAdapter('openai', 'k', 'http://127.0.0.1/v1', undefined, { mode: 'allowlist', allowedOrigins: ['https://127.0.0.1'] }))
    expect(noPort.origin).toBe('http://127.0.0.1')
    await expect(createAdapter('openai', 'k', 'http://127.0.0.1:80/v1', undefined, policy)).resolves.toBeDefined()
  })

  test('offline allows loopback by name and address, and nothing else', async () => {
    home.replies.push({ json: OPENAI_COMPLETION }, { json: OPENAI_COMPLETION })
    const port = new URL(home.url).port
    for (const base of [`http://127.0.0.1:${port}/v1`, `http://localhost:${port}/v1`]) {
      const adapter = await createAdapter('openai', 'k', base, undefined, { mode: 'offline' })
      expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    }
    expect(home.requests.length).toBe(2)
    for (const [base, origin] of [
      ['https://api.openai.com/v1', 'https://api.openai.com'],
      ['http://10.0.0.1:8080/v1', 'http://10.0.0.1:8080'],
      ['http://192.168.1.2/v1', 'http://192.168.1.2'],
    ]) {
      const err = await rejection(createAdapter('openai', 'k', base, undefined, { mode: 'offline' }))
      expect([err.constructor, err.message, err.origin]).toEqual([EgressPolicyError, denied('openai', origin), origin])
    }
    // Each provider's default endpoint is what is checked without a baseURL.
    for (const [provider, origin] of [['anthropic', 'https://api.anthropic.com'], ['deepseek', 'https://api.deepseek.com'], ['qiniu', 'https://api.qnaigc.com']]) {
      expect((await rejection(createAdapter(provider as any, 'k', undefined, undefined, { mode: 'offline' }))).message).toBe(denied(provider, origin))
    }
  })

  test('an explicit baseURL is checked before the environment; the environment without one', async () => {
    process.env.OPENAI_BASE_URL = `${home.url}/v1`
    const err = await rejection(createAdapter('openai', 'k', `${other.url}/v1`, undefined, allowHome()))
    expect(err.message).toBe(denied('openai', other.url))
    home.replies.push({ json: OPENAI_COMPLETION })
    const adapter = await createAdapter('openai', 'k', undefined, undefined, allowHome())
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    await expectNeverConnected(other)
  })

  test('azure-openai without an endpoint: unresolved-target, whatever else is missing', async () => {
    const err = await rejection(createAdapter('azure-openai', undefined, undefined, undefined, { mode: 'offline' }))
    expect(err).toBeInstanceOf(EgressPolicyError)
    expect([err.reason, err.code, err.provider, err.origin]).toEqual(['unresolved-target', 'EGRESS_POLICY_TARGET_UNRESOLVED', 'azure-openai', undefined])
    expect(err.message).toBe('Egress policy cannot resolve provider "azure-openai" target: set AgentConfig.baseURL or the provider-specific endpoint environment variable.')
    // With an allowed endpoint, the adapter is made (and talks to it).
    home.replies.push({ json: OPENAI_COMPLETION })
    process.env.AZURE_OPENAI_DEPLOYMENT = 'dep'
    const azure = await createAdapter('azure-openai', 'az', home.url, undefined, allowHome())
    expect(await chatOutcome(azure)).toEqual({ text: 'hi' })
  })

  test('every invalid policy is refused with upstream\'s text', async () => {
    const cases: Array<[unknown, string]> = [
      [null, 'expected an object.'],
      ['offline', 'expected an object.'],
      [[{ mode: 'offline' }], 'expected an object.'],
      [{ mode: 'offline', allowedOrigins: [] }, 'offline policy contains unsupported field: allowedOrigins.'],
      [{ mode: 'offline', a: 1, b: 2 }, 'offline policy contains unsupported fields: a, b.'],
      [{}, 'mode must be "offline" or "allowlist".'],
      [{ mode: 'OFFLINE' }, 'mode must be "offline" or "allowlist".'],
      [{ mode: 'allowlist' }, 'allowedOrigins must be an array of exact origins.'],
      [{ mode: 'allowlist', allowedOrigins: 'https://a.test', extra: 1 }, 'allowedOrigins must be an array of exact origins.'],
      [{ mode: 'allowlist', allowedOrigins: [], extra: 1 }, 'allowlist policy contains unsupported field: extra.'],
      [{ mode: 'allowlist', allowedOrigins: ['https://a.test', 42] }, 'allowedOrigins[1] must be a non-empty string.'],
      [{ mode: 'allowlist', allowedOrigins: ['  '] }, 'allowedOrigins[0] must be a non-empty string.'],
      [{ mode: 'allowlist', allowedOrigins: ['api.example.test'] }, 'allowedOrigins[0] must be an absolute HTTP(S) URL.'],
      [{ mode: 'allowlist', allowedOrigins: ['ftp://files.test'] }, 'allowedOrigins[0] must use http: or https:.'],
      [{ mode: 'allowlist', allowedOrigins: ['https://user:secret@api.example.test'] }, 'allowedOrigins[0] must not contain credentials.'],
      [{ mode: 'allowlist', allowedOrigins: ['https://api.example.test/v1'] }, 'allowedOrigins[0] must be an origin without a path, query string, or fragment.'],
      [{ mode: 'allowlist', allowedOrigins: ['https://api.example.test?x=1'] }, 'allowedOrigins[0] must be an origin without a path, query string, or fragment.'],
    ]
    for (const [policy, detail] of cases) {
      const err = await rejection(createAdapter('openai', 'k', `${home.url}/v1`, undefined, policy as any))
      expect([err.constructor, err.message, err.reason, err.code]).toEqual([EgressPolicyError, `Invalid egress policy: ${detail}`, 'invalid-policy', 'INVALID_EGRESS_POLICY'])
      expect([err.provider, err.origin]).toEqual([undefined, undefined])
    }
    expect(home.requests).toEqual([])
    // The policy is read before anything else: an unknown provider is not reported first.
    expect((await rejection(createAdapter('nope' as any, 'k', undefined, undefined, null as any))).message).toBe('Invalid egress policy: expected an object.')
  })

  test('without a policy: as before (undefined is no policy)', async () => {
    home.replies.push({ json: OPENAI_COMPLETION })
    const adapter = await createAdapter('openai', 'k', `${home.url}/v1`, undefined, undefined)
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
  })
})

describe('every request is checked; no redirect is followed', () => {
  test('a redirect to another origin, or within the allowed one, is refused on chat and stream', async () => {
    const adapter = await createAdapter('openai', 'sk-secret', `${home.url}/v1`, undefined, allowHome())
    const away = (status: number) => ({ status, headers: { location: `${other.url}/stolen` }, text: '' })
    home.replies.push(away(307), away(302), { status: 308, headers: { location: '/v1/moved' }, text: '' })
    expect(await chatOutcome(adapter)).toEqual({ error: refusedRedirect(307, home.url, other.url), status: 307, name: 'Error' })
    // The OpenAI family throws a stream's opening error.
    const streamErr = await rejection(collect(adapter.stream(ask, { model: 'm' })))
    expect([streamErr.message, streamErr.status]).toEqual([refusedRedirect(302, home.url, other.url), 302])
    expect(await chatOutcome(adapter)).toEqual({ error: refusedRedirect(308, home.url, home.url), status: 308, name: 'Error' })
    // One request per call (not retried, not followed), nothing elsewhere.
    expect(home.requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions'])
    await expectNeverConnected(other)
  })

  test('the same on the I/O thread (chat in a worker thread)', async () => {
    home.replies.push({ status: 301, headers: { location: `${other.url}/stolen` }, text: '' }, { json: OPENAI_COMPLETION })
    const inWorker = (base: string) => {
      const script = `
        const { parentPort, workerData: w } = require('worker_threads')
        const { createAdapter } = require(w.entry)
        createAdapter('openai', 'secret', w.base, undefined, w.policy)
          .then((a) => a.chat([{ role: 'user', content: [{ type: 'text', text: 'q' }] }], { model: 'm' }))
          .then((r) => parentPort.postMessage({ text: r.content[0].text }), (e) => parentPort.postMessage({ error: e.message, status: e.status, name: e.name, code: e.code }))
      `
      const w = new Worker(script, { eval: true, workerData: { entry: ENTRY, base, policy: allowHome() } })
      return new Promise((resolve, reject) => {
        w.once('message', resolve)
        w.once('error', reject)
      }).finally(() => w.terminate())
    }
    expect(await inWorker(`${home.url}/v1`)).toEqual({ error: refusedRedirect(301, home.url, other.url), status: 301, name: 'Error' })
    expect(await inWorker(`${home.url}/v1`)).toEqual({ text: 'hi' })
    expect(await inWorker(`${other.url}/v1`)).toEqual({ error: denied('openai', other.url), name: 'EgressPolicyError', code: 'EGRESS_POLICY_DENIED' })
    await expectNeverConnected(other)
  })

  test('Copilot: the token exchange is checked, and so is the chat endpoint it names', async () => {
    process.env.GITHUB_TOKEN = 'gho_secret'
    process.env.GITHUB_API_URL = home.url
    // Its chat endpoint (https://api.githubcopilot.com until the exchange names one) must be allowed too.
    expect((await rejection(createAdapter('copilot', undefined, undefined, undefined, allowHome()))).message).toBe(denied('copilot', 'https://api.githubcopilot.com'))
    const policy = { mode: 'allowlist' as const, allowedOrigins: [home.url, 'https://api.githubcopilot.com'] }
    const adapter = await createAdapter('copilot', undefined, undefined, undefined, policy)
    const now = Math.floor(Date.now() / 1000)
    home.replies.push({ json: { token: 'cop', expires_at: now + 1800, endpoints: { api: other.url } } })
    expect(await chatOutcome(adapter)).toEqual({ error: denied('copilot', other.url), name: 'EgressPolicyError', status: undefined })
    expect(home.requests.map((r) => r.url)).toEqual(['/copilot_internal/v2/token'])
    await expectNeverConnected(other)
  })
})

describe('Bedrock and Gemini are enforced (upstream refuses them as unsupported)', () => {
  test('gemini: allowed endpoint served, another refused before any I/O', async () => {
    process.env.GOOGLE_GEMINI_BASE_URL = home.url
    home.replies.push({ json: GEMINI_RESPONSE }, { status: 307, headers: { location: '/elsewhere' }, text: '' })
    const adapter = await createAdapter('gemini', 'g-secret', undefined, undefined, allowHome())
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    expect(await chatOutcome(adapter)).toEqual({ error: refusedRedirect(307, home.url, home.url), status: 307, name: 'Error' })
    process.env.GOOGLE_GEMINI_BASE_URL = other.url
    expect((await rejection(createAdapter('gemini', 'g-secret', undefined, undefined, allowHome()))).message).toBe(denied('gemini', other.url))
    delete process.env.GOOGLE_GEMINI_BASE_URL
    expect((await rejection(createAdapter('gemini', 'g-secret', undefined, undefined, { mode: 'offline' }))).message).toBe(denied('gemini', 'https://generativelanguage.googleapis.com'))
    await expectNeverConnected(other)
  })

  test('bedrock: allowed endpoint served (chat and stream), another refused before any I/O', async () => {
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'br-secret'
    process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = home.url
    home.replies.push({ json: BEDROCK_RESPONSE }, { status: 302, headers: { location: `${other.url}/x` }, text: '' })
    const adapter = await createAdapter('bedrock', undefined, undefined, 'us-east-1', allowHome())
    expect(await chatOutcome(adapter)).toEqual({ text: 'hi' })
    // Bedrock yields a stream's errors.
    const events = await collect(adapter.stream(ask, { model: 'm' })) as any[]
    expect(events.map((e) => [e.type, e.data.message])).toEqual([['error', refusedRedirect(302, home.url, other.url)]])
    expect(home.requests.map((r) => r.url)).toEqual(['/model/m/converse', '/model/m/converse-stream'])
    process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = other.url
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {})
    expect((await rejection(createAdapter('bedrock', undefined, 'http://ignored', 'us-east-1', allowHome()))).message).toBe(denied('bedrock', other.url))
    // The policy's verdict comes first: nothing about the ignored baseURL.
    expect(warn).not.toHaveBeenCalled()
    delete process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME
    expect((await rejection(createAdapter('bedrock', undefined, undefined, 'eu-west-3', { mode: 'offline' }))).message).toBe(denied('bedrock', 'https://bedrock-runtime.eu-west-3.amazonaws.com'))
    await expectNeverConnected(other)
  })
})

describe('AgentConfig.egressPolicy', () => {
  const agentWith = (config: Record<string, unknown>) => {
    const registry = new ToolRegistry()
    return new Agent({ name: 'policy-agent', model: 'm', ...config } as any, registry, new ToolExecutor(registry))
  }

  test('a denied provider target: a failed result (1.7 shape), no I/O; an allowed one runs', async () => {
    const agent = agentWith({ provider: 'openai', apiKey: 'k', baseURL: `${other.url}/v1`, egressPolicy: allowHome() })
    const r = await agent.run('hello')
    expect(r).toEqual({
      success: false, output: denied('openai', other.url), messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 }, toolCalls: [], structured: undefined,
    })
    const state = agent.getState()
    expect(state.status).toBe('error')
    expect(state.error).toBeInstanceOf(EgressPolicyError)
    // stream reports it as its error event.
    const events = await collect(agent.stream('hello')) as any[]
    expect(events.map((e) => e.type)).toEqual(['error'])
    expect(events[0].data).toBeInstanceOf(EgressPolicyError)
    await expectNeverConnected(other)

    // An allowed target runs (the kernel's native run path); a redirect there is refused.
    home.replies.push({ json: OPENAI_COMPLETION }, { status: 307, headers: { location: `${other.url}/v1/chat/completions` }, text: '' })
    const allowed = agentWith({ provider: 'openai', apiKey: 'k', baseURL: `${home.url}/v1`, egressPolicy: allowHome() })
    const ok = await allowed.run('hello')
    expect([ok.success, ok.output]).toEqual([true, 'hi'])
    const redirected = await allowed.run('hello')
    expect([redirected.success, redirected.output]).toEqual([false, refusedRedirect(307, home.url, other.url)])
    expect(home.requests.length).toBe(2)
  })

  test('a custom adapter under a policy is refused as unsupported; its chat is never called', async () => {
    const chat = jest.fn()
    const adapter = { name: 'custom-http-adapter', chat, async *stream() { throw new Error('must not run') } }
    const agent = agentWith({ adapter, egressPolicy: { mode: 'offline' } })
    const r = await agent.run('hello')
    expect([r.success, r.output, r.toolCalls]).toEqual([
      false,
      'Egress policy cannot enforce provider "custom-http-adapter": custom and AI SDK adapters do not expose an enforceable request transport or target contract to OMA.',
      [],
    ])
    const err: any = agent.getState().error
    expect([err.constructor, err.reason, err.code, err.provider, err.origin]).toEqual([EgressPolicyError, 'unsupported', 'EGRESS_POLICY_UNSUPPORTED', 'custom-http-adapter', undefined])
    expect(chat).not.toHaveBeenCalled()
    // Without a policy the same adapter is used as before.
    chat.mockResolvedValue({ id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text: 'fine' }] })
    expect((await agentWith({ adapter }).run('hello')).output).toBe('fine')
  })

  test('the policy is checked at construction and kept as a frozen normalised copy', () => {
    expect(() => agentWith({ provider: 'openai', egressPolicy: { mode: 'allowlist', allowedOrigins: ['https://a.test/v1'] } })).toThrow(
      expect.objectContaining({ name: 'EgressPolicyError', code: 'INVALID_EGRESS_POLICY', message: 'Invalid egress policy: allowedOrigins[0] must be an origin without a path, query string, or fragment.' }),
    )
    const given = { mode: 'allowlist' as const, allowedOrigins: ['https://b.test:443', 'HTTP://A.test', 'https://b.test'] }
    const config = { provider: 'openai', egressPolicy: given }
    const agent = agentWith(config)
    expect(agent.config.egressPolicy).toEqual({ mode: 'allowlist', allowedOrigins: ['http://a.test', 'https://b.test'] })
    expect(Object.isFrozen(agent.config.egressPolicy)).toBe(true)
    expect(Object.isFrozen((agent.config.egressPolicy as any).allowedOrigins)).toBe(true)
    expect(given.allowedOrigins).toEqual(['https://b.test:443', 'HTTP://A.test', 'https://b.test'])
    // Without a policy the config is the caller's object, as in 1.7.
    const plain = { name: 'p', model: 'm' }
    const registry = new ToolRegistry()
    expect(new Agent(plain, registry, new ToolExecutor(registry)).config).toBe(plain)
  })
})

test('EgressPolicyError: upstream\'s constructor, codes and retry class', () => {
  const e = new EgressPolicyError('denied', 'msg', 'openai', 'https://api.openai.com')
  expect(e).toBeInstanceOf(Error)
  expect([e.name, e.message, e.reason, e.code, e.provider, e.origin]).toEqual(['EgressPolicyError', 'msg', 'denied', 'EGRESS_POLICY_DENIED', 'openai', 'https://api.openai.com'])
  expect(new EgressPolicyError('invalid-policy', 'm').code).toBe('INVALID_EGRESS_POLICY')
  expect(new EgressPolicyError('unsupported', 'm').code).toBe('EGRESS_POLICY_UNSUPPORTED')
  expect(new EgressPolicyError('unresolved-target', 'm').code).toBe('EGRESS_POLICY_TARGET_UNRESOLVED')
  // Any other reason: the unsupported code, as upstream's constructor does.
  expect(new EgressPolicyError('toString' as any, 'm').code).toBe('EGRESS_POLICY_UNSUPPORTED')
  for (const reason of ['invalid-policy', 'denied', 'unsupported', 'unresolved-target'] as const) {
    expect(isRetryableError(new EgressPolicyError(reason, 'm'))).toBe(false)
  }
})
