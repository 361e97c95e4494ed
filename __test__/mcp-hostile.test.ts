// The MCP bridge against hostile servers (issue 30 points 4-8): bounded memory against a server
// that floods requests and never reads, an endless or oversized tools/list, a schema nested
// deeper than a message may be read, connections that must end with their call over
// Streamable HTTP, and a descendant that left the server's process group. Real processes and
// servers on 127.0.0.1; every wait is on an event (a socket's close, a log line, a pid).
import * as fs from 'fs'
import * as http from 'http'
import * as net from 'net'
import * as os from 'os'
import * as path from 'path'
import type { AddressInfo } from 'net'
import type { ToolUseContext } from '../index'
import { connectMCPTools } from '../mcp'
import type { ConnectedMCPTools } from '../mcp'
import { until } from './helpers/async'
import { jsonLines } from './helpers/jsonl'

const hostile = path.join(__dirname, 'fixtures', 'mcp', 'hostile.mjs')
const ctx = (extra: Partial<ToolUseContext> = {}): ToolUseContext => ({ agent: { name: 'a', role: 'r', model: 'm' }, ...extra }) as ToolUseContext

let dir: string
let logFile: string
const open: ConnectedMCPTools[] = []
const servers: http.Server[] = []
beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-mcp-hostile-')))
  logFile = path.join(dir, 'server.log')
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.disconnect()))
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r) })))
  fs.rmSync(dir, { recursive: true, force: true })
})

const events = () => jsonLines<Record<string, number>>(logFile)

function tool(c: ConnectedMCPTools, name: string) {
  const t = c.tools.find((x) => x.name === name)
  if (!t) throw new Error(`no tool ${name}`)
  return t
}

const stdio = (mode: string, extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [hostile, mode, logFile], ...extra })

async function connect(config: Parameters<typeof connectMCPTools>[0]): Promise<ConnectedMCPTools> {
  const c = await connectMCPTools(config)
  open.push(c)
  return c
}

describe('stdio: bounded memory and listings', () => {
  test('a server that floods 1 MiB requests and never reads its stdin stalls on its own stdout; the call ends at its deadline', async () => {
    const c = await connect(stdio('flood', { requestTimeoutMs: 3000 }))
    const r = await tool(c, 'flood').execute({}, ctx())
    // The server never got to its answer: the client stopped reading while its answers could
    // not be written (without the bound it read all 300 MiB and the call answered "flooded").
    expect(r).toEqual({ data: 'MCP tool "flood" failed: MCP error -32001: Request timed out', isError: true })
    const flooded = Math.max(0, ...events().map((e) => e.flooded ?? 0))
    // What the client holds for it: the writer's line, the one waiting for room, the read queue
    // (1 MiB), the reader's line and the pipes, a few 1 MiB lines.
    expect(flooded).toBeGreaterThan(0)
    expect(flooded).toBeLessThanOrEqual(8)
  })

  test('a nextCursor that never ends: the connect fails at the page limit, naming it and the server', async () => {
    await expect(connect(stdio('pages'))).rejects.toThrow(`MCP server "${process.execPath}" listed more than 1000 pages in tools/list (the limit for one server)`)
    expect(events().filter((e) => 'page' in e)).toHaveLength(1000)
  })

  test('requestTimeoutMs bounds the whole listing, not each page', async () => {
    // Five pages of 400 ms each: every page within 1000 ms, the listing (2 s at least) not.
    await expect(connect(stdio('slow-pages', { requestTimeoutMs: 1000 }))).rejects.toThrow('MCP error -32001: Request timed out')
    expect(events().filter((e) => 'page' in e).length).toBeLessThan(5)
  })

  test('too many tools: the connect fails at the tool limit', async () => {
    await expect(connect(stdio('tools'))).rejects.toThrow(`MCP server "${process.execPath}" listed more than 10000 tools in tools/list (the limit for one server)`)
    expect(events().filter((e) => 'page' in e)).toHaveLength(3)
  })

  test('a tool schema nested 100 levels deep: a clear error naming the tool, at once (not a timeout)', async () => {
    await expect(connect(stdio('deep', { requestTimeoutMs: 600000 }))).rejects.toThrow(
      `MCP server "${process.execPath}" listed tool "deep" with an inputSchema nested too deeply to read (a message may nest at most 128 levels)`,
    )
  })
})

/** Whether `pid` runs (a zombie left for a reaper that never comes does not). */
function running(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/s.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('stdio: the process tree', () => {
  test('a descendant that called setsid ends at disconnect', async () => {
    const c = await connect(stdio('tree'))
    const pid = Number((await tool(c, 'tree').execute({}, ctx())).data)
    expect(pid).toBeGreaterThan(1)
    expect(running(pid)).toBe(true)
    // It left the server's session and group.
    const stat = (p: number) => fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')
    const server = events().find((e) => 'server' in e)!.server
    expect(stat(pid)[3]).not.toBe(stat(server)[3])
    open.splice(open.indexOf(c), 1)
    await c.disconnect()
    // Ended before disconnect resolved; a SIGKILLed process's exit may still be on its way.
    await until(() => (running(pid) ? undefined : true))
    expect(running(server)).toBe(false)
  })
})

/**
 * A Streamable HTTP server that counts its sockets: `initialize` and `tools/list` answered with
 * JSON; tool `endless` answers with an event stream that never ends, `silent` never answers.
 * `calls` resolves each tools/call's socket (to wait for its close).
 */
async function countingServer() {
  const sockets = new Set<net.Socket>()
  const callSockets: net.Socket[] = []
  const callSeen: Array<() => void> = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => { body += d })
    req.on('end', () => {
      const msg = body ? JSON.parse(body) : undefined
      if (req.method !== 'POST') return res.writeHead(405).end()
      if (msg.id === undefined || msg.method === undefined) return res.writeHead(202).end()
      const json = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }))
      if (msg.method === 'initialize') return json({ protocolVersion: '2025-06-18', capabilities: { tools: {} } })
      if (msg.method === 'tools/list') return json({ tools: [{ name: 'endless', inputSchema: { type: 'object' } }, { name: 'silent', inputSchema: { type: 'object' } }] })
      callSockets.push(req.socket)
      callSeen.splice(0).forEach((f) => f())
      if (msg.params.name === 'endless') {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`)
      }
      // silent: no answer at all.
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  const closed = (s: net.Socket) => (s.destroyed ? Promise.resolve() : new Promise<void>((r) => s.once('close', () => r())))
  const nextCall = () => new Promise<void>((r) => callSeen.push(r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, sockets, callSockets, closed, nextCall }
}

describe('Streamable HTTP: a call that ends takes its connection with it', () => {
  test('a timeout during an endless event stream, an aborted call, a POST never answered: each socket closes before disconnect', async () => {
    const s = await countingServer()
    const c = await connect({ url: s.url, requestTimeoutMs: 1500 })

    expect(await tool(c, 'endless').execute({}, ctx())).toEqual({ data: 'MCP tool "endless" failed: MCP error -32001: Request timed out', isError: true })
    await s.closed(s.callSockets[0])

    const ac = new AbortController()
    const seen = s.nextCall()
    const pending = tool(c, 'endless').execute({}, ctx({ abortSignal: ac.signal }))
    await seen
    ac.abort()
    expect(await pending).toEqual({ data: 'MCP tool "endless" failed: MCP error -32001: AbortError: This operation was aborted', isError: true })
    await s.closed(s.callSockets[1])

    expect(await tool(c, 'silent').execute({}, ctx())).toEqual({ data: 'MCP tool "silent" failed: MCP error -32001: Request timed out', isError: true })
    await s.closed(s.callSockets[2])
    // The connection stays usable, and no socket of a call outlived it (idle pooled ones may).
    expect(s.callSockets.every((k) => k.destroyed)).toBe(true)
    expect(c.tools).toHaveLength(2)
  })
})
