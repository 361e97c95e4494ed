// Per-tool timeouts (issue 15 point 3, beyond upstream): ToolDefinition.timeoutMs and the
// toolTimeoutMs default (ToolExecutor options and per execution, RunnerOptions, AgentConfig).
// When one passes, the tool's signal aborts with a TimeoutError, the call resolves at once with
// the kernel's text, the run goes on, and a built-in stops its work (bash's process tree is
// killed, grep stops). Unset, nothing is armed and nothing crosses.
import { spawnSync } from 'child_process'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { z } from 'zod'
import {
  Agent, AgentRunner, ToolRegistry, ToolExecutor, defineTool, bashTool, grepTool,
  ContentBlock, LLMAdapter, LLMMessage, LLMResponse, ToolResult, ToolUseContext, TraceEvent,
} from '../index'
import { alive, pidsIn } from './helpers/procs'
import { watchTimers } from './helpers/timers'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const native = require('../lib/native.js')

const ctx: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' } }
const timedOut = (name: string, ms: number) => `Tool "${name}" timed out after ${ms}ms.`

function resp(content: ContentBlock[]): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } }
}

/** A tool whose execute never settles on its own; it records the signal it was given and can be
 *  settled (or rejected) later by the test. */
function hungTool(name: string, extra: { timeoutMs?: number } = {}) {
  const seen: { signal?: AbortSignal; context?: ToolUseContext; settle?: (r: ToolResult) => void; fail?: (e: unknown) => void } = {}
  const tool = defineTool({
    name, description: 'never answers', inputSchema: z.object({}), ...extra,
    execute: (_input, context) => new Promise<ToolResult>((resolve, reject) => {
      seen.signal = context.abortSignal
      seen.context = context
      seen.settle = resolve
      seen.fail = reject
    }),
  })
  return { tool, seen }
}

const echo = defineTool({
  name: 'echo', description: 'echo', inputSchema: z.object({ v: z.string() }),
  execute: async ({ v }) => ({ data: `echo:${v}` }),
})

let dir: string
beforeAll(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-tool-timeout-')) })
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

describe('ToolExecutor: a timeout ends a hung tool', () => {
  test('the call resolves with the kernel\'s text; the tool\'s signal aborts with a TimeoutError', async () => {
    const { tool, seen } = hungTool('hang', { timeoutMs: 50 })
    const reg = new ToolRegistry()
    reg.register(tool)
    const base = new AbortController()
    const r = await new ToolExecutor(reg).execute('hang', {}, { ...ctx, abortSignal: base.signal })
    expect(r).toStrictEqual({ data: timedOut('hang', 50), isError: true })
    // The tool got a signal of its own (the run's, merged with the deadline), now aborted.
    expect(seen.signal).not.toBe(base.signal)
    expect(seen.signal!.aborted).toBe(true)
    expect(seen.signal!.reason.name).toBe('TimeoutError')
    expect(seen.signal!.reason.message).toBe(timedOut('hang', 50))
    expect(base.signal.aborted).toBe(false)
    // The rest of the context is the caller's.
    expect(seen.context!.agent).toBe(ctx.agent)
    // A late answer changes nothing.
    seen.settle!({ data: 'too late' })
  })

  test('the caller\'s abort reaches the tool through the merged signal, with the caller\'s reason', async () => {
    const { tool, seen } = hungTool('hang', { timeoutMs: 60_000 })
    const reg = new ToolRegistry()
    reg.register(tool)
    const base = new AbortController()
    const p = new ToolExecutor(reg).execute('hang', {}, { ...ctx, abortSignal: base.signal })
    await new Promise((r) => setImmediate(r))
    base.abort(new Error('stop'))
    expect(seen.signal!.aborted).toBe(true)
    expect(seen.signal!.reason.message).toBe('stop')
    seen.settle!({ data: 'stopped', isError: true })
    expect(await p).toStrictEqual({ data: 'stopped', isError: true })
  })

  test('a tool\'s own timeoutMs wins over the defaults; 0 opts a tool out; per execution over the constructor', async () => {
    const reg = new ToolRegistry()
    const own = hungTool('own', { timeoutMs: 30 })
    const dflt = hungTool('dflt')
    let optOutSignal: AbortSignal | undefined
    reg.register(own.tool)
    reg.register(dflt.tool)
    reg.register(defineTool({
      name: 'optout', description: 'd', inputSchema: z.object({}), timeoutMs: 0,
      execute: async (_i, c) => { optOutSignal = c.abortSignal; return { data: 'finished' } },
    }))
    const executor = new ToolExecutor(reg, { toolTimeoutMs: 60_000 })
    expect(await executor.execute('own', {}, ctx)).toStrictEqual({ data: timedOut('own', 30), isError: true })
    // Per execution over the constructor's default.
    expect(await executor.execute('dflt', {}, ctx, { toolTimeoutMs: 40 })).toStrictEqual({ data: timedOut('dflt', 40), isError: true })
    // The tool's own over the per-execution one.
    expect(await executor.execute('own', {}, ctx, { toolTimeoutMs: 70 })).toStrictEqual({ data: timedOut('own', 30), isError: true })
    // 0: no timeout for this tool; it gets the caller's context as it is.
    expect(await executor.execute('optout', {}, ctx)).toStrictEqual({ data: 'finished' })
    expect(optOutSignal).toBeUndefined()
    // An undefined per-execution value falls back to the constructor's.
    const short = new ToolExecutor(reg, { toolTimeoutMs: 25 })
    expect(await short.execute('dflt', {}, ctx, { toolTimeoutMs: undefined })).toStrictEqual({ data: timedOut('dflt', 25), isError: true })
  })

  test('the text is limited like a thrown error\'s; after an allow it carries the gate\'s verdict', async () => {
    const reg = new ToolRegistry()
    const { tool } = hungTool('hang', { timeoutMs: 20 })
    reg.register({ ...tool, maxOutputChars: 12 })
    expect(await new ToolExecutor(reg).execute('hang', {}, ctx)).toStrictEqual({ data: timedOut('hang', 20).slice(0, 12), isError: true })
    const reg2 = new ToolRegistry()
    reg2.register(hungTool('hang', { timeoutMs: 20 }).tool)
    const gated = new ToolExecutor(reg2, { onToolCall: () => ({ action: 'allow' }) })
    expect(await gated.execute('hang', {}, ctx)).toStrictEqual({
      data: timedOut('hang', 20), isError: true, metadata: { toolCallGate: { action: 'allow' } },
    })
  })

  test('the timeout covers execute only, not the onToolCall gate\'s wait', async () => {
    const reg = new ToolRegistry()
    reg.register(echo)
    let releaseGate!: () => void
    const gateWait = new Promise<void>((r) => { releaseGate = r })
    const executor = new ToolExecutor(reg, {
      toolTimeoutMs: 30,
      onToolCall: async () => { await gateWait; return { action: 'allow' } },
    })
    const p = executor.execute('echo', { v: 'x' }, ctx)
    // Far longer than the timeout, counted by the gate's own timer (not a duration assertion).
    await new Promise((r) => setTimeout(r, 120))
    releaseGate()
    expect(await p).toStrictEqual({ data: 'echo:x', metadata: { toolCallGate: { action: 'allow' } } })
  })

  test('executeBatch: the hung call times out, the others finish', async () => {
    const reg = new ToolRegistry()
    reg.register(hungTool('hang').tool)
    reg.register(echo)
    const results = await new ToolExecutor(reg, { toolTimeoutMs: 40 }).executeBatch([
      { id: 'h', name: 'hang', input: {} },
      { id: 'e', name: 'echo', input: { v: 'y' } },
    ], ctx)
    expect(results.get('h')).toStrictEqual({ data: timedOut('hang', 40), isError: true })
    expect(results.get('e')).toStrictEqual({ data: 'echo:y' })
  })

  test('a slot is freed at the timeout: the next call does not wait for the hung tool', async () => {
    const reg = new ToolRegistry()
    reg.register(hungTool('hang', { timeoutMs: 20 }).tool)
    reg.register(echo)
    const executor = new ToolExecutor(reg, { maxConcurrency: 1 })
    const first = executor.execute('hang', {}, ctx)
    const second = executor.execute('echo', { v: 'z' }, ctx)
    expect(await first).toStrictEqual({ data: timedOut('hang', 20), isError: true })
    expect(await second).toStrictEqual({ data: 'echo:z' })
  })

  test('a tool that rejects or throws late, or never settles, leaves no unhandled rejection and no timer', () => {
    const script = `
      const { ToolRegistry, ToolExecutor, defineTool } = require(${JSON.stringify(path.join(__dirname, '..'))})
      const { z } = require('zod')
      const reg = new ToolRegistry()
      let fail
      reg.register(defineTool({ name: 'late', description: 'd', inputSchema: z.object({}), timeoutMs: 20,
        execute: () => new Promise((_, reject) => { fail = reject }) }))
      reg.register(defineTool({ name: 'never', description: 'd', inputSchema: z.object({}), timeoutMs: 20,
        execute: () => new Promise(() => {}) }))
      const ex = new ToolExecutor(reg)
      ;(async () => {
        console.log((await ex.execute('late', {}, { agent: { name: 'a' } })).data)
        fail(new Error('late failure'))
        console.log((await ex.execute('never', {}, { agent: { name: 'a' } })).data)
        await new Promise((r) => setTimeout(r, 50))
        console.log('done')
      })()
    `
    const out = spawnSync(process.execPath, ['--unhandled-rejections=throw', '-e', script], { encoding: 'utf8', timeout: 20_000, cwd: path.join(__dirname, '..') })
    expect(out.stderr).toBe('')
    expect(out.stdout).toBe(`${timedOut('late', 20)}\n${timedOut('never', 20)}\ndone\n`)
    // It exited on its own: the hung promise keeps nothing alive, and no timer was left armed.
    expect(out.status).toBe(0)
  })

  test('after the caller\'s abort, a long timeout no longer keeps the process alive', () => {
    // The tool ignores the abort; the 10-minute timer still bounds it but must not hold the
    // process: the child exits by itself well before spawnSync's limit, or is killed (status null).
    const script = `
      const { ToolRegistry, ToolExecutor, defineTool } = require(${JSON.stringify(path.join(__dirname, '..'))})
      const { z } = require('zod')
      const reg = new ToolRegistry()
      reg.register(defineTool({ name: 'deaf', description: 'd', inputSchema: z.object({}), timeoutMs: 600000,
        execute: (_i, c) => new Promise(() => { c.abortSignal.addEventListener('abort', () => console.log('told')) }) }))
      const ac = new AbortController()
      new ToolExecutor(reg).execute('deaf', {}, { agent: { name: 'a' }, abortSignal: ac.signal })
      setImmediate(() => ac.abort())
    `
    const out = spawnSync(process.execPath, ['--unhandled-rejections=throw', '-e', script], { encoding: 'utf8', timeout: 20_000, cwd: path.join(__dirname, '..') })
    expect(out.stderr).toBe('')
    expect(out.stdout).toBe('told\n')
    expect(out.status).toBe(0)
  })
})

describe('runs: the round goes on and the history stays replayable', () => {
  function scriptedAdapter(replies: LLMResponse[]) {
    const seen: LLMMessage[][] = []
    const adapter: LLMAdapter = {
      name: 'scripted',
      async chat(messages) {
        seen.push(JSON.parse(JSON.stringify(messages)))
        return replies[Math.min(seen.length - 1, replies.length - 1)]
      },
      async *stream() {},
    }
    return { adapter, seen }
  }
  const round = resp([
    { type: 'tool_use', id: 'tu_hang', name: 'hang', input: {} },
    { type: 'tool_use', id: 'tu_echo', name: 'echo', input: { v: 'hi' } },
  ])

  test('AgentConfig.toolTimeoutMs: the hung tool times out, the other finishes, the model gets both and answers', async () => {
    const reg = new ToolRegistry()
    const hang = hungTool('hang')
    reg.register(hang.tool)
    reg.register(echo)
    const { adapter, seen } = scriptedAdapter([round, resp([{ type: 'text', text: 'final answer' }])])
    const agent = new Agent({ name: 'worker', model: 'm', adapter, tools: ['hang', 'echo'], toolTimeoutMs: 80 }, reg, new ToolExecutor(reg))
    const traces: TraceEvent[] = []
    const results: Array<[string, ToolResult]> = []
    const r = await agent.run('go', { onTrace: (e) => { traces.push(e) }, onToolResult: (n, res) => { results.push([n, res]) } })
    expect(r.success).toBe(true)
    expect(r.output).toBe('final answer')
    expect(hang.seen.signal!.aborted).toBe(true)
    expect(hang.seen.signal!.reason.name).toBe('TimeoutError')
    // Every tool_use got its tool_result, in block order, and the model saw them.
    const answered = { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'tu_hang', content: timedOut('hang', 80), is_error: true },
      { type: 'tool_result', tool_use_id: 'tu_echo', content: 'echo:hi' },
    ] }
    expect(seen).toHaveLength(2)
    expect(seen[1][seen[1].length - 1]).toEqual(answered)
    expect(r.messages).toContainEqual(answered)
    expect(r.toolCalls.map((c) => [c.toolName, c.output])).toEqual([['hang', timedOut('hang', 80)], ['echo', 'echo:hi']])
    // onToolResult and the trace see it as any other tool error.
    expect(results).toContainEqual(['hang', { data: timedOut('hang', 80), isError: true }])
    const t = traces.find((e) => e.type === 'tool_call' && (e as any).tool === 'hang') as any
    expect(t.isError).toBe(true)
    expect(t.output).toBe(timedOut('hang', 80))
    // Replayable: every tool_use of the history has its tool_result in the next message.
    const msgs = r.messages as LLMMessage[]
    msgs.forEach((m, i) => {
      const uses = (m.content as ContentBlock[]).filter((b) => b.type === 'tool_use').map((b: any) => b.id)
      if (uses.length === 0) return
      const results = (msgs[i + 1].content as ContentBlock[]).filter((b) => b.type === 'tool_result').map((b: any) => b.tool_use_id)
      expect(results).toEqual(uses)
    })
    hang.seen.settle!({ data: 'late' })
  })

  test('RunnerOptions.toolTimeoutMs, under a tool\'s own timeoutMs, over the executor\'s default', async () => {
    const reg = new ToolRegistry()
    const own = hungTool('hang', { timeoutMs: 30 })
    reg.register(own.tool)
    reg.register(echo)
    const { adapter, seen } = scriptedAdapter([round, resp([{ type: 'text', text: 'ok' }])])
    const runner = new AgentRunner(adapter, reg, new ToolExecutor(reg, { toolTimeoutMs: 60_000 }), {
      model: 'm', allowedTools: ['hang', 'echo'], toolTimeoutMs: 45_000,
    })
    const r = await runner.run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }])
    expect(r.output).toBe('ok')
    const last = seen[1][seen[1].length - 1].content as any[]
    expect(last[0]).toEqual({ type: 'tool_result', tool_use_id: 'tu_hang', content: timedOut('hang', 30), is_error: true })
    // Without the tool's own value, the runner's default applies over the executor's.
    const reg2 = new ToolRegistry()
    reg2.register(hungTool('hang').tool)
    reg2.register(echo)
    const s2 = scriptedAdapter([round, resp([{ type: 'text', text: 'ok' }])])
    const r2 = await new AgentRunner(s2.adapter, reg2, new ToolExecutor(reg2, { toolTimeoutMs: 60_000 }), {
      model: 'm', allowedTools: ['hang', 'echo'], toolTimeoutMs: 35,
    }).run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }])
    expect(r2.toolCalls[0].output).toBe(timedOut('hang', 35))
  })
})


describe('built-in tools stop their work', () => {
  test('bash: its process tree is killed and the command\'s side effect never happens', async () => {
    const reg = new ToolRegistry()
    reg.register(bashTool)
    const pidFile = path.join(dir, 'pids')
    const marker = path.join(dir, 'marker')
    fs.writeFileSync(pidFile, '')
    // The native call, to await its end once the timeout tripped the cancel handle.
    const spy = jest.spyOn(native, 'builtinBash')
    try {
      const command = `echo $$ >> ${pidFile}; sleep 30 & echo $! >> ${pidFile}; wait; touch ${marker}`
      // The tool's own `timeout` (30 s) stays; the per-tool timeout fires first.
      const r = await new ToolExecutor(reg, { toolTimeoutMs: 1500 }).execute('bash', { command, timeout: 30_000 }, ctx)
      expect(r).toStrictEqual({ data: timedOut('bash', 1500), isError: true })
      expect(spy).toHaveBeenCalledTimes(1)
      const handle = spy.mock.calls[0][4] as { cancelled: boolean }
      expect(handle.cancelled).toBe(true)
      // The helper kills the tree and then answers (exit 130: aborted).
      const nativeResult = await (spy.mock.results[0].value as Promise<{ data: string; isError: boolean }>)
      expect(nativeResult.isError).toBe(true)
      expect(nativeResult.data).toMatch(/130/)
      const pids = pidsIn(pidFile)
      expect(pids).toHaveLength(2)
      for (const pid of pids) expect(alive(pid)).toBe(false)
      // The shell that would touch the marker is gone, so the marker never appears.
      expect(fs.existsSync(marker)).toBe(false)
    } finally {
      spy.mockRestore()
    }
  })

  test('bash: its own timeout input keeps 1.7\'s behaviour when it fires first', async () => {
    const reg = new ToolRegistry()
    reg.register(bashTool)
    const r = await new ToolExecutor(reg, { toolTimeoutMs: 60_000 }).execute('bash', { command: 'sleep 30', timeout: 100 }, ctx)
    expect(r).toStrictEqual({ data: '(command exited with code 124, no output)', isError: true })
  })

  test('grep: the walk over a tree stops at the timeout', async () => {
    // A tree whose every file has one long line on which a lookahead re-scans the rest at every
    // position: each match runs into grep's 2 s budget unless the cancel is seen inside it.
    const tree = path.join(dir, 'tree')
    for (let d = 0; d < 4; d++) {
      fs.mkdirSync(path.join(tree, `d${d}`), { recursive: true })
      for (let f = 0; f < 4; f++) fs.writeFileSync(path.join(tree, `d${d}`, `f${f}.txt`), 'a'.repeat(200_000) + '\n')
    }
    const reg = new ToolRegistry()
    reg.register(grepTool)
    const spy = jest.spyOn(native, 'builtinGrep')
    try {
      const r = await new ToolExecutor(reg, { toolTimeoutMs: 100 }).execute('grep', { pattern: String.raw`(?=.*x)(.*)\1y`, path: tree }, { ...ctx, cwd: dir })
      expect(r).toStrictEqual({ data: timedOut('grep', 100), isError: true })
      const handle = spy.mock.calls[0][6] as { cancelled: boolean }
      expect(handle.cancelled).toBe(true)
      // Stopped: the hits so far (none), not the budget error a finished first match would give.
      expect(await (spy.mock.results[0].value as Promise<unknown>)).toEqual({ data: 'No matches found.', isError: false })
    } finally {
      spy.mockRestore()
    }
  })
})

describe('unset: nothing armed, nothing crosses', () => {
  test('no timer, no native call, the caller\'s very context', async () => {
    const reg = new ToolRegistry()
    let got: ToolUseContext | undefined
    reg.register(defineTool({ name: 'probe', description: 'd', inputSchema: z.object({}), execute: async (_i, c) => { got = c; return { data: 'ok' } } }))
    const executor = new ToolExecutor(reg)
    await executor.execute('probe', {}, ctx) // warm
    const answer = jest.spyOn(native, 'executorAnswer')
    const invalid = jest.spyOn(native, 'toolTimeoutInvalid')
    const timer = jest.spyOn(global, 'setTimeout')
    try {
      for (const opts of [undefined, { toolTimeoutMs: undefined }, { toolTimeoutMs: 0 }, { toolTimeoutMs: -5 }, { toolTimeoutMs: Infinity }]) {
        expect(await executor.execute('probe', {}, ctx, opts)).toStrictEqual({ data: 'ok' })
        expect(got).toBe(ctx)
      }
      expect(timer).not.toHaveBeenCalled()
      expect(answer).not.toHaveBeenCalled()
      expect(invalid).not.toHaveBeenCalled()
    } finally {
      answer.mockRestore()
      invalid.mockRestore()
      timer.mockRestore()
    }
  })

  test('set, with a tool that finishes first: one timer, cleared; one native call only on a timeout', async () => {
    const reg = new ToolRegistry()
    reg.register(echo)
    reg.register(hungTool('hang').tool)
    const executor = new ToolExecutor(reg, { toolTimeoutMs: 4321 })
    const timers = watchTimers(4321)
    const answer = jest.spyOn(native, 'executorAnswer')
    try {
      expect(await executor.execute('echo', { v: 'q' }, ctx)).toStrictEqual({ data: 'echo:q' })
      expect(timers.armed()).toBe(1)
      expect(timers.live.size).toBe(0)
      expect(answer).not.toHaveBeenCalled()
      expect(await executor.execute('hang', {}, ctx, { toolTimeoutMs: 10 })).toStrictEqual({ data: timedOut('hang', 10), isError: true })
      expect(answer).toHaveBeenCalledTimes(1)
    } finally {
      timers.restore()
      answer.mockRestore()
    }
  })
})

describe('invalid settings are configuration errors', () => {
  const text = (setting: string, got: string) =>
    `${setting} must be a number of milliseconds (unset, 0 or less: no timeout), got ${got}`
  const def = (timeoutMs: unknown) => () => defineTool({ name: 't', description: 'd', inputSchema: z.object({}), timeoutMs: timeoutMs as number, execute: async () => ({ data: '' }) })

  test('defineTool and ToolRegistry.register', () => {
    expect(def('5000')).toThrow(new TypeError(text('timeoutMs of tool "t"', '"5000"')))
    expect(def('5000')).toThrow(TypeError)
    expect(def(NaN)).toThrow(RangeError)
    expect(def(NaN)).toThrow(text('timeoutMs of tool "t"', 'NaN'))
    expect(def({})).toThrow(text('timeoutMs of tool "t"', 'object'))
    for (const ok of [0, -1, 1.5, Infinity, null]) expect(def(ok)).not.toThrow()
    const reg = new ToolRegistry()
    expect(() => reg.register({ ...echo, timeoutMs: true } as any)).toThrow(new TypeError(text('timeoutMs of tool "echo"', 'boolean')))
    expect(reg.has('echo')).toBe(false)
  })

  test('ToolExecutor options, per execution, RunnerOptions and AgentConfig', async () => {
    const reg = new ToolRegistry()
    reg.register(echo)
    expect(() => new ToolExecutor(reg, { toolTimeoutMs: '1s' as any })).toThrow(new TypeError(text('ToolExecutorOptions.toolTimeoutMs', '"1s"')))
    expect(() => new ToolExecutor(reg, { toolTimeoutMs: NaN })).toThrow(RangeError)
    await expect(new ToolExecutor(reg).execute('echo', { v: 'x' }, ctx, { toolTimeoutMs: NaN })).rejects.toThrow(
      text('ToolExecutorExecutionOptions.toolTimeoutMs', 'NaN'),
    )
    const adapter: LLMAdapter = { name: 'x', chat: async () => resp([{ type: 'text', text: 'x' }]), async *stream() {} }
    expect(() => new AgentRunner(adapter, reg, new ToolExecutor(reg), { model: 'm', toolTimeoutMs: 'x' as any })).toThrow(
      new TypeError(text('RunnerOptions.toolTimeoutMs', '"x"')),
    )
    expect(() => new Agent({ name: 'a', model: 'm', adapter, toolTimeoutMs: NaN }, reg, new ToolExecutor(reg))).toThrow(
      new RangeError(text('AgentConfig.toolTimeoutMs', 'NaN')),
    )
  })
})
