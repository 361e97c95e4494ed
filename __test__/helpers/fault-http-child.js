'use strict'
// The fault corpus of misbehaving HTTP endpoints (__test__/fault-http.test.ts runs this file in
// a child process, so that a crash of the process is seen as one and not taken for a failed
// test). Each fault is a raw TCP server on 127.0.0.1 that answers with exactly the bytes it
// wants; every fault is called with the openai and anthropic adapters, with `chat` (JS thread's
// HTTP client for plain HTTP), `chat` in a worker thread (the I/O thread's reqwest) and
// `stream` (reqwest). One JSON line per call on stdout: `{start}` before it, then its outcome;
// at the end the process's peak RSS.
//
// Nothing here depends on timing: a stalled or trickling server aborts its own call (the
// AbortController of the call) once it has seen the request or sent so many bytes; servers
// that send without end stop after `SERVER_CAP` bytes, so that even a client without limits
// ends (and then fails the expectations instead of hanging).

const net = require('net')
const path = require('path')
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads')

const ENTRY = path.resolve(__dirname, '..', '..', 'index.js')
const { createAdapter } = require(ENTRY)

const MIB = 1 << 20
/** The most a server sends without end: four times the client's largest limit. */
const SERVER_CAP = 256 * MIB

const ask = [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]

// ---------------------------------------------------------------------------------------
// Calls (the same code in the main thread and in the worker)

async function newAdapter(provider, origin) {
  return provider === 'openai' ? createAdapter('openai', 'sk-secret', `${origin}/v1`) : createAdapter('anthropic', 'ant-secret', origin)
}

function describeError(e) {
  if (e instanceof Error) return { outcome: 'error', message: e.message, status: e.status }
  return { outcome: 'error', message: `not an Error: ${String(e)}` }
}

/** One call: `{ outcome: 'ok', text }` or `{ outcome: 'error', message, status }`. */
async function call(provider, mode, origin, signal, tools) {
  const adapter = await newAdapter(provider, origin)
  const options = { model: 'm', abortSignal: signal, maxTokens: 16 }
  if (tools) options.tools = [{ name: 'a', description: 'd', inputSchema: { type: 'object', properties: {} } }]
  if (mode === 'stream') {
    let text = 0
    try {
      for await (const ev of adapter.stream(ask, options)) {
        if (ev.type === 'text') text += ev.data.length
        if (ev.type === 'error') return describeError(ev.data)
        if (ev.type === 'done') return { outcome: 'ok', text: ev.data.content.filter((b) => b.type === 'text').map((b) => b.text).join('').slice(0, 40), streamed: text }
      }
      return { outcome: 'error', message: 'stream ended without done or error' }
    } catch (e) {
      return describeError(e)
    }
  }
  try {
    const r = await adapter.chat(ask, options)
    return { outcome: 'ok', text: r.content.filter((b) => b.type === 'text').map((b) => b.text).join('').slice(0, 40) }
  } catch (e) {
    return describeError(e)
  }
}

if (!isMainThread) {
  // The worker: calls by id; an abort request by id.
  const controllers = new Map()
  parentPort.on('message', async (m) => {
    if (m.abort !== undefined) {
      controllers.get(m.abort)?.abort()
      return
    }
    const c = new AbortController()
    controllers.set(m.id, c)
    const r = await call(m.provider, 'chat', m.origin, c.signal, m.tools)
    controllers.delete(m.id)
    parentPort.postMessage({ id: m.id, result: r })
  })
  return
}

// ---------------------------------------------------------------------------------------
// Servers

/** A raw HTTP/1.1 server: parses requests (head and Content-Length body) and hands each to
 *  `handle(sock, req)`; records them. */
function startServer(handle) {
  const sockets = new Set()
  const requests = []
  const server = net.createServer((sock) => {
    sockets.add(sock)
    sock.on('close', () => sockets.delete(sock))
    sock.on('error', () => {})
    let buf = Buffer.alloc(0)
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      for (;;) {
        const i = buf.indexOf('\r\n\r\n')
        if (i < 0) return
        const lines = buf.subarray(0, i).toString('latin1').split('\r\n')
        const [method, target] = lines[0].split(' ')
        const headers = {}
        for (const l of lines.slice(1)) {
          const c = l.indexOf(':')
          headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim()
        }
        const len = Number(headers['content-length'] || 0)
        if (buf.length < i + 4 + len) return
        const body = buf.subarray(i + 4, i + 4 + len).toString()
        buf = buf.subarray(i + 4 + len)
        const req = { method, target, headers, body, stream: /"stream":true/.test(body), provider: target.includes('/messages') ? 'anthropic' : 'openai' }
        requests.push(req)
        handle(sock, req, requests.length)
      }
    })
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        origin: `http://127.0.0.1:${server.address().port}`,
        requests,
        close: () => new Promise((r) => {
          for (const s of sockets) s.destroy()
          server.close(() => r())
        }),
      })
    })
  })
}

/** Writes `next()` chunks until `cap` bytes went out or the client is gone, then ends. */
function pump(sock, next, cap = SERVER_CAP) {
  let sent = 0
  const go = () => {
    while (!sock.destroyed && sent < cap) {
      const c = next()
      sent += c.length
      if (!sock.write(c)) {
        sock.once('drain', go)
        return
      }
    }
    if (!sock.destroyed) sock.end()
  }
  go()
}

/** Writes one byte of `text` (cycled) every `ms`; after `abortAfter` bytes the call is aborted. */
function trickle(sock, text, ctx, abortAfter = 24, ms = 2) {
  let i = 0
  const t = setInterval(() => {
    if (sock.destroyed) return clearInterval(t)
    sock.write(text[i % text.length])
    if (++i === abortAfter) ctx.abort()
  }, ms)
  sock.on('close', () => clearInterval(t))
}

// ---------------------------------------------------------------------------------------
// Well-formed payloads

const OPENAI_JSON = JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })
const ANTHROPIC_JSON = JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'fine' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } })

const openaiDelta = (text) => `data: ${JSON.stringify({ id: 's', model: 'm', choices: [{ index: 0, delta: { content: text } }] })}\n\n`
const anthropicDelta = (text) => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })}\n\n`
const ANTHROPIC_START = [
  `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 0 } } })}\n\n`,
  `event: content_block_start\ndata: ${JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\n\n`,
].join('')
const ANTHROPIC_END = [
  `event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n`,
  `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n`,
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('')

/** The whole well-formed body for `req` (a completion, or a stream that says `text`). */
function goodBody(req, text = 'fine') {
  const inJson = JSON.stringify(text).slice(1, -1)
  if (!req.stream) return req.provider === 'openai' ? OPENAI_JSON.replace('fine', inJson) : ANTHROPIC_JSON.replace('fine', inJson)
  if (req.provider === 'openai') return `${openaiDelta(text)}data: ${JSON.stringify({ id: 's', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`
  return ANTHROPIC_START + anthropicDelta(text) + ANTHROPIC_END
}

/** The opening of a well-formed stream (nothing for a completion). */
const streamStart = (req) => (req.stream && req.provider === 'anthropic' ? ANTHROPIC_START : '')
const contentType = (req) => (req.stream ? 'text/event-stream' : 'application/json')
// Every server here closes the connection after its answer, and says so: a connection that
// ends unannounced after a complete response is another fault (and whether a client notices
// before reusing it is a race).
const head = (req, extra = '', status = '200 OK') => `HTTP/1.1 ${status}\r\ncontent-type: ${contentType(req)}\r\nconnection: close\r\n${extra}`
const ok = (sock, req, body = goodBody(req)) => sock.end(`${head(req)}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
const redirect = (status, location) => `HTTP/1.1 ${status} Moved\r\nlocation: ${location}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`

const ONE_MIB_X = Buffer.alloc(MIB, 'x')
const chunk = (buf) => Buffer.concat([Buffer.from(`${buf.length.toString(16)}\r\n`), buf, Buffer.from('\r\n')])
const X_CHUNK = chunk(ONE_MIB_X)

// ---------------------------------------------------------------------------------------
// The corpus. `expect(provider, mode)`: 'ok', 'any' (a result or an error), or a RegExp the
// error message must match.
// `heavy`: the client buffers up to a limit of 64 MiB (run one at a time).

const CONN = /^Connection error\.$/
const ABORTED = /^Request was aborted\.$/
const BODY_LIMIT = /^Response body exceeds the 64 MiB limit \(67108864 bytes\)\.$/
const STREAM_LIMIT = /^Response stream exceeds the 64 MiB limit \(67108864 bytes\)\.$/
const LINE_LIMIT = /^Server-sent event line exceeds the 16 MiB limit \(16777216 bytes\)\.$/
const EVENT_LIMIT = /^Server-sent event exceeds the 16 MiB limit \(16777216 bytes\)\.$/
const byMode = (chat, stream) => (_p, mode) => (mode === 'stream' ? stream : chat)

const FAULTS = [
  // Controls: well-formed answers in every framing.
  { name: 'ok: content-length', reply: (s, r) => ok(s, r), expect: () => 'ok' },
  {
    name: 'ok: chunked in 3-byte chunks',
    reply: (s, r) => {
      const body = Buffer.from(goodBody(r))
      s.write(`${head(r)}transfer-encoding: chunked\r\n\r\n`)
      for (let i = 0; i < body.length; i += 3) s.write(chunk(body.subarray(i, i + 3)))
      s.end('0\r\n\r\n')
    },
    expect: () => 'ok',
  },
  { name: 'ok: HTTP/1.0 close-delimited', reply: (s, r) => s.end(`HTTP/1.0 200 OK\r\ncontent-type: ${contentType(r)}\r\n\r\n${goodBody(r)}`), expect: () => 'ok' },
  {
    name: 'ok: interim 100 and 102 before the response',
    reply: (s, r) => {
      s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n')
      ok(s, r)
    },
    expect: () => 'ok',
  },
  {
    name: 'ok: invalid UTF-8 in the text',
    reply: (s, r) => {
      const body = Buffer.from(goodBody(r, 'bad\u00ffend'))
      // `\u00ff` is C3 BF in UTF-8: make it a lone continuation byte.
      const at = body.indexOf(Buffer.from([0xc3, 0xbf]))
      body[at] = 0xbf
      s.end(Buffer.concat([Buffer.from(`${head(r)}content-length: ${body.length}\r\n\r\n`), body]))
    },
    expect: () => 'ok',
    check: (res) => res.outcome !== 'ok' || res.text === 'bad\ufffd\ufffdend' || `invalid UTF-8 read as ${JSON.stringify(res.text)}`,
  },
  {
    name: 'ok: same-origin redirect',
    reply: (s, r) => (r.target.startsWith('/moved') ? ok(s, r) : s.end(redirect(307, `/moved${r.target}`))),
    expect: () => 'ok',
  },
  {
    name: 'ok: model text of unbalanced braces, with tools (text tool-call scan)',
    tools: true,
    reply: (s, r) => ok(s, r, goodBody(r, '{"a":'.repeat(40_000))),
    expect: () => 'ok',
  },

  // Stalls and trickles: the call's own abort ends them.
  { name: 'stall before the head', reply: (s, r, ctx) => ctx.abort(), expect: () => ABORTED },
  {
    name: 'stall in the body',
    reply: (s, r, ctx) => {
      s.write(`${head(r)}content-length: 100000\r\n\r\n${streamStart(r)}{"id":`)
      setImmediate(() => ctx.abort())
    },
    expect: () => ABORTED,
  },
  { name: 'trickle of the head', reply: (s, r, ctx) => trickle(s, `${head(r)}x-slow: ${'y'.repeat(100)}`, ctx), expect: () => ABORTED },
  {
    name: 'trickle of an endless body',
    reply: (s, r, ctx) => {
      s.write(`${head(r)}transfer-encoding: chunked\r\n\r\n`)
      trickle(s, '1\r\n \r\n', ctx, 60)
    },
    expect: () => ABORTED,
  },
  {
    name: 'trickle of an endless SSE comment',
    reply: (s, r, ctx) => {
      s.write(`${head(r)}\r\n${streamStart(r)}: `)
      trickle(s, 'z', ctx)
    },
    expect: () => ABORTED,
  },

  // Cut connections.
  { name: 'cut before the head', reply: (s) => s.destroy(), expect: () => CONN },
  { name: 'cut in the head', reply: (s, r) => s.end(`${head(r)}content-le`), expect: () => CONN },
  { name: 'cut in a content-length body', reply: (s, r) => s.end(`${head(r)}content-length: 1000\r\n\r\n${streamStart(r)}{"id"`), expect: () => CONN },
  {
    name: 'cut in a chunked stream',
    reply: (s, r) => {
      s.write(`${head(r)}transfer-encoding: chunked\r\n\r\n`)
      s.write(chunk(Buffer.from(streamStart(r) + (r.provider === 'openai' ? openaiDelta('partial') : anthropicDelta('partial')))))
      s.end('40\r\ndata: {"choi')
    },
    expect: () => CONN,
  },
  {
    name: 'content-length longer than the body',
    reply: (s, r) => s.end(`${head(r)}content-length: 100000\r\n\r\n${goodBody(r)}`),
    // An OpenAI stream is complete at its `[DONE]`, before the missing bytes are missed.
    expect: (p, mode) => (mode === 'stream' && p === 'openai' ? 'ok' : CONN),
  },
  {
    name: 'content-length shorter than the body',
    reply: (s, r) => s.end(`${head(r)}content-length: 10\r\n\r\n${goodBody(r)}`),
    expect: (p, mode) => (mode === 'stream' ? /^Could not parse message into JSON|^stream ended without producing a Message/ : /^Could not parse response body as JSON/),
  },
  { name: 'conflicting content-lengths', reply: (s, r) => s.end(`${head(r)}content-length: 5\r\ncontent-length: 6\r\n\r\nabcdef`), expect: () => CONN },
  { name: 'bad chunk size', reply: (s, r) => s.end(`${head(r)}transfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`), expect: () => CONN },
  { name: 'chunk without its CRLF', reply: (s, r) => s.end(`${head(r)}transfer-encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n`), expect: () => CONN },
  { name: 'not HTTP at all', reply: (s) => s.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'), expect: () => CONN },

  // Heads without bound.
  { name: 'one huge header', reply: (s, r) => s.end(`${head(r)}x-huge: ${'h'.repeat(2 * MIB)}\r\ncontent-length: 0\r\n\r\n`), expect: () => CONN },
  { name: 'thousands of headers', reply: (s, r) => s.end(`${head(r)}${'x-h: 1\r\n'.repeat(5000)}content-length: 0\r\n\r\n`), expect: () => CONN },
  // (4 MiB: many times any client's head limit. hyper skips interim responses without a
  // limit of its own: on the I/O thread an endless run of them ends at the per-attempt
  // timeout or the abort signal, with memory bounded.)
  { name: 'endless header lines', reply: (s, r) => { s.write(head(r)); pump(s, () => Buffer.from('x-more: header\r\n'.repeat(4096)), 4 * MIB) }, expect: () => CONN },
  { name: 'endless interim responses', reply: (s) => pump(s, () => Buffer.from('HTTP/1.1 102 Processing\r\n\r\n'.repeat(2048)), 4 * MIB), expect: () => CONN },

  // Bodies and events without bound.
  {
    name: 'endless body (content-length of a terabyte)',
    heavy: true,
    reply: (s, r) => {
      s.write(`${head(r)}content-length: 1000000000000\r\n\r\n`)
      pump(s, () => (r.stream ? Buffer.from(': keep-alive\n'.repeat(65536)) : ONE_MIB_X))
    },
    expect: byMode(BODY_LIMIT, STREAM_LIMIT),
  },
  {
    name: 'endless chunked body of text deltas',
    heavy: true,
    reply: (s, r) => {
      s.write(`${head(r)}transfer-encoding: chunked\r\n\r\n`)
      if (streamStart(r)) s.write(chunk(Buffer.from(streamStart(r))))
      const delta = chunk(Buffer.from((r.provider === 'openai' ? openaiDelta : anthropicDelta)('d'.repeat(64 * 1024)).repeat(16)))
      pump(s, () => (r.stream ? delta : X_CHUNK))
    },
    expect: byMode(BODY_LIMIT, STREAM_LIMIT),
  },
  {
    name: 'endless close-delimited SSE line',
    heavy: true,
    reply: (s, r) => {
      s.write(`HTTP/1.0 200 OK\r\ncontent-type: ${contentType(r)}\r\n\r\n${streamStart(r)}data: `)
      pump(s, () => ONE_MIB_X)
    },
    expect: byMode(BODY_LIMIT, LINE_LIMIT),
  },
  {
    name: 'endless SSE event (data lines, no blank line)',
    heavy: true,
    reply: (s, r) => {
      s.write(`${head(r)}\r\n${streamStart(r)}`)
      pump(s, () => Buffer.from('data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n'.repeat(16384)))
    },
    expect: byMode(BODY_LIMIT, EVENT_LIMIT),
  },

  // Errors with bodies without bound.
  {
    name: '500 with an endless body (retried, then reported)',
    reply: (s, r) => {
      s.write(`${head(r, '', '500 Internal Server Error')}retry-after-ms: 1\r\ntransfer-encoding: chunked\r\n\r\n`)
      pump(s, () => X_CHUNK)
    },
    expect: () => /^500 status code \(error body larger than 1048576 bytes, not read\)$/,
  },
  {
    name: '400 with a 2 MiB JSON error',
    reply: (s, r) => {
      const body = JSON.stringify({ error: { message: 'm'.repeat(2 * MIB) } })
      s.end(`${head(r, '', '400 Bad Request')}content-length: ${body.length}\r\n\r\n${body}`)
    },
    expect: () => /^400 status code \(error body larger than 1048576 bytes, not read\)$/,
  },
  { name: '429 with a retry-after of a day (retried with back-off)', reply: (s, r) => s.end(`${head(r, '', '429 Too Many Requests')}retry-after: 86400\r\ncontent-length: 2\r\n\r\n{}`), expect: () => /^429 / },

  // Malformed payloads.
  { name: 'empty 200', reply: (s, r) => s.end(`${head(r)}content-length: 0\r\n\r\n`), expect: (p, mode) => (mode === 'stream' ? (p === 'openai' ? 'ok' : /^stream ended without producing a Message/) : /^Could not parse response body as JSON/) },
  { name: 'invalid JSON in an SSE event', reply: (s, r) => s.end(`${head(r)}\r\n${streamStart(r)}event: content_block_delta\ndata: {not json\n\n`), expect: (p, mode) => (mode === 'stream' ? /^Could not parse message into JSON: \{not json$/ : /^Could not parse response body as JSON/) },
  {
    name: 'JSON nested 100000 deep',
    reply: (s, r) => {
      const deep = '['.repeat(100000) + ']'.repeat(100000)
      const body = r.stream ? `${streamStart(r)}event: content_block_delta\ndata: {"x":${deep}}\n\n` : `{"x":${deep}}`
      s.end(`${head(r)}content-length: ${body.length}\r\n\r\n${body}`)
    },
    // In a field the adapters skip: read past without recursion (no stack overflow).
    expect: () => 'any',
  },
  {
    name: 'stream of 20000 tool calls (by index)',
    reply: (s, r) => {
      let body = streamStart(r)
      for (let i = 1; i <= 20000; i++) {
        body += r.provider === 'openai'
          ? `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":${i},"id":"t${i}","function":{"name":"f","arguments":"{}"}}]}}]}\n\n`
          : `event: content_block_start\ndata: {"type":"content_block_start","index":${i},"content_block":{"type":"tool_use","id":"t${i}","name":"f","input":{}}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":${i},"delta":{"type":"input_json_delta","partial_json":"{}"}}\n\n`
      }
      body += r.provider === 'openai' ? 'data: [DONE]\n\n' : ANTHROPIC_END
      if (!r.stream) body = goodBody(r)
      s.end(`${head(r)}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    },
    expect: () => 'ok',
  },

  // Redirects: never to another origin; loops end.
  ...[301, 302, 303, 307, 308].map((status) => ({
    name: `${status} redirect to another origin`,
    other: true,
    reply: (s, r, ctx) => s.end(redirect(status, `${ctx.other}${r.target}`)),
    expect: () => new RegExp(`^${status} redirect to another origin refused: http://127\\.0\\.0\\.1:\\d+ → http://127\\.0\\.0\\.1:\\d+ `),
  })),
  {
    name: 'redirect to https on the same host',
    reply: (s, r, ctx) => s.end(redirect(308, `${ctx.origin.replace('http:', 'https:')}${r.target}`)),
    expect: () => /^308 redirect to another origin refused: http:\/\/127\.0\.0\.1:\d+ → https:\/\/127\.0\.0\.1:\d+ /,
  },
  { name: 'redirect loop', reply: (s, r) => s.end(redirect(307, r.target)), expect: () => /^307 too many redirects \(more than 10\)$/ },
]

// ---------------------------------------------------------------------------------------
// The run

const PROVIDERS = ['openai', 'anthropic']
const MODES = ['chat', 'chat-io', 'stream']
const CALL_TIMEOUT_MS = 60_000

let worker
let workerCalls = 0
const workerWaiting = new Map()
function startWorker() {
  worker = new Worker(__filename)
  worker.on('message', (m) => {
    workerWaiting.get(m.id)?.(m.result)
    workerWaiting.delete(m.id)
  })
  worker.unref()
}

async function runOne(fault, provider, mode) {
  const other = fault.other ? await startServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n')) : undefined
  const controller = new AbortController()
  const id = ++workerCalls
  const ctx = {
    other: other?.origin,
    origin: undefined,
    abort: () => (mode === 'chat-io' ? worker.postMessage({ abort: id }) : controller.abort()),
  }
  const server = await startServer((s, r, n) => fault.reply(s, r, ctx, n))
  ctx.origin = server.origin
  let timer
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ outcome: 'hung' }), CALL_TIMEOUT_MS)
  })
  const running = mode === 'chat-io'
    ? new Promise((resolve) => {
        workerWaiting.set(id, resolve)
        worker.postMessage({ id, provider, origin: server.origin, tools: !!fault.tools })
      })
    : call(provider, mode, server.origin, controller.signal, !!fault.tools)
  const result = await Promise.race([running, hung])
  clearTimeout(timer)
  result.requests = server.requests.length
  result.otherRequests = other ? other.requests.length : 0
  await server.close()
  await other?.close()
  return result
}

function peakRssKiB() {
  try {
    const m = require('fs').readFileSync('/proc/self/status', 'utf8').match(/VmHWM:\s+(\d+) kB/)
    return m ? Number(m[1]) : null
  } catch {
    return null
  }
}

async function main() {
  startWorker()
  const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`)
  const jobs = []
  for (const fault of FAULTS) for (const provider of PROVIDERS) for (const mode of MODES) jobs.push({ fault, provider, mode })
  const run = async ({ fault, provider, mode }) => {
    out({ start: fault.name, provider, mode })
    const began = Date.now()
    const result = await runOne(fault, provider, mode)
    result.ms = Date.now() - began
    const want = fault.expect(provider, mode)
    const problems = []
    const met = want === 'any' ? result.outcome === 'ok' || (result.outcome === 'error' && result.message) : want === 'ok' ? result.outcome === 'ok' : result.outcome === 'error' && want.test(result.message)
    if (!met) problems.push(`expected ${want === 'ok' ? 'a result' : want === 'any' ? 'a result or an error' : want}`)
    const extra = fault.check ? fault.check(result) : true
    if (extra !== true) problems.push(extra)
    if (result.otherRequests) problems.push(`${result.otherRequests} request(s) reached the other origin`)
    if (result.message && result.message.length > 4096) result.message = `${result.message.slice(0, 200)}… (${result.message.length} characters)`
    out({ fault: fault.name, provider, mode, ...result, problems })
  }
  // Light faults a few at a time; heavy ones (many megabytes) one at a time.
  const light = jobs.filter((j) => !j.fault.heavy)
  for (let i = 0; i < light.length; i += 24) await Promise.all(light.slice(i, i + 24).map(run))
  for (const j of jobs.filter((j) => j.fault.heavy)) await run(j)
  out({ done: true, calls: jobs.length, faults: FAULTS.length, peakRssKiB: peakRssKiB() })
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stdout.write(`${JSON.stringify({ crashed: String(e && e.stack) })}\n`)
    process.exit(1)
  },
)
