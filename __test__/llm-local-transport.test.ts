// Plain-HTTP endpoints (local model servers) are served from the JS thread's own event loop
// (crates/uv/src/http.rs, oma-uv): keep-alive reuse, a connection the server dropped, many calls at
// once, process exit with idle connections, and worker threads (which keep the I/O thread).
import * as http from 'http'
import * as path from 'path'
import { spawn, spawnSync } from 'child_process'
import { Worker } from 'worker_threads'
import type { AddressInfo, Socket } from 'net'
import { createAdapter } from '../lib/llm'

const ENTRY = path.resolve(__dirname, '..', 'index.js')

const completion = (text: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
})

/** Answers every chat request with the text of its last user message, reversed. */
async function echoServer() {
  const sockets = new Set<Socket>()
  let connections = 0
  const seen: { auth?: string; length: number; actual: number }[] = []
  const server = http.createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      seen.push({ auth: req.headers.authorization, length: Number(req.headers['content-length']), actual: Buffer.byteLength(raw) })
      const body = JSON.parse(raw)
      const last = body.messages[body.messages.length - 1]
      const text = typeof last.content === 'string' ? last.content : last.content.map((p: any) => p.text).join('')
      // Answer out of order so that replies cannot line up with requests by accident.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(completion(text.split('').reverse().join(''))))
      }, Math.floor(Math.random() * 5))
    })
  })
  server.on('connection', (s) => {
    connections++
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  return {
    url,
    connections: () => connections,
    seen,
    dropConnections: async () => {
      for (const s of sockets) s.destroy()
      while (sockets.size > 0) await new Promise((r) => setTimeout(r, 5))
    },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    }),
  }
}

const ask = (text: string) => [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }]
const textOf = (r: any) => r.content.map((b: any) => b.text).join('')

let server: Awaited<ReturnType<typeof echoServer>>
beforeEach(async () => {
  server = await echoServer()
})
afterEach(() => server.close())

test('sequential calls reuse one keep-alive connection; a dropped one is replaced', async () => {
  const adapter = await createAdapter('openai', 'k', server.url)
  const before = server.connections()
  expect(textOf(await adapter.chat(ask('abc'), { model: 'm' }))).toBe('cba')
  expect(textOf(await adapter.chat(ask('def'), { model: 'm' }))).toBe('fed')
  expect(textOf(await adapter.chat(ask('ghi'), { model: 'm' }))).toBe('ihg')
  const opened = server.connections() - before
  expect(opened).toBe(1)
  // The server drops every idle connection: the next call still succeeds, on a new one.
  await server.dropConnections()
  expect(textOf(await adapter.chat(ask('jkl'), { model: 'm' }))).toBe('lkj')
  expect(server.connections() - before).toBe(opened + 1)
})

test('interleaved adapters each send their own headers, with each body\'s own length', async () => {
  const a = await createAdapter('openai', 'key-a', server.url)
  const b = await createAdapter('openai', 'key-b', server.url)
  const words = ['x', 'é'.repeat(300), 'yy', 'z'.repeat(5000)]
  for (const w of words) {
    expect(textOf(await a.chat(ask(w), { model: 'm' }))).toBe(w.split('').reverse().join(''))
    expect(textOf(await b.chat(ask(w), { model: 'm' }))).toBe(w.split('').reverse().join(''))
  }
  expect(server.seen.map((s) => s.auth)).toEqual(words.flatMap(() => ['Bearer key-a', 'Bearer key-b']))
  for (const s of server.seen) expect(s.length).toBe(s.actual)
})

test('many calls at once each get their own answer', async () => {
  const adapter = await createAdapter('openai', 'k', server.url)
  const words = Array.from({ length: 40 }, (_, i) => `word-${i}-${'x'.repeat(i * 50)}`)
  const answers = await Promise.all(words.map((w) => adapter.chat(ask(w), { model: 'm' })))
  expect(answers.map(textOf)).toEqual(words.map((w) => w.split('').reverse().join('')))
  // And a later burst reuses the pooled connections rather than opening as many again.
  const opened = server.connections()
  await Promise.all(words.slice(0, 10).map((w) => adapter.chat(ask(w), { model: 'm' })))
  expect(server.connections()).toBe(opened)
})

test('a process with idle pooled connections exits on its own', async () => {
  // The server lives in another process, so only the client's own handles could keep the
  // client process alive.
  const srv = spawn(process.execPath, ['-e', `
    const http = require('http')
    const s = http.createServer((req, res) => { req.resume(); req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(${JSON.stringify(completion('pong'))}))
    }) })
    s.keepAliveTimeout = 60000
    s.listen(0, '127.0.0.1', () => console.log(s.address().port))
  `])
  try {
    const port = await new Promise<string>((resolve) => srv.stdout.once('data', (d) => resolve(String(d).trim())))
    const client = spawnSync(process.execPath, ['-e', `
      const { createAdapter } = require(${JSON.stringify(ENTRY)})
      createAdapter('openai', 'k', 'http://127.0.0.1:${port}/v1')
        .then((a) => a.chat([{ role: 'user', content: [{ type: 'text', text: 'ping' }] }], { model: 'm' }))
        .then((r) => console.log(r.content[0].text))
    `], { timeout: 20_000, encoding: 'utf8' })
    expect(client.error).toBeUndefined()
    expect(client.stdout.trim()).toBe('pong')
    expect(client.status).toBe(0)
  } finally {
    srv.kill()
  }
})

test('worker threads use the I/O thread and get the same answers', async () => {
  const script = `
    const { parentPort, workerData } = require('worker_threads')
    const { createAdapter } = require(workerData.entry)
    createAdapter('openai', 'k', workerData.url)
      .then((a) => Promise.all(['one', 'two'].map((t) => a.chat([{ role: 'user', content: [{ type: 'text', text: t }] }], { model: 'm' }))))
      .then((rs) => parentPort.postMessage(rs.map((r) => r.content[0].text)))
      .catch((e) => parentPort.postMessage(String(e)))
  `
  const w = new Worker(script, { eval: true, workerData: { entry: ENTRY, url: server.url } })
  const got = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
  expect(got).toEqual(['eno', 'owt'])
  await w.terminate()
})

test('large requests and responses cross intact (partial reads and writes)', async () => {
  const adapter = await createAdapter('openai', 'k', server.url)
  // 3 MB out (more than a socket buffer: the write waits for the socket to drain) and the
  // same text reversed back (read in many pieces).
  const big = Array.from({ length: 3 * 1024 }, (_, i) => `${i}:${'é'.repeat(500)}|`).join('')
  const r = await adapter.chat(ask(big), { model: 'm' })
  expect(textOf(r)).toBe(big.split('').reverse().join(''))
  // The connection is still good for the next call.
  expect(textOf(await adapter.chat(ask('small'), { model: 'm' }))).toBe('llams')
})

test('chunked bodies, and servers that close the connection after answering', async () => {
  // Node answers with Transfer-Encoding: chunked when the body is written in parts; with
  // `connection: close` it ends the connection after the response.
  let connections = 0
  let n = 0
  const srv = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const json = JSON.stringify(completion(`answer ${++n}`))
      if (n % 2 === 0) res.setHeader('connection', 'close')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write(json.slice(0, 10))
      setTimeout(() => res.end(json.slice(10)), 2)
    })
  })
  srv.on('connection', () => connections++)
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  try {
    const adapter = await createAdapter('openai', 'k', `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`)
    const got = []
    for (let i = 0; i < 4; i++) got.push(textOf(await adapter.chat(ask('x'), { model: 'm' })))
    expect(got).toEqual(['answer 1', 'answer 2', 'answer 3', 'answer 4'])
    // Calls 1–2 share a connection, which the server closes after call 2; calls 3–4 likewise.
    expect(connections).toBe(2)
  } finally {
    srv.closeAllConnections()
    await new Promise((r) => srv.close(r))
  }
})

test('process.exit() with a request in flight exits cleanly', () => {
  // The server never answers; the client exits mid-request. Nothing may run against the
  // torn-down process (an abort would show as status 134 and a Rust panic on stderr).
  const client = spawnSync(process.execPath, ['-e', `
    const { spawn } = require('child_process')
    const srv = spawn(process.execPath, ['-e', "require('http').createServer((q) => q.resume()).listen(0, '127.0.0.1', function () { console.log(this.address().port) })"])
    srv.stdout.once('data', async (d) => {
      const { createAdapter } = require(${JSON.stringify(ENTRY)})
      const a = await createAdapter('openai', 'k', 'http://127.0.0.1:' + String(d).trim() + '/v1')
      a.chat([{ role: 'user', content: [{ type: 'text', text: 'x' }] }], { model: 'm' }).catch(() => {})
      setTimeout(() => { srv.kill(); console.log('exiting'); process.exit(0) }, 100)
    })
  `], { timeout: 20_000, encoding: 'utf8' })
  expect(client.stderr).not.toContain('panicked')
  expect(client.stdout.trim()).toBe('exiting')
  expect(client.status).toBe(0)
})
