// The MCP bridge over stdio (issue 16, CONTRACT §17) against real servers: the reference
// servers @modelcontextprotocol/server-everything and server-filesystem, and a test-only server
// (__test__/fixtures/mcp/server.mjs, written with the SDK's server API) for pagination, every
// content kind, errors, cancellation, timeouts, dying, garbage, floods and process trees.
import { execFile } from 'child_process'
import { promisify } from 'util'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { Agent, ToolExecutor, ToolRegistry, registerBuiltInTools } from '../index'
import type { ContentBlock, LLMResponse, ToolUseContext } from '../index'
import { connectMCPTools } from '../mcp'
import type { ConnectedMCPTools } from '../mcp'
import { until } from './helpers/async'
import { jsonLines } from './helpers/jsonl'

const nodeModules = path.join(__dirname, '..', 'node_modules', '@modelcontextprotocol')
const everything = path.join(nodeModules, 'server-everything', 'dist', 'index.js')
const filesystem = path.join(nodeModules, 'server-filesystem', 'dist', 'index.js')
const fixture = path.join(__dirname, 'fixtures', 'mcp', 'server.mjs')

let dir: string
let logFile: string
const open: ConnectedMCPTools[] = []

beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-mcp-')))
  logFile = path.join(dir, 'server.log')
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.disconnect()))
  fs.rmSync(dir, { recursive: true, force: true })
})

async function connect(args: string[], extra: Record<string, unknown> = {}): Promise<ConnectedMCPTools> {
  const c = await connectMCPTools({ command: process.execPath, args, ...extra })
  open.push(c)
  return c
}

const fixtureServer = (mode = 'plain', extra: Record<string, unknown> = {}) => connect([fixture, mode, logFile], extra)

const events = () => jsonLines<Record<string, unknown>>(logFile)

/** Whether `pid` runs (a zombie left for a reaper that never comes does not). */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^\S+ \(.*\) Z/s.test(stat)
  } catch {
    return false
  }
}

function tool(c: ConnectedMCPTools, name: string) {
  const t = c.tools.find((x) => x.name === name)
  if (!t) throw new Error(`no tool ${name} in ${c.tools.map((x) => x.name).join(', ')}`)
  return t
}

const ctx = (extra: Partial<ToolUseContext> = {}): ToolUseContext => ({ agent: { name: 'a', role: 'r', model: 'm' }, ...extra }) as ToolUseContext

describe('server-everything (stdio)', () => {
  test('tools, descriptions and schemas as the server lists them; text, image, resource and structured results', async () => {
    const c = await connect([everything, 'stdio'], { namePrefix: ' ev ' })
    const names = c.tools.map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(['ev_echo', 'ev_get-sum', 'ev_get-tiny-image', 'ev_get-resource-links', 'ev_get-resource-reference', 'ev_get-structured-content']))
    const echo = tool(c, 'ev_echo')
    expect(echo.description).toBe('Echoes back the input string')
    expect(echo.llmInputSchema).toBe(echo.inputSchema)
    expect(echo.inputSchema).toEqual({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { message: { type: 'string' } }, required: ['message'] })

    expect(await echo.execute({ message: 'hi' }, ctx())).toEqual({ data: 'Echo: hi', isError: false })
    expect(await tool(c, 'ev_get-sum').execute({ a: 2, b: 3.5 }, ctx())).toEqual({ data: 'The sum of 2 and 3.5 is 5.5.', isError: false })

    const image = await tool(c, 'ev_get-tiny-image').execute({}, ctx())
    expect(image.isError).toBe(false)
    const lines = image.data.split('\n')
    expect(lines[0]).toBe("Here's the image you requested:")
    expect(lines[1]).toMatch(/^\[image image\/png; base64 length=[1-9]\d*\]$/)
    expect(lines[2]).toBe('The image above is the MCP logo.')

    const links = await tool(c, 'ev_get-resource-links').execute({ count: 2 }, ctx())
    expect(links.data.split('\n').filter((l) => l.startsWith('[resource_link name="'))).toHaveLength(2)
    expect(links.data).toMatch(/\[resource_link name="[^"]+" uri="demo:\/\/resource\/[^"]+"\]\n./)

    const text = await tool(c, 'ev_get-resource-reference').execute({ resourceType: 'Text', resourceId: 1 }, ctx())
    expect(text.data).toMatch(/\n\[resource demo:\/\/resource\/dynamic\/text\/1\]\n./)
    const blob = await tool(c, 'ev_get-resource-reference').execute({ resourceType: 'Blob', resourceId: 2 }, ctx())
    expect(blob.data).toMatch(/\n\[resource demo:\/\/resource\/dynamic\/blob\/2; mimeType=[^;]*; blob base64 length=[1-9]\d*\]/)

    // Content wins over structuredContent when there is any.
    const weather = await tool(c, 'ev_get-structured-content').execute({ location: 'Chicago' }, ctx())
    expect(JSON.parse(weather.data)).toMatchObject({ temperature: expect.any(Number) })
  })

  test('input is validated natively against the server schema before the call', async () => {
    const c = await connect([everything, 'stdio'])
    const registry = new ToolRegistry()
    for (const t of c.tools) registry.register(t, { runtimeAdded: true })
    const executor = new ToolExecutor(registry)
    const bad = await executor.execute('get-sum', { a: 'two' }, ctx())
    expect(bad.isError).toBe(true)
    expect(bad.data).toMatch(/^Invalid input for tool "get-sum":/)
    expect(await executor.execute('get-sum', { a: 1, b: 2 }, ctx())).toEqual({ data: 'The sum of 1 and 2 is 3.', isError: false })
  })
})

describe('the test server', () => {
  test('pagination follows nextCursor; names normalised; description default', async () => {
    const c = await fixtureServer('plain', { namePrefix: 'srv' })
    expect(c.tools.map((t) => t.name)).toEqual(['srv_kinds', 'srv_ns_echo', 'srv_slow', 'srv_fail', 'srv_rpc-error', 'srv_die', 'srv_garbage', 'srv_flood', 'srv_structured', 'srv_env', 'srv_tree'])
    expect(events().filter((e) => 'list' in e)).toEqual([{ list: null }, { list: 'p1' }, { list: 'p2' }])
    expect(tool(c, 'srv_ns_echo').description).toBe('MCP tool: ns/echo')
    expect(await tool(c, 'srv_ns_echo').execute({ text: 'x' }, ctx())).toEqual({ data: 'echo:x', isError: false })
  })

  test('every content kind, isError, JSON-RPC errors, structuredContent, garbage lines skipped', async () => {
    const c = await fixtureServer()
    expect(await tool(c, 'kinds').execute({}, ctx())).toEqual({
      data: [
        'plain text',
        '[image image/png; base64 length=12]',
        '[audio audio/wav; base64 length=8]',
        '[resource file:///notes.txt]\nnote body',
        '[resource file:///blob.bin; mimeType=application/octet-stream; blob base64 length=8]',
        '[resource_link name="linked \\"doc\\"" uri="file:///linked.md"]\na linked file',
        '[resource_link name="bare" uri="file:///bare"]',
      ].join('\n'),
      isError: false,
    })
    expect(await tool(c, 'fail').execute({}, ctx())).toEqual({ data: 'it went wrong', isError: true })
    expect(await tool(c, 'rpc-error').execute({}, ctx())).toEqual({ data: 'MCP tool "rpc-error" failed: MCP error -32602: no such thing', isError: true })
    expect(await tool(c, 'structured').execute({}, ctx())).toEqual({ data: '{\n  "total": 3,\n  "items": [\n    "a",\n    "b"\n  ]\n}', isError: false })
    expect(await tool(c, 'garbage').execute({}, ctx())).toEqual({ data: 'after the noise', isError: false })
    expect(await tool(c, 'ns_echo').execute({ text: 'still here' }, ctx())).toEqual({ data: 'echo:still here', isError: false })
  })

  test('requestTimeoutMs bounds a call: the timeout text, and the server is told', async () => {
    const c = await fixtureServer('plain', { requestTimeoutMs: 1000 })
    expect(await tool(c, 'slow').execute({}, ctx())).toEqual({ data: 'MCP tool "slow" failed: MCP error -32001: Request timed out', isError: true })
    expect(await until(() => events().find((e) => 'cancelled' in e))).toEqual({ cancelled: 'McpError: MCP error -32001: Request timed out' })
    // The connection is still usable.
    expect(await tool(c, 'ns_echo').execute({ text: 'y' }, ctx())).toEqual({ data: 'echo:y', isError: false })
  })

  test("the run's abort ends the call at once with the SDK's text and sends notifications/cancelled", async () => {
    const c = await fixtureServer()
    const ac = new AbortController()
    const pending = tool(c, 'slow').execute({}, ctx({ abortSignal: ac.signal }))
    // Once the server runs the call (a cancellation racing the request's start is ignored by
    // the SDK's server).
    await until(() => events().find((e) => 'started' in e))
    ac.abort()
    expect(await pending).toEqual({ data: 'MCP tool "slow" failed: MCP error -32001: AbortError: This operation was aborted', isError: true })
    expect(await until(() => events().find((e) => 'cancelled' in e))).toEqual({ cancelled: 'AbortError: This operation was aborted' })
    // An already-aborted signal: nothing is sent; the reason's own message.
    const pre = new AbortController()
    pre.abort(new Error('stop now'))
    expect(await tool(c, 'ns_echo').execute({ text: 'z' }, ctx({ abortSignal: pre.signal }))).toEqual({ data: 'MCP tool "ns/echo" failed: stop now', isError: true })
  })

  test('a server that dies mid-call: the call and every later one are errors at once', async () => {
    const c = await fixtureServer('plain', { requestTimeoutMs: 600000 })
    expect(await tool(c, 'die').execute({}, ctx())).toEqual({ data: 'MCP tool "die" failed: MCP error -32000: Connection closed', isError: true })
    expect(await tool(c, 'kinds').execute({}, ctx())).toEqual({ data: 'MCP tool "kinds" failed: MCP error -32000: Connection closed', isError: true })
  })

  test('a line without end is bounded: a clear error, the server ended', async () => {
    const c = await fixtureServer('plain', { requestTimeoutMs: 600000 })
    expect(await tool(c, 'flood').execute({}, ctx())).toEqual({
      data: 'MCP tool "flood" failed: MCP error -32000: Connection closed (the server wrote a line longer than 10485760 bytes)',
      isError: true,
    })
  })

  test('disconnect ends the server and its descendants; calls after it fail', async () => {
    const c = await fixtureServer()
    const pid = Number((await tool(c, 'tree').execute({}, ctx())).data)
    const server = (events().find((e) => 'descendant' in e) as { pid: number }).pid
    expect(running(pid)).toBe(true)
    expect(running(server)).toBe(true)
    await c.disconnect()
    expect(running(server)).toBe(false)
    // The descendant ignores SIGTERM: only the group's SIGKILL ends it, which lands
    // asynchronously (the test times out if it never does).
    await until(() => (running(pid) ? undefined : true))
    expect(await tool(c, 'ns_echo').execute({ text: 'a' }, ctx())).toEqual({ data: 'MCP tool "ns/echo" failed: MCP error -32000: Connection closed', isError: true })
  })

  test('a process that exits without disconnect takes the server group with it', async () => {
    const script = `
      const { connectMCPTools } = require(${JSON.stringify(path.join(__dirname, '..', 'mcp.js'))})
      connectMCPTools({ command: process.execPath, args: ${JSON.stringify([fixture, 'plain', logFile])} })
        .then((c) => c.tools.find((t) => t.name === 'tree').execute({}, {}))
        .then((r) => console.log(r.data))`
    // Asynchronously, with a bound: a child that never exits fails the test (and is killed)
    // instead of blocking Jest's worker, which no test timeout can interrupt.
    const { stdout: out } = await promisify(execFile)(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 25_000, killSignal: 'SIGKILL' })
    const pid = Number(out.trim())
    expect(pid).toBeGreaterThan(0)
    const server = (events().find((e) => 'descendant' in e) as { pid: number }).pid
    // SIGTERM is asynchronous: wait for it to land (the test times out if it never does).
    await until(() => (running(pid) || running(server) ? undefined : true))
  })

  test("the environment: the SDK's default variables from process.env, env on top, undefined removes", async () => {
    process.env.OMA_MCP_SECRET = 'not for the server'
    const home = process.env.HOME
    try {
      const c = await fixtureServer('plain', { env: { EXTRA: 'yes', HOME: undefined } })
      const { env } = JSON.parse((await tool(c, 'env').execute({}, ctx())).data)
      expect(env.EXTRA).toBe('yes')
      expect(env.PATH).toBe(process.env.PATH)
      expect(env.OMA_MCP_SECRET).toBeUndefined()
      expect(env.HOME).toBeUndefined()
      expect(home).toBeDefined()
    } finally {
      delete process.env.OMA_MCP_SECRET
    }
  })

  test('cwd is the server working directory', async () => {
    const c = await fixtureServer('plain', { cwd: dir })
    expect(JSON.parse((await tool(c, 'env').execute({}, ctx())).data).cwd).toBe(dir)
  })
})

describe('failed connects end the server and reject with the original error', () => {
  test('duplicate names after normalisation', async () => {
    await expect(fixtureServer('dup')).rejects.toThrow(new Error('Duplicate MCP tool name after normalization: "fs_read" from "fs/read" and "fs_read".'))
  })

  test('a server that never answers: the connect timeout, then the child is gone', async () => {
    await expect(fixtureServer('silent', { requestTimeoutMs: 300 })).rejects.toThrow(new Error('MCP error -32001: Request timed out'))
    const { pid } = (await until(() => events().find((e) => 'pid' in e))) as { pid: number }
    expect(running(pid)).toBe(false)
  })

  test('a command that does not exist, and bad config values', async () => {
    await expect(connectMCPTools({ command: path.join(dir, 'no-such-server') })).rejects.toThrow(new Error(`spawn ${path.join(dir, 'no-such-server')} ENOENT`))
    await expect(connectMCPTools({ command: '' })).rejects.toThrow('connectMCPTools: command must be a non-empty string')
    await expect(connectMCPTools({ command: 'x', requestTimeoutMs: NaN })).rejects.toThrow('connectMCPTools: requestTimeoutMs must be a number of milliseconds from 1 to 2147483647')
    await expect(connectMCPTools({ command: 'x', args: [1] as unknown as string[] })).rejects.toThrow('connectMCPTools: args must be an array of strings')
    await expect(connectMCPTools(null as never)).rejects.toThrow(new TypeError('connectMCPTools: config must be an object'))
  })
})

describe('an Agent with server-filesystem tools (scripted model)', () => {
  const resp = (content: ContentBlock[]): LLMResponse => ({ id: 'r', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 }, content })

  test('MCP tools are runtime tools: granted without a preset, built-ins still default-denied, disallowedTools applies', async () => {
    const c = await connect([filesystem, dir], { namePrefix: 'fs' })
    const file = path.join(dir, 'note.txt')
    const script = [
      resp([{ type: 'tool_use', id: 'w', name: 'fs_write_file', input: { path: file, content: 'from the agent\n' } }]),
      resp([
        { type: 'tool_use', id: 'r', name: 'fs_read_text_file', input: { path: file } },
        { type: 'tool_use', id: 'm', name: 'fs_move_file', input: { source: file, destination: path.join(dir, 'moved.txt') } },
        { type: 'tool_use', id: 'b', name: 'bash', input: { command: 'echo hi' } },
        { type: 'tool_use', id: 'x', name: 'fs_read_text_file', input: {} },
      ]),
      resp([{ type: 'text', text: 'done' }]),
    ]
    const seenTools: string[][] = []
    let i = 0
    const adapter = {
      name: 'scripted',
      chat: async (_m: unknown, opts: { tools?: { name: string }[] }) => {
        seenTools.push((opts.tools ?? []).map((t) => t.name))
        return script[i++]
      },
    }
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const agent = new Agent({ name: 'mcp', model: 'm', adapter, disallowedTools: ['fs_move_file'] } as never, registry, new ToolExecutor(registry))
    for (const t of c.tools) agent.addTool(t)
    const r = await agent.run('write then read')
    expect(r.success).toBe(true)
    expect(fs.readFileSync(file, 'utf8')).toBe('from the agent\n')
    expect(seenTools[0]).toContain('fs_read_text_file')
    expect(seenTools[0]).not.toContain('fs_move_file')
    expect(r.toolCalls.map((t) => t.toolName)).toEqual(['fs_write_file', 'fs_read_text_file', 'fs_move_file', 'bash', 'fs_read_text_file'])
    expect(r.toolCalls[0].output).toBe(`Successfully wrote to ${file}`)
    expect(r.toolCalls[1].output).toBe('from the agent\n')
    expect(r.toolCalls[2].output).toMatch(/^Tool "fs_move_file" is not granted/)
    expect(r.toolCalls[3].output).toMatch(/^Tool "bash" is not granted/)
    expect(r.toolCalls[4].output).toMatch(/^Invalid input for tool "fs_read_text_file":/)
    expect(fs.existsSync(path.join(dir, 'moved.txt'))).toBe(false)
  })
})
