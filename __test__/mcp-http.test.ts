// The MCP bridge over Streamable HTTP (issue 16 point 3), on loopback only: the reference
// server-everything in its streamableHttp mode (SSE answers, session ids, DELETE), and a
// scripted server of our own (node:http) for headers and tokens, JSON answers, error statuses,
// an expired session, redirects, cancellation and a resumed stream.
import { spawn, ChildProcess } from 'child_process'
import * as http from 'http'
import * as net from 'net'
import * as path from 'path'
import type { AddressInfo } from 'net'
import type { ToolUseContext } from '../index'
import { EgressPolicyError } from '../index'
import { connectMCPTools } from '../mcp'
import type { ConnectedMCPTools } from '../mcp'

const everything = path.join(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const ctx = (extra: Partial<ToolUseContext> = {}): ToolUseContext => ({ agent: { name: 'a', role: 'r', model: 'm' }, ...extra }) as ToolUseContext

const open: ConnectedMCPTools[] = []
const servers: http.Server[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.disconnect()))
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r) })))
})

async function connect(config: Parameters<typeof connectMCPTools>[0]): Promise<ConnectedMCPTools> {
  const c = await connectMCPTools(config)
  open.push(c)
  return c
}

function tool(c: ConnectedMCPTools, name: string) {
  const t = c.tools.find((x) => x.name === name)
  if (!t) throw new Error(`no tool ${name}`)
  return t
}

async function freePort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const { port } = s.address() as AddressInfo
  await new Promise((r) => s.close(r))
  return port
}

describe('server-everything over Streamable HTTP', () => {
  let proc: ChildProcess
  let url: string
  let log = ''
  beforeAll(async () => {
    const port = await freePort()
    proc = spawn(process.execPath, [everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
    proc.stdout!.on('data', (d) => { log += d })
    await new Promise<void>((resolve) => proc.stderr!.on('data', (d) => { if (String(d).includes('listening')) resolve() }))
    url = `http://127.0.0.1:${port}/mcp`
  })
  afterAll(() => { proc.kill() })

  test('connect, SSE answers (with progress notifications before the answer), session DELETE at disconnect', async () => {
    const c = await connect({ url, namePrefix: 'ev' })
    expect(c.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['ev_echo', 'ev_get-tiny-image', 'ev_trigger-long-running-operation']))
    expect(await tool(c, 'ev_echo').execute({ message: 'over http' }, ctx())).toEqual({ data: 'Echo: over http', isError: false })
    const image = await tool(c, 'ev_get-tiny-image').execute({}, ctx())
    expect(image.data.split('\n')[1]).toMatch(/^\[image image\/png; base64 length=[1-9]\d*\]$/)
    expect(await tool(c, 'ev_trigger-long-running-operation').execute({ duration: 1, steps: 2 }, ctx())).toEqual({ data: 'Long running operation completed. Duration: 1 seconds, Steps: 2.', isError: false })
    const session = /Session initialized with ID: (\S+)/.exec(log)
    expect(session).not.toBeNull()
    open.splice(open.indexOf(c), 1)
    await c.disconnect()
    // The server logs before it answers the DELETE, but its stdout reaches this process through a
    // pipe on its own schedule: wait for the line (bounded) rather than assume it is there.
    const terminated = `Received session termination request for session ${session![1]}`
    for (let i = 0; i < 200 && !log.includes(terminated); i++) await new Promise((r) => setTimeout(r, 25))
    expect(log).toContain(terminated)
  })
})

interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; body: any }

/** A scripted MCP server: `answer(msg)` gives a call's result (or a status to send). */
async function scripted(answer: (msg: any, seen: Seen[]) => { status?: number; result?: unknown; error?: unknown; json?: boolean; hang?: boolean } = () => ({ result: { content: [] } })) {
  const seen: Seen[] = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => { body += d })
    req.on('end', () => {
      const msg = body ? JSON.parse(body) : undefined
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: msg })
      if (req.method === 'DELETE') return res.writeHead(200).end()
      if (msg.id === undefined || msg.method === undefined) return res.writeHead(202).end()
      let out: ReturnType<typeof answer>
      if (msg.method === 'initialize') out = { result: { protocolVersion: '2025-06-18', capabilities: { tools: {} } } }
      else if (msg.method === 'tools/list') out = { result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] } }
      else out = answer(msg, seen)
      if (out.hang) return
      if (out.status) return res.writeHead(out.status, { 'content-type': 'text/plain' }).end(`status ${out.status} body`)
      const reply = JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...(out.error ? { error: out.error } : { result: out.result }) })
      const headers: http.OutgoingHttpHeaders = msg.method === 'initialize' ? { 'mcp-session-id': 'sess-1' } : {}
      if (out.json !== false) return res.writeHead(200, { ...headers, 'content-type': 'application/json' }).end(reply)
      res.writeHead(200, { ...headers, 'content-type': 'text/event-stream' })
      res.end(`event: message\ndata: ${reply}\n\n`)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen, server }
}

describe('a scripted server', () => {
  test('headers, a token function asked before connect and each call, session id and protocol version on later requests', async () => {
    const s = await scripted(() => ({ result: { content: [{ type: 'text', text: 'ok' }] }, json: false }))
    let n = 0
    const c = await connect({ url: s.url, headers: { 'X-Api-Key': 'k1' }, authToken: async () => `tok${++n}` })
    expect(await tool(c, 't').execute({ a: 1 }, ctx())).toEqual({ data: 'ok', isError: false })
    const posts = s.seen.filter((x) => x.method === 'POST')
    expect(posts.map((p) => p.body.method)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call'])
    expect(posts.every((p) => p.headers['x-api-key'] === 'k1')).toBe(true)
    expect(posts.map((p) => p.headers.authorization)).toEqual(['Bearer tok1', 'Bearer tok1', 'Bearer tok1', 'Bearer tok2'])
    expect(posts[0].headers['mcp-session-id']).toBeUndefined()
    expect(posts.slice(1).map((p) => [p.headers['mcp-session-id'], p.headers['mcp-protocol-version']])).toEqual([
      ['sess-1', '2025-06-18'], ['sess-1', '2025-06-18'], ['sess-1', '2025-06-18'],
    ])
    expect(posts[0].headers.accept).toBe('application/json, text/event-stream')
    open.splice(open.indexOf(c), 1)
    await c.disconnect()
    expect(s.seen[s.seen.length - 1]).toMatchObject({ method: 'DELETE', headers: { 'mcp-session-id': 'sess-1', authorization: 'Bearer tok2' } })
  })

  test('error statuses, JSON-RPC errors and an expired session', async () => {
    let status = 500
    const s = await scripted(() => (status === 200 ? { error: { code: -32602, message: 'bad' } } : { status }))
    const c = await connect({ url: s.url })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'MCP tool "t" failed: Streamable HTTP error: Error POSTing to endpoint: status 500 body', isError: true })
    status = 200
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'MCP tool "t" failed: MCP error -32602: bad', isError: true })
    status = 404
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'MCP tool "t" failed: MCP error -32000: Connection closed (the server ended the session: HTTP 404)', isError: true })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'MCP tool "t" failed: MCP error -32000: Connection closed', isError: true })
  })

  test('abort and timeout: the call ends at once and the server gets notifications/cancelled', async () => {
    const s = await scripted(() => ({ hang: true }))
    const c = await connect({ url: s.url, requestTimeoutMs: 500 })
    const ac = new AbortController()
    const pending = tool(c, 't').execute({}, ctx({ abortSignal: ac.signal }))
    for (;;) {
      if (s.seen.some((x) => x.body?.method === 'tools/call')) break
      await new Promise((r) => setTimeout(r, 10))
    }
    ac.abort()
    expect(await pending).toEqual({ data: 'MCP tool "t" failed: MCP error -32001: AbortError: This operation was aborted', isError: true })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'MCP tool "t" failed: MCP error -32001: Request timed out', isError: true })
    for (;;) {
      const cancels = s.seen.filter((x) => x.body?.method === 'notifications/cancelled').map((x) => x.body.params.reason)
      if (cancels.length === 2) {
        expect(cancels).toEqual(['AbortError: This operation was aborted', 'McpError: MCP error -32001: Request timed out'])
        break
      }
      await new Promise((r) => setTimeout(r, 10))
    }
  })

  test('redirects: same origin followed; to another origin refused, nothing sent there', async () => {
    const target = await scripted(() => ({ result: { content: [{ type: 'text', text: 'moved' }] } }))
    const other = await scripted()
    let toOther = false
    // 307 to /moved on its own origin (proxied to the target), or to the other origin.
    const front = http.createServer()
    front.on('request', (req, res) => {
      if (req.url === '/moved' && !toOther) {
        const fwd = http.request(target.url, { method: req.method, headers: req.headers }, (r) => { res.writeHead(r.statusCode!, r.headers); r.pipe(res) })
        req.pipe(fwd)
        return
      }
      res.writeHead(307, { location: toOther ? other.url : '/moved' }).end()
      req.resume()
    })
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
    servers.push(front)
    const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`
    const c = await connect({ url: frontUrl, authToken: 'secret' })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'moved', isError: false })
    expect(target.seen.filter((x) => x.method === 'POST').every((x) => x.headers.authorization === 'Bearer secret')).toBe(true)
    toOther = true
    const r = await tool(c, 't').execute({}, ctx())
    expect(r.isError).toBe(true)
    expect(r.data).toMatch(/^MCP tool "t" failed: 307 redirect to another origin refused: http:\/\/127\.0\.0\.1:\d+ → http:\/\/127\.0\.0\.1:\d+ /)
    expect(other.seen).toEqual([])
  })

  test('egressPolicy (upstream 1.16, as for the adapters): a refused URL is never contacted, an allowed one works, no redirect is followed, invalid policies throw', async () => {
    const allowed = await scripted(() => ({ result: { content: [{ type: 'text', text: 'ok' }] } }))
    const refused = await scripted()
    const origin = (u: string) => new URL(u).origin
    // Allowlisted origin: connects and calls.
    const c = await connect({ url: allowed.url, egressPolicy: { mode: 'allowlist', allowedOrigins: [origin(allowed.url)] } })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'ok', isError: false })
    // Another loopback port: refused before any request, with the EgressPolicyError itself.
    let err: any
    try {
      await connect({ url: refused.url, egressPolicy: { mode: 'allowlist', allowedOrigins: [origin(allowed.url)] } })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(EgressPolicyError)
    expect(err.message).toBe(`Egress policy denied framework-owned provider "mcp" request to ${origin(refused.url)}.`)
    expect([err.reason, err.code, err.provider, err.origin]).toEqual(['denied', 'EGRESS_POLICY_DENIED', 'mcp', origin(refused.url)])
    expect(refused.seen).toEqual([])
    // offline allows loopback.
    const o = await connect({ url: refused.url, egressPolicy: { mode: 'offline' } })
    expect(o.tools.map((t) => t.name)).toEqual(['t'])
    // Under a policy even a same-origin redirect is refused (nothing reaches its target).
    let moved = 0
    const front = http.createServer((req, res) => {
      if (req.url === '/moved') moved++
      res.writeHead(307, { location: '/moved' }).end()
      req.resume()
    })
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
    servers.push(front)
    const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`
    await expect(connect({ url: frontUrl, egressPolicy: { mode: 'offline' } })).rejects.toThrow(
      `307 redirect refused under the egress policy: ${origin(frontUrl)} → ${origin(frontUrl)} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)`,
    )
    expect(moved).toBe(0)
    // An invalid policy: upstream's text, before anything is sent.
    await expect(connect({ url: allowed.url, egressPolicy: { mode: 'everywhere' } as any })).rejects.toThrow(
      new EgressPolicyError('invalid-policy', 'Invalid egress policy: mode must be "offline" or "allowlist".'),
    )
  })

  test('an answer stream that drops is resumed with GET and Last-Event-ID after the retry wait', async () => {
    const gets: (string | undefined)[] = []
    let callId: number | undefined
    const server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (d) => { body += d })
      req.on('end', () => {
        if (req.method === 'GET') {
          gets.push(req.headers['last-event-id'] as string | undefined)
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          // The first GET drops again without the answer; the second gets it.
          if (gets.length === 1) return res.end('id: e2\ndata: \n\n')
          return res.end(`id: e3\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: callId, result: { content: [{ type: 'text', text: 'resumed' }] } })}\n\n`)
        }
        const msg = JSON.parse(body)
        if (msg.id === undefined) return res.writeHead(202).end()
        if (msg.method === 'initialize') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: {} } }))
        if (msg.method === 'tools/list') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 't' }] } }))
        callId = msg.id
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end('id: e1\nretry: 20\ndata: \n\n')
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    servers.push(server)
    const c = await connect({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` })
    expect(await tool(c, 't').execute({}, ctx())).toEqual({ data: 'resumed', isError: false })
    expect(gets).toEqual(['e1', 'e2'])
  })

  test('bad HTTP configs', async () => {
    await expect(connectMCPTools({ url: 'ftp://127.0.0.1/x' })).rejects.toThrow('connectMCPTools: url must be http: or https:, got ftp://127.0.0.1/x')
    await expect(connectMCPTools({ url: 'http://127.0.0.1:1/mcp', command: 'x' })).rejects.toThrow('connectMCPTools: give either command (stdio) or url (Streamable HTTP), not both')
    await expect(connectMCPTools({ url: 'http://127.0.0.1:1/mcp', authToken: async () => 3 as never })).rejects.toThrow('connectMCPTools: authToken must be a string or a function returning one')
    await expect(connectMCPTools({ url: 'http://127.0.0.1:1/mcp', requestTimeoutMs: 2000 })).rejects.toThrow('fetch failed')
  })
})
