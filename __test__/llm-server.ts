// A scripted HTTP server on 127.0.0.1 for the adapter tests: records every request and
// answers each with the next scripted reply.
import * as http from 'http'
import type { AddressInfo } from 'net'

export interface Recorded {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  raw: string
  body: any
}

export type Reply =
  | { status?: number; headers?: Record<string, string>; json?: unknown; text?: string }
  | { sse: string[]; headers?: Record<string, string>; cut?: boolean }
  | { hang: true; onRequest?: () => void }
  | { destroy: true }
  | { custom: (req: http.IncomingMessage, res: http.ServerResponse) => void }

export interface MockServer {
  url: string
  requests: Recorded[]
  replies: Reply[]
  close(): Promise<void>
}

export async function startServer(replies: Reply[] = []): Promise<MockServer> {
  const requests: Recorded[] = []
  const sockets = new Set<import('net').Socket>()
  const server = http.createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      let body: any
      try {
        body = JSON.parse(raw)
      } catch {
        body = undefined
      }
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, raw, body })
      const reply = mock.replies.shift()
      if (!reply) {
        res.writeHead(599, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: 'no scripted reply left' } }))
        return
      }
      if ('custom' in reply) return reply.custom(req, res)
      if ('destroy' in reply) return req.socket.destroy()
      if ('hang' in reply) {
        reply.onRequest?.()
        return
      }
      if ('sse' in reply) {
        res.writeHead(200, { 'content-type': 'text/event-stream', ...(reply.headers ?? {}) })
        // Each scripted piece goes out as its own write: pieces may split lines anywhere.
        let i = 0
        const next = () => {
          if (i < reply.sse.length) {
            res.write(reply.sse[i++], () => setImmediate(next))
          } else if (reply.cut) {
            req.socket.destroy()
          } else {
            res.end()
          }
        }
        next()
        return
      }
      const status = reply.status ?? 200
      const text = reply.text ?? (reply.json !== undefined ? JSON.stringify(reply.json) : '')
      res.writeHead(status, { 'content-type': 'application/json', ...(reply.headers ?? {}) })
      res.end(text)
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const mock: MockServer = {
    url: `http://127.0.0.1:${port}`,
    requests,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  return mock
}

/** `data:` lines of an OpenAI-style stream, each chunk split in two at `split`. */
export function sseData(chunks: unknown[], { done = true, split = 7 } = {}): string[] {
  const out: string[] = []
  for (const c of chunks) {
    const line = `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`
    out.push(line.slice(0, split), line.slice(split))
  }
  if (done) out.push('data: [DONE]\n\n')
  return out
}

/** Named SSE events (Anthropic style), CRLF line endings. */
export function sseEvents(events: { event: string; data: unknown }[]): string[] {
  return events.map((e) => `event: ${e.event}\r\ndata: ${JSON.stringify(e.data)}\r\n\r\n`)
}

export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

/**
 * Each test of the calling file starts without the variables `unset` names (a list, or a pattern
 * every variable is matched against), with HOME set to `home` when given (so that no credentials
 * file is found), and ends with the environment as it was.
 */
export function isolateEnv(unset: readonly string[] | RegExp, home?: string): void {
  let saved: NodeJS.ProcessEnv
  beforeEach(() => {
    saved = { ...process.env }
    const names = Array.isArray(unset) ? unset : Object.keys(process.env).filter((k) => (unset as RegExp).test(k))
    for (const k of names) delete process.env[k]
    if (home !== undefined) process.env.HOME = home
  })
  afterEach(() => {
    process.env = saved
  })
}

/** The smallest successful reply of each provider's API, for tests about where a request goes. */
export const ANTHROPIC_MESSAGE = { id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
export const OPENAI_COMPLETION = { id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } }
export const GEMINI_RESPONSE = { candidates: [{ content: { parts: [{ text: 'hi' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } }
export const BEDROCK_RESPONSE = { output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1 } }

/**
 * A scripted server for each test of the calling file (or describe block): listening before
 * the test, closed after it. The object returned is the current test's server.
 */
export function eachServer(): MockServer {
  const current = {} as MockServer
  beforeEach(async () => {
    Object.assign(current, await startServer())
  })
  afterEach(() => current.close())
  return current
}
