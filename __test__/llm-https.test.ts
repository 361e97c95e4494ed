// HTTPS endpoints on the main thread's event loop (crates/uv: rustls over oma-uv's sockets), for
// `chat` and `stream()`: a Node https server on 127.0.0.1 with the committed test certificate
// (crates/uv/testdata/tls), and the client in a child process whose SSL_CERT_FILE names the test
// CA (how the certificate verifier takes extra roots on Linux). Every scenario runs on the main
// thread and again in a worker thread, which keeps the LLM I/O thread (reqwest): the outcomes must
// be the same, and only the main thread's must have been sent by its own loop (llmLoopRequests).
import * as fs from 'fs'
import * as http from 'http'
import * as https from 'https'
import * as path from 'path'
import { spawn } from 'child_process'
import type { AddressInfo, Socket } from 'net'

const TLS = path.resolve(__dirname, '..', 'crates', 'uv', 'testdata', 'tls')
const CLIENT = path.resolve(__dirname, 'helpers', 'https-client.js')
const read = (f: string) => fs.readFileSync(path.join(TLS, f))

const completion = (text: string) => ({
  id: 'c', object: 'chat.completion', model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
})
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

interface Server {
  url: string
  origin: string
  requests: string[]
  /** ALPN protocol of each TLS connection. */
  alpn: (string | false | null)[]
  /** Requests whose connection closed before their response ended. */
  dropped: number
  close(): Promise<void>
}

/** `cert`: 'leaf' (signed by the test CA) or 'untrusted' (self-signed). Routes: `/v1/...` answers
 *  chat and streams; `/fail/v1` a 500 first (then as /v1); `/same/v1` a 307 within the origin;
 *  `/away/v1` a 307 to another origin (localhost instead of 127.0.0.1); `/slow/v1` streams one
 *  delta and then nothing. */
async function server(cert = 'leaf'): Promise<Server> {
  const sockets = new Set<Socket>()
  let failed = false
  const s: Server = { url: '', origin: '', requests: [], alpn: [], dropped: 0, close: async () => {} }
  const srv = https.createServer({ key: read(`${cert}.key`), cert: read(`${cert}.pem`), ALPNProtocols: ['h2', 'http/1.1'] }, (req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      s.requests.push(`${req.method} ${req.url}`)
      const port = (srv.address() as AddressInfo).port
      if (req.url!.startsWith('/fail/') && !failed) {
        failed = true
        res.writeHead(500, { 'content-type': 'application/json', 'retry-after-ms': '10' })
        return res.end(JSON.stringify({ error: { message: 'try again' } }))
      }
      if (req.url!.startsWith('/same/')) {
        res.writeHead(307, { location: req.url!.slice('/same'.length) })
        return res.end()
      }
      if (req.url!.startsWith('/away/')) {
        res.writeHead(307, { location: `https://localhost:${port}${req.url!.slice('/away'.length)}` })
        return res.end()
      }
      const body = JSON.parse(raw)
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify(completion('cba')))
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.on('close', () => { if (!res.writableEnded) s.dropped++ })
      res.write(chunk({ role: 'assistant', content: 'Hel' }))
      if (req.url!.startsWith('/slow/')) return
      setTimeout(() => {
        res.write(chunk({ content: 'lo' }))
        res.write(chunk({}, 'stop'))
        res.end('data: [DONE]\n\n')
      }, 5)
    })
  })
  srv.on('secureConnection', (t) => {
    s.alpn.push(t.alpnProtocol)
    sockets.add(t)
    t.on('close', () => sockets.delete(t))
  })
  // A failed handshake (the client refusing the certificate) is expected in one test.
  srv.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  s.origin = `https://127.0.0.1:${(srv.address() as AddressInfo).port}`
  s.url = `${s.origin}/v1`
  s.close = () => new Promise<void>((resolve) => {
    for (const t of sockets) t.destroy()
    srv.close(() => resolve())
  })
  return s
}

interface Side { result: { ok?: any; error?: { name: string; message: string; status?: number } }; loopRequests: number }

/** Runs a scenario of helpers/https-client.js in a child process (asynchronously: the server
 *  lives in this one). */
function client(scenario: string, args: object, env: Record<string, string> = {}): Promise<{ main: Side; worker: Side }> {
  return new Promise((resolve, reject) => {
    const clean = { ...process.env }
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'all_proxy', 'no_proxy']) delete clean[k]
    const child = spawn(process.execPath, [CLIENT, scenario, JSON.stringify(args)], {
      env: { ...clean, SSL_CERT_FILE: path.join(TLS, 'ca.pem'), ...env },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`client exited with ${code}: ${err}`))
      try {
        resolve(JSON.parse(out))
      } catch {
        reject(new Error(`client printed ${out} ${err}`))
      }
    })
  })
}

/** Both sides had the same outcome; the main thread's went through its own loop, the worker's did not. */
function sameOnBothPaths(r: { main: Side; worker: Side }, mainRequests: number) {
  expect(r.main.result).toEqual(r.worker.result)
  expect(r.main.loopRequests).toBe(mainRequests)
  expect(r.worker.loopRequests).toBe(0)
  return r.main.result
}

let s: Server
beforeEach(async () => {
  s = await server()
})
afterEach(() => s.close())

test('chat over HTTPS is served by the main thread\'s loop, over HTTP/1.1', async () => {
  const r = await client('chat', { url: s.url })
  expect(sameOnBothPaths(r, 1)).toEqual({ ok: 'cba' })
  // Both stacks offer http/1.1 only (reqwest has no HTTP/2 in this build), though the server offers h2.
  expect(s.alpn).toEqual(['http/1.1', 'http/1.1'])
})

test('stream() over HTTPS: the same events on both paths', async () => {
  const r = await client('stream', { url: s.url })
  expect(sameOnBothPaths(r, 1)).toEqual({
    ok: [
      { type: 'text', data: 'Hel' },
      { type: 'text', data: 'lo' },
      { type: 'done', text: 'Hello' },
    ],
  })
})

test('the runner\'s own stream (streamDeltas) over HTTPS', async () => {
  const r = await client('agentStream', { url: s.url })
  expect(sameOnBothPaths(r, 1)).toEqual({ ok: ['text_delta:Hel', 'text_delta:lo', 'text:Hello', 'done:Hello'] })
})

test('a 500 is retried (after retry-after-ms) over HTTPS', async () => {
  const r = await client('chat', { url: `${s.origin}/fail/v1` })
  // The main thread's call meets the 500 and retries; the worker's finds the server recovered.
  expect(r.main).toEqual({ result: { ok: 'cba' }, loopRequests: 2 })
  expect(r.worker).toEqual({ result: { ok: 'cba' }, loopRequests: 0 })
  expect(s.requests.filter((q) => q.startsWith('POST /fail/'))).toHaveLength(3)
})

test('abort mid-stream ends the stream with the abort error and drops the request', async () => {
  const r = await client('streamAbort', { url: `${s.origin}/slow/v1` })
  expect(sameOnBothPaths(r, 1)).toEqual({
    ok: [{ type: 'text', data: 'Hel' }, { type: 'error', message: 'Request was aborted.' }],
  })
  expect(s.dropped).toBe(2)
})

test('an early return() from the iterator stops the request', async () => {
  const r = await client('streamReturn', { url: `${s.origin}/slow/v1` })
  expect(sameOnBothPaths(r, 1)).toEqual({ ok: [{ type: 'text', data: 'Hel' }] })
  // The child exits after both; each side's connection closed with its response unfinished.
  expect(s.dropped).toBe(2)
})

test('redirects: within the origin followed, to another origin refused', async () => {
  const same = await client('chat', { url: `${s.origin}/same/v1` })
  expect(sameOnBothPaths(same, 2)).toEqual({ ok: 'cba' })
  const away = await client('chat', { url: `${s.origin}/away/v1` })
  const port = new URL(s.origin).port
  expect(sameOnBothPaths(away, 1)).toEqual({
    error: {
      name: 'Error',
      status: 307,
      message: `307 redirect to another origin refused: ${s.origin} → https://localhost:${port} (credentials and messages are only sent to the configured origin; set the base URL to the new location to use it)`,
    },
  })
})

test('an egress policy is enforced on the main thread\'s HTTPS path too', async () => {
  const allowed = await client('egress', { url: s.url, allowed: [s.origin] })
  expect(sameOnBothPaths(allowed, 1)).toEqual({ ok: 'cba' })
  const redirected = await client('egress', { url: `${s.origin}/same/v1`, allowed: [s.origin] })
  expect(sameOnBothPaths(redirected, 1).error!.message).toBe(
    `307 redirect refused under the egress policy: ${s.origin} → ${s.origin} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)`,
  )
  const denied = await client('egress', { url: s.url, allowed: ['https://example.com'] })
  expect(sameOnBothPaths(denied, 0).error).toMatchObject({ name: 'EgressPolicyError' })
})

test('a certificate the verifier does not trust is refused, nothing is sent', async () => {
  const bad = await server('untrusted')
  try {
    const r = await client('chat', { url: bad.url })
    // As on reqwest: a connection error, after the SDK's retries (3 attempts).
    expect(sameOnBothPaths(r, 3)).toEqual({ error: { name: 'Error', message: 'Connection error.' } })
    expect(bad.requests).toEqual([])
  } finally {
    await bad.close()
  }
})

test('without the test CA in SSL_CERT_FILE the same server is refused', async () => {
  const r = await client('chat', { url: s.url }, { SSL_CERT_FILE: path.join(TLS, 'untrusted.pem') })
  expect(sameOnBothPaths(r, 3)).toEqual({ error: { name: 'Error', message: 'Connection error.' } })
  expect(s.requests).toEqual([])
})

test('with HTTPS_PROXY set, HTTPS requests keep going through the proxy (reqwest), not the loop', async () => {
  const connects: string[] = []
  const proxy = http.createServer()
  proxy.on('connect', (req, sock: Socket) => {
    connects.push(req.url!)
    sock.end('HTTP/1.1 502 Bad Gateway\r\n\r\n')
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  try {
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
    const r = await client('chat', { url: s.url }, { HTTPS_PROXY: proxyUrl })
    expect(sameOnBothPaths(r, 0)).toEqual({ error: { name: 'Error', message: 'Connection error.' } })
    expect(connects.length).toBeGreaterThan(0)
    expect(new Set(connects)).toEqual(new Set([new URL(s.origin).host]))
    expect(s.requests).toEqual([])
  } finally {
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})
