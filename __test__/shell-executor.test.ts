// The ShellExecutor seam (upstream 1.16, issue 14 point 1): LocalShellExecutor on real processes,
// bash through a user's executor (the backstop, the layout, the additive sandboxRoot), the
// run-scoped lifecycle under real Agent runs (start once per window, dispose when the last run
// ends, failures), and the default bash path left as it was (no extra native call).
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { z } from 'zod'
import {
  Agent,
  AgentRunner,
  LocalShellExecutor,
  ToolExecutor,
  ToolRegistry,
  bashTool,
  defineTool,
  defaultWorkspaceDir,
  registerBuiltInTools,
} from '../index'
import type {
  AgentConfig,
  LLMAdapter,
  LLMResponse,
  ShellExecOptions,
  ShellExecResult,
  ShellExecutor,
  StreamEvent,
  ToolUseContext,
} from '../index'
import { abortTree, runTree } from './helpers/procs'
import { allowedNames, withForeignVars } from './helpers/shell-env'
import { resp, scripted, text } from './helpers/scripted'
import { signal } from './helpers/async'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const native = require('../lib/native.js')

const ctx: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' } }
let dir: string

beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-shell-')))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

/** A command leaving a background child and a setsid'd grandchild, both recording their pids. */
function treeCommand(marker: string, pidFile: string): string {
  return [
    `sleep ${marker} & echo $! >> ${pidFile}`,
    `( setsid bash -c 'echo $$ >> ${pidFile}; exec sleep ${marker}' & )`,
    `while [ "$(wc -l < ${pidFile})" -lt 2 ]; do sleep 0.01; done`,
    'echo ready',
    `sleep ${marker}`,
  ].join('\n')
}


const bashUse = (id: string, command: string, extra: Record<string, unknown> = {}): LLMResponse =>
  resp([{ type: 'tool_use', id, name: 'bash', input: { command, ...extra } }])

function agentWith(config: Partial<AgentConfig> & { adapter: LLMAdapter }): Agent {
  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  return new Agent({ name: 'shell-agent', model: 'm', tools: ['bash'], ...config } as AgentConfig, registry, new ToolExecutor(registry))
}

function recording(events: string[]): ShellExecutor {
  return {
    async start() {
      events.push('start')
    },
    async exec(command: string): Promise<ShellExecResult> {
      events.push(`exec:${command}`)
      return { stdout: command, stderr: '', exitCode: 0 }
    },
    async dispose() {
      events.push('dispose')
    },
  }
}

/**
 * An exec that answers each command with itself, but only once two commands are in it at the same
 * time (so two calls that were not concurrent would hang). `onEnter` sees each command first.
 */
function pairedExec(onEnter: (command: string) => void = () => {}) {
  const both = signal()
  const seen = { entered: 0 }
  async function exec(command: string): Promise<ShellExecResult> {
    onEnter(command)
    seen.entered++
    if (seen.entered === 2) both.fire()
    await both.fired
    return { stdout: command, stderr: '', exitCode: 0 }
  }
  return { exec, seen }
}

// ---- LocalShellExecutor -----------------------------------------------------------------------

describe('LocalShellExecutor, used directly', () => {
  const local = new LocalShellExecutor()

  test('raw stdout, stderr and exit code, not laid out and not redacted', async () => {
    expect(await local.exec('printf out; printf err >&2; exit 3', { timeoutMs: 10_000 })).toEqual({ stdout: 'out', stderr: 'err', exitCode: 3 })
    expect(await local.exec('printf PWD=here', { timeoutMs: 10_000 })).toEqual({ stdout: 'PWD=here', stderr: '', exitCode: 0 })
    expect(await local.exec('true', { timeoutMs: 10_000 })).toEqual({ stdout: '', stderr: '', exitCode: 0 })
  })

  test('cwd is used; a missing one is a start failure (127, the spawn error in stderr)', async () => {
    expect(await local.exec('pwd -P', { cwd: dir, timeoutMs: 10_000 })).toEqual({ stdout: `${dir}\n`, stderr: '', exitCode: 0 })
    expect(await local.exec('true', { cwd: path.join(dir, 'missing'), timeoutMs: 10_000 })).toEqual({
      stdout: '',
      stderr: 'spawn bash ENOENT',
      exitCode: 127,
    })
  })

  test('timeout → 124 with the output so far; abort → 130; an aborted signal starts nothing', async () => {
    expect(await local.exec('printf early; sleep 30', { timeoutMs: 300 })).toEqual({ stdout: 'early', stderr: '', exitCode: 124 })

    const flag = path.join(dir, 'abort-flag')
    const ac = new AbortController()
    const p = local.exec(`printf started; touch ${flag}; sleep 30`, { timeoutMs: 30_000, abortSignal: ac.signal })
    for (let i = 0; i < 3000 && !fs.existsSync(flag); i++) await sleep(10)
    ac.abort()
    expect(await p).toEqual({ stdout: 'started', stderr: '', exitCode: 130 })

    const never = path.join(dir, 'never-created')
    const pre = new AbortController()
    pre.abort()
    expect(await local.exec(`touch ${never}`, { timeoutMs: 10_000, abortSignal: pre.signal })).toEqual({ stdout: '', stderr: '', exitCode: 130 })
    expect(fs.existsSync(never)).toBe(false)
  })

  test('only the allowlisted environment reaches the command', async () => {
    await withForeignVars('OMA_SHELL_TEST_VISIBLE', async () => {
      const r = await local.exec('env', { timeoutMs: 10_000 })
      expect(r.exitCode).toBe(0)
      expect(allowedNames(r.stdout)).toContain('PATH')
      expect(r.stdout).not.toContain('OPENAI')
      expect(r.stdout).not.toContain('OMA_SHELL_TEST_VISIBLE')
    })
  })

  test('output kept in memory is bounded per stream', async () => {
    const r = await local.exec("head -c 11000000 /dev/zero | tr '\\0' a", { timeoutMs: 20_000 })
    expect(r.exitCode).toBe(0)
    expect(r.stdout.length).toBeLessThan(10 * 1024 * 1024 + 100)
    expect(r.stdout.endsWith(`[output truncated: more than ${10 * 1024 * 1024} bytes]`)).toBe(true)
  })

  test('the whole tree dies on a timeout', async () => {
    const { result, pids } = await runTree(dir, (marker, pidFile) => local.exec(treeCommand(marker, pidFile), { timeoutMs: 2000 }))
    expect(result).toEqual({ stdout: 'ready\n', stderr: '', exitCode: 124 })
    expect(pids.length).toBe(2)
  })

  test('the whole tree dies on an abort', async () => {
    const r = await abortTree(dir, 2, (marker, pidFile, abortSignal) => local.exec(treeCommand(marker, pidFile), { timeoutMs: 30_000, abortSignal }))
    expect(r.exitCode).toBe(130)
  })
})

// ---- bash through an executor ---------------------------------------------------------------

describe('bash with a ToolUseContext.shellExecutor', () => {
  test('exec gets the command, the input cwd, the timeout, a fresh signal and the sandbox root', async () => {
    const seen: Array<[string, ShellExecOptions]> = []
    const executor: ShellExecutor = {
      async exec(command, options) {
        seen.push([command, options])
        return { stdout: 'ok\n', stderr: '', exitCode: 0 }
      },
    }
    const caller = new AbortController()
    expect(await bashTool.execute({ command: 'remote', cwd: '/remote/work', timeout: 234 }, { ...ctx, cwd: dir, shellExecutor: executor, abortSignal: caller.signal })).toEqual({
      data: 'ok\n',
      isError: false,
    })
    await bashTool.execute({ command: 'two' }, { ...ctx, shellExecutor: executor })
    await bashTool.execute({ command: 'three' }, { ...ctx, cwd: null, shellExecutor: executor })
    expect(seen.map(([c, o]) => [c, o.cwd, o.timeoutMs, o.sandboxRoot])).toEqual([
      ['remote', '/remote/work', 234, dir],
      ['two', undefined, 30000, defaultWorkspaceDir()],
      ['three', undefined, 30000, null],
    ])
    for (const [, o] of seen) expect(o.abortSignal).toBeInstanceOf(AbortSignal)
    // Not the caller's signal: the backstop owns the one the executor sees.
    expect(seen[0][1].abortSignal).not.toBe(caller.signal)
    // The sandbox root is only read, never created, for an executor.
    expect(fs.existsSync(path.join(dir, '.agent-workspace'))).toBe(false)
  })

  test('the result takes the native path\'s layout and redaction, byte for byte', async () => {
    const local = new LocalShellExecutor()
    const cases: Array<{ command: string; cwd?: string }> = [
      { command: 'echo out; echo err >&2' },
      { command: 'echo err >&2; exit 3' },
      { command: 'true' },
      { command: 'exit 7' },
      { command: 'echo "password=hunter2"; env | sort' },
      { command: 'true', cwd: path.join(dir, 'missing') },
    ]
    for (const c of cases) {
      const raw = await local.exec(c.command, { cwd: c.cwd, timeoutMs: 10_000 })
      const replay: ShellExecutor = { exec: async () => raw }
      const direct = await bashTool.execute(c, ctx)
      expect(await bashTool.execute(c, { ...ctx, shellExecutor: replay })).toEqual(direct)
    }
    const timedOut: ShellExecutor = { exec: async () => ({ stdout: '', stderr: '', exitCode: 124 }) }
    expect(await bashTool.execute({ command: 'x' }, { ...ctx, shellExecutor: timedOut })).toEqual({ data: '(command exited with code 124, no output)', isError: true })
  })

  test('a secret the executor returns is redacted', async () => {
    const executor: ShellExecutor = {
      exec: async () => ({ stdout: 'hello\nOPENAI_API_KEY=sk-outputsecretvalue1234567890', stderr: 'remote warning', exitCode: 7 }),
    }
    const r = await bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: executor })
    expect(r.isError).toBe(true)
    expect(r.data).toContain('--- stderr ---\nremote warning')
    expect(r.data).toContain('(exit code: 7)')
    expect(r.data).toContain('[redacted]')
    expect(r.data).not.toContain('sk-outputsecretvalue1234567890')
  })

  test('a rejection is a start failure: 127, its message in stderr (redacted)', async () => {
    const rejecting: ShellExecutor = {
      async exec() {
        throw new Error('no session')
      },
    }
    expect(await bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: rejecting })).toEqual({ data: 'no session\n\n(exit code: 127)', isError: true })
    const secret: ShellExecutor = {
      exec: () => Promise.reject('OPENAI_API_KEY=sk-rejectedsecretvalue1234567890'),
    }
    const r = await bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: secret })
    expect(r.data).toContain('127')
    expect(r.data).not.toContain('sk-rejectedsecretvalue1234567890')
    const throwing = {
      exec() {
        throw new TypeError('thrown before any promise')
      },
    } as unknown as ShellExecutor
    expect(await bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: throwing })).toEqual({
      data: 'thrown before any promise\n\n(exit code: 127)',
      isError: true,
    })
  })

  test('a result bash cannot lay out is named, as a start failure', async () => {
    const bad = (value: unknown): ShellExecutor => ({ exec: async () => value as ShellExecResult })
    const run = (value: unknown) => bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: bad(value) })
    expect(await run(null)).toEqual({
      data: 'ShellExecutor.exec resolved with an invalid result: expected { stdout: string, stderr: string, exitCode: number }, got null\n\n(exit code: 127)',
      isError: true,
    })
    expect((await run({ stderr: '', exitCode: 0 })).data).toBe(
      'ShellExecutor.exec resolved with an invalid result: stdout must be a string, got undefined\n\n(exit code: 127)',
    )
    expect((await run({ stdout: '', stderr: '', exitCode: '0' })).data).toBe(
      'ShellExecutor.exec resolved with an invalid result: exitCode must be a number, got string\n\n(exit code: 127)',
    )
  })

  test('the backstop ends an executor that ignores its deadline: 124, its signal aborted', async () => {
    let received: AbortSignal | undefined
    const hung: ShellExecutor = {
      exec: async (_c, options) => {
        received = options.abortSignal
        return new Promise<ShellExecResult>(() => {})
      },
    }
    expect(await bashTool.execute({ command: 'hang', timeout: 5 }, { ...ctx, shellExecutor: hung })).toEqual({
      data: '(command exited with code 124, no output)',
      isError: true,
    })
    expect(received?.aborted).toBe(true)
  })

  test('the backstop ends an executor that ignores the caller\'s abort: 130', async () => {
    const ac = new AbortController()
    let received: AbortSignal | undefined
    const hung: ShellExecutor = {
      exec: async (_c, options) => {
        received = options.abortSignal
        ac.abort()
        return new Promise<ShellExecResult>(() => {})
      },
    }
    expect(await bashTool.execute({ command: 'hang', timeout: 60_000 }, { ...ctx, shellExecutor: hung, abortSignal: ac.signal })).toEqual({
      data: '(command exited with code 130, no output)',
      isError: true,
    })
    expect(received?.aborted).toBe(true)
  })

  test('a cooperative executor keeps its output, with the code forced; a rejection after the termination is empty', async () => {
    const cooperative: ShellExecutor = {
      exec: (_c, options) =>
        new Promise((resolve) => {
          options.abortSignal!.addEventListener('abort', () => resolve({ stdout: 'partial\n', stderr: '', exitCode: 0 }))
        }),
    }
    expect(await bashTool.execute({ command: 'c', timeout: 5 }, { ...ctx, shellExecutor: cooperative })).toEqual({ data: 'partial\n\n\n(exit code: 124)', isError: true })
    const rejecting: ShellExecutor = {
      exec: (_c, options) =>
        new Promise((_resolve, reject) => {
          options.abortSignal!.addEventListener('abort', () => reject(new Error('killed')))
        }),
    }
    expect(await bashTool.execute({ command: 'c', timeout: 5 }, { ...ctx, shellExecutor: rejecting })).toEqual({
      data: '(command exited with code 124, no output)',
      isError: true,
    })
  })

  test('a caller signal already aborted never calls exec', async () => {
    const exec = jest.fn(async () => ({ stdout: 'ran', stderr: '', exitCode: 0 }))
    const ac = new AbortController()
    ac.abort()
    expect(await bashTool.execute({ command: 'c' }, { ...ctx, shellExecutor: { exec }, abortSignal: ac.signal })).toEqual({
      data: '(command exited with code 130, no output)',
      isError: true,
    })
    expect(exec).not.toHaveBeenCalled()
  })

  test('a LocalShellExecutor in the context is called directly, with the caller\'s signal', async () => {
    const local = new LocalShellExecutor()
    const spy = jest.spyOn(local, 'exec')
    const ac = new AbortController()
    expect(await bashTool.execute({ command: 'echo hi', cwd: dir }, { ...ctx, shellExecutor: local, abortSignal: ac.signal })).toEqual({ data: 'hi\n', isError: false })
    expect(spy.mock.calls[0][1]).toEqual({ cwd: dir, timeoutMs: 30000, abortSignal: ac.signal, sandboxRoot: defaultWorkspaceDir() })
    // Upstream's LocalShellExecutor: an aborted signal starts nothing (130).
    ac.abort()
    const never = path.join(dir, 'never-local')
    expect(await bashTool.execute({ command: `touch ${never}` }, { ...ctx, shellExecutor: local, abortSignal: ac.signal })).toEqual({
      data: '(command exited with code 130, no output)',
      isError: true,
    })
    expect(fs.existsSync(never)).toBe(false)
  })
})

// ---- the default path -----------------------------------------------------------------------

describe('the default bash path is unchanged', () => {
  test('no executor: one native call (the formatted spawn), nothing of the seam', async () => {
    const names = ['builtinBash', 'builtinBashExec', 'builtinBashFormat', 'builtinShellInvalidResult', 'builtinRedactText']
    const spies = names.map((n) => jest.spyOn(native, n))
    try {
      expect(await bashTool.execute({ command: 'echo out; echo err >&2; exit 2' }, ctx)).toEqual({ data: 'out\n\n--- stderr ---\nerr\n\n\n(exit code: 2)', isError: true })
      expect(spies.map((s) => s.mock.calls.length)).toEqual([1, 0, 0, 0, 0])
    } finally {
      for (const s of spies) s.mockRestore()
    }
  })

  test('a run without an executor gives its tools no shellExecutor and makes no seam call', async () => {
    const seen: ToolUseContext[] = []
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    registry.register(defineTool({ name: 'probe', description: 'd', inputSchema: z.object({}), execute: async (_i, c) => { seen.push(c); return { data: 'p' } } }))
    const agent = new Agent(
      {
        name: 'plain', model: 'm', tools: ['bash', 'probe'],
        adapter: scripted([resp([{ type: 'tool_use', id: 't1', name: 'probe', input: {} }, { type: 'tool_use', id: 't2', name: 'bash', input: { command: 'echo hi' } }]), text('done')]),
      },
      registry,
      new ToolExecutor(registry),
    )
    const spies = ['builtinBash', 'builtinBashExec', 'builtinBashFormat'].map((n) => jest.spyOn(native, n))
    try {
      const r = await agent.run('go')
      expect(r.success).toBe(true)
      expect(r.toolCalls.map((c) => c.output)).toEqual(['p', 'hi\n'])
      expect(spies.map((s) => s.mock.calls.length)).toEqual([1, 0, 0])
    } finally {
      for (const s of spies) s.mockRestore()
    }
    expect('shellExecutor' in seen[0]).toBe(false)
    expect('shellExecutor' in agent.buildToolContext()).toBe(false)
  })
})

// ---- lifecycle under runs -------------------------------------------------------------------

describe('the run-scoped lifecycle', () => {
  test('start once, both commands, dispose at the end of the run; again for the next run', async () => {
    const events: string[] = []
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'first'), bashUse('t2', 'second'), text('done'), bashUse('t3', 'third'), text('done')]), shellExecutor: recording(events) })
    const r = await agent.run('both')
    expect(r.success).toBe(true)
    expect(r.toolCalls.map((c) => c.output)).toEqual(['first', 'second'])
    expect(events).toEqual(['start', 'exec:first', 'exec:second', 'dispose'])
    await agent.run('again')
    expect(events).toEqual(['start', 'exec:first', 'exec:second', 'dispose', 'start', 'exec:third', 'dispose'])
  })

  test('disposed after a provider failure', async () => {
    const events: string[] = []
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'started'), new Error('provider failed')]), shellExecutor: recording(events) })
    const r = await agent.run('fail')
    expect(r.success).toBe(false)
    expect(r.output).toContain('provider failed')
    expect(events).toEqual(['start', 'exec:started', 'dispose'])
  })

  test('never started when bash is not called, not granted, or denied by the gate', async () => {
    const events: string[] = []
    const executor = recording(events)
    const failed = await agentWith({ adapter: scripted([new Error('provider failed before tools')]), shellExecutor: executor }).run('x')
    expect(failed.success).toBe(false)

    const ungranted = await agentWith({ adapter: scripted([bashUse('t1', 'must-not-run'), text('done')]), tools: ['file_read'], shellExecutor: executor }).run('x')
    expect(ungranted.success).toBe(true)
    expect(ungranted.toolCalls[0].output).toContain('not granted')

    const gate = jest.fn(async () => ({ action: 'deny' as const, reason: 'blocked' }))
    const denied = await agentWith({ adapter: scripted([bashUse('t1', 'must-not-run'), text('done')]), onToolCall: gate, shellExecutor: executor }).run('x')
    expect(denied.success).toBe(true)
    expect(denied.toolCalls[0].output).toContain('blocked')
    expect(gate).toHaveBeenCalledTimes(1)

    expect(events).toEqual([])
  })

  test('a failed start is the command\'s result (the run goes on), and dispose is still attempted', async () => {
    const events: string[] = []
    const executor: ShellExecutor = {
      async start() {
        events.push('start')
        throw new Error('start failed')
      },
      async exec() {
        events.push('exec')
        return { stdout: 'must not run', stderr: '', exitCode: 0 }
      },
      async dispose() {
        events.push('dispose')
      },
    }
    const r = await agentWith({ adapter: scripted([bashUse('t1', 'c'), text('handled')]), shellExecutor: executor }).run('x')
    expect(r.success).toBe(true)
    expect(r.output).toBe('handled')
    expect(r.toolCalls[0].output).toBe('start failed\n\n(exit code: 127)')
    expect(events).toEqual(['start', 'dispose'])
  })

  test('a failed start whose cleanup fails too: the AggregateError\'s text', async () => {
    const executor: ShellExecutor = {
      start: async () => {
        throw new Error('start failed')
      },
      exec: async () => ({ stdout: '', stderr: '', exitCode: 0 }),
      dispose: async () => {
        throw new Error('cleanup failed')
      },
    }
    const r = await agentWith({ adapter: scripted([bashUse('t1', 'c'), text('handled')]), shellExecutor: executor }).run('x')
    expect(r.success).toBe(true)
    expect(r.toolCalls[0].output).toBe('Shell executor start failed and cleanup also failed.\n\n(exit code: 127)')
  })

  test('a dispose that throws fails the run (1.7\'s failed result); the next run starts afresh', async () => {
    const events: string[] = []
    let disposals = 0
    const executor: ShellExecutor = {
      start: async () => {
        events.push('start')
      },
      exec: async (command) => {
        events.push(`exec:${command}`)
        return { stdout: '', stderr: '', exitCode: 0 }
      },
      dispose: async () => {
        events.push('dispose')
        if (disposals++ === 0) throw new Error('dispose failed')
      },
    }
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'c'), text('would have succeeded'), bashUse('t2', 'd'), text('next')]), shellExecutor: executor })
    const r = await agent.run('x')
    expect(r.success).toBe(false)
    expect(r.output).toBe('dispose failed')
    expect(r.messages).toEqual([])
    expect(agent.getState().status).toBe('error')
    // The failed dispose does not poison the executor's window: start runs again.
    const next = await agent.run('y')
    expect(next.success).toBe(true)
    expect(next.output).toBe('next')
    expect(events).toEqual(['start', 'exec:c', 'dispose', 'start', 'exec:d', 'dispose'])
  })

  test('a backstop timeout gives 124, then dispose', async () => {
    const events: string[] = []
    const executor: ShellExecutor = {
      start: async () => {
        events.push('start')
      },
      exec: async () => {
        events.push('exec')
        return new Promise<ShellExecResult>(() => {})
      },
      dispose: async () => {
        events.push('dispose')
      },
    }
    const r = await agentWith({ adapter: scripted([bashUse('t1', 'hang', { timeout: 5 }), text('recovered')]), shellExecutor: executor }).run('x')
    expect(r.success).toBe(true)
    expect(r.toolCalls[0].output).toBe('(command exited with code 124, no output)')
    expect(events).toEqual(['start', 'exec', 'dispose'])
  })

  test('a timeout during start: no exec, 124, then dispose', async () => {
    const events: string[] = []
    const started = signal()
    const executor: ShellExecutor = {
      start: async () => {
        events.push('start')
        // Finishes only once the bash timeout (5 ms) has surely fired.
        await started.fired
      },
      exec: async () => {
        events.push('exec')
        return { stdout: 'must not run', stderr: '', exitCode: 0 }
      },
      dispose: async () => {
        events.push('dispose')
      },
    }
    const timer = setTimeout(() => started.fire(), 50)
    try {
      const r = await agentWith({ adapter: scripted([bashUse('t1', 'late', { timeout: 5 }), text('recovered')]), shellExecutor: executor }).run('x')
      expect(r.success).toBe(true)
      expect(r.toolCalls[0].output).toBe('(command exited with code 124, no output)')
      expect(events).toEqual(['start', 'dispose'])
    } finally {
      clearTimeout(timer)
    }
  })

  test('a streaming consumer that stops early still disposes', async () => {
    const events: string[] = []
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'first'), text('streamed')]), shellExecutor: recording(events) })
    const seen: StreamEvent['type'][] = []
    for await (const event of agent.stream('x')) {
      seen.push(event.type)
      if (event.type === 'tool_result') break
    }
    expect(seen).toEqual(['tool_use', 'tool_result'])
    expect(events).toEqual(['start', 'exec:first', 'dispose'])
  })

  test('a stream dropped without return() releases its lease when it is collected', () => {
    // A child with --expose-gc: the generator is left suspended after its tool_result and dropped.
    const script = `
      const { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools } = require(${JSON.stringify(path.join(__dirname, '..', 'index.js'))})
      const events = []
      const executor = {
        async start() { events.push('start') },
        async exec(c) { events.push('exec:' + c); return { stdout: c, stderr: '', exitCode: 0 } },
        async dispose() { events.push('dispose') },
      }
      const usage = { input_tokens: 1, output_tokens: 1 }
      const replies = [
        { id: 'r', model: 'm', stop_reason: 'tool_use', usage, content: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'first' } }] },
        { id: 'r', model: 'm', stop_reason: 'end_turn', usage, content: [{ type: 'text', text: 'done' }] },
      ]
      let i = 0
      const registry = new ToolRegistry()
      registerBuiltInTools(registry)
      const agent = new Agent({ name: 'a', model: 'm', tools: ['bash'], shellExecutor: executor, adapter: { name: 'mock', chat: async () => replies[i++] } }, registry, new ToolExecutor(registry))
      ;(async () => {
        let it = agent.stream('x')
        for (;;) { const { value } = await it.next(); if (value.type === 'tool_result') break }
        it = null
        for (let k = 0; k < 200 && !events.includes('dispose'); k++) { global.gc(); await new Promise((r) => setTimeout(r, 10)) }
        process.stdout.write(JSON.stringify(events))
      })()
    `
    const out = require('child_process').execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 20_000 })
    expect(JSON.parse(out)).toEqual(['start', 'exec:first', 'dispose'])
  })

  test('a dispose failure no result can carry is a process warning', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined)
    try {
      const executor: ShellExecutor = {
        exec: async () => ({ stdout: '', stderr: '', exitCode: 0 }),
        dispose: async () => {
          throw new Error('dispose failed late')
        },
      }
      const agent = agentWith({ adapter: scripted([bashUse('t1', 'first'), text('streamed')]), shellExecutor: executor })
      for await (const event of agent.stream('x')) if (event.type === 'tool_result') break
      expect(warn.mock.calls).toEqual([["oma-kernel: a shell executor's dispose() failed after its run ended: dispose failed late"]])
      // A run that fails on its own keeps its own error, and the dispose failure is a warning too.
      warn.mockClear()
      const failing = agentWith({ adapter: scripted([bashUse('t1', 'first'), new Error('provider failed')]), shellExecutor: executor })
      const r = await failing.run('x')
      expect(r.output).toBe('provider failed')
      expect(warn).toHaveBeenCalledTimes(1)
    } finally {
      warn.mockRestore()
    }
  })

  test('a streamed run that completes disposes before its done event; a dispose failure is its error', async () => {
    const events: string[] = []
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'first'), text('done')]), shellExecutor: recording(events) })
    const order: string[] = []
    for await (const event of agent.stream('x')) order.push(`${event.type}:${events.join(',')}`)
    expect(order[order.length - 1]).toBe('done:start,exec:first,dispose')

    const failing = agentWith({
      adapter: scripted([bashUse('t1', 'first'), text('done')]),
      shellExecutor: { exec: async () => ({ stdout: '', stderr: '', exitCode: 0 }), dispose: async () => { throw new Error('dispose failed') } },
    })
    const types: string[] = []
    let error: unknown
    for await (const event of failing.stream('x')) {
      types.push(event.type)
      if (event.type === 'error') error = event.data
    }
    expect(types).toEqual(['tool_use', 'tool_result', 'text', 'error'])
    expect((error as Error).message).toBe('dispose failed')
  })

  test('two agents sharing one executor: one start, concurrent commands, one dispose', async () => {
    const start = jest.fn(async () => undefined)
    const dispose = jest.fn(async () => undefined)
    const { exec, seen } = pairedExec()
    const executor: ShellExecutor = { start, exec, dispose }
    const first = agentWith({ name: 'first', adapter: scripted([bashUse('a', 'first'), text('done')]), shellExecutor: executor })
    const second = agentWith({ name: 'second', adapter: scripted([bashUse('b', 'second'), text('done')]), shellExecutor: executor })
    const [a, b] = await Promise.all([first.run('a'), second.run('b')])
    expect([a.success, b.success]).toEqual([true, true])
    expect([a.toolCalls[0].output, b.toolCalls[0].output]).toEqual(['first', 'second'])
    expect(seen.entered).toBe(2)
    expect(start).toHaveBeenCalledTimes(1)
    expect(dispose).toHaveBeenCalledTimes(1)
  })

  test('parallel bash calls of one turn share the run\'s lease', async () => {
    const events: string[] = []
    // recording()'s start and dispose; its exec, held until both calls are in.
    const executor: ShellExecutor = { ...recording(events), exec: pairedExec((command) => events.push(`exec:${command}`)).exec }
    const parallel = resp([
      { type: 'tool_use', id: 'p0', name: 'bash', input: { command: 'first' } },
      { type: 'tool_use', id: 'p1', name: 'bash', input: { command: 'second' } },
    ])
    const r = await agentWith({ adapter: scripted([parallel, text('done')]), shellExecutor: executor }).run('x')
    expect(r.success).toBe(true)
    expect(r.toolCalls.map((c) => c.output)).toEqual(['first', 'second'])
    expect(events[0]).toBe('start')
    expect(new Set(events.slice(1, 3))).toEqual(new Set(['exec:first', 'exec:second']))
    expect(events[3]).toBe('dispose')
    expect(events).toHaveLength(4)
  })

  test('a per-tool timeout ends a hung command (its signal aborted) and the run still disposes', async () => {
    const events: string[] = []
    let received: AbortSignal | undefined
    const executor: ShellExecutor = {
      start: async () => {
        events.push('start')
      },
      exec: async (_c, options) => {
        events.push('exec')
        received = options.abortSignal
        return new Promise<ShellExecResult>(() => {})
      },
      dispose: async () => {
        events.push('dispose')
      },
    }
    const r = await agentWith({ adapter: scripted([bashUse('t1', 'hang'), text('recovered')]), toolTimeoutMs: 30, shellExecutor: executor }).run('x')
    expect(r.success).toBe(true)
    expect(r.toolCalls[0].output).toBe('Tool "bash" timed out after 30ms.')
    expect(received?.aborted).toBe(true)
    expect(events).toEqual(['start', 'exec', 'dispose'])
  })

  test('RunnerOptions.shellExecutor on an AgentRunner; buildToolContext hands the executor itself', async () => {
    const events: string[] = []
    const executor = recording(events)
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const runner = new AgentRunner(scripted([bashUse('t1', 'via-runner'), text('done')]), registry, new ToolExecutor(registry), {
      model: 'm',
      allowedTools: ['bash'],
      shellExecutor: executor,
    })
    const r = await runner.run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }])
    expect(r.toolCalls[0].output).toBe('via-runner')
    expect(events).toEqual(['start', 'exec:via-runner', 'dispose'])

    const agent = agentWith({ adapter: scripted([text('x')]), shellExecutor: executor })
    expect(agent.buildToolContext().shellExecutor).toBe(executor)
  })

  test('AgentConfig.shellExecutor = new LocalShellExecutor(): real commands, the native layout', async () => {
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const agent = agentWith({ adapter: scripted([bashUse('t1', 'echo out; echo err >&2; exit 4', { cwd: dir }), text('done')]), shellExecutor: new LocalShellExecutor() })
    const r = await agent.run('x')
    expect(r.toolCalls[0].output).toBe('out\n\n--- stderr ---\nerr\n\n\n(exit code: 4)')
  })
})
