// Issue 30, the gate and the executor. (1) What an onToolCall gate approves is what runs: no one
// holding a reference to a call's input (a stream() consumer of its tool_use event, the 1.7
// RunOptions.onToolCall notification, the caller of ToolExecutor.execute, code the gate hands
// `ctx.input` to) can change it while the gate decides, nor what the tool then receives.
// (2) An aborted or timed-out run frees every executor slot: a tool that never settles no
// longer wedges a `maxConcurrency: 1` executor for the runs after it. (3) ToolExecutor.execute
// honours its abort signal while it waits for a slot, a gate or a tool.
import { z } from 'zod'
import {
  Agent,
  ToolExecutor,
  ToolRegistry,
  defineTool,
  LLMAdapter,
  LLMMessage,
  LLMResponse,
  ContentBlock,
  ToolCallContext,
  ToolCallGate,
  ToolUseContext,
  TraceEvent,
  ShellExecutor,
  registerBuiltInTools,
} from '../index'
import { failOnUnhandledRejection, signal, turns } from './helpers/async'

const ctx: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' } }

const duringText = (name: string) => `Tool "${name}" was aborted during execution.`
const beforeText = (name: string) => `Tool "${name}" was aborted before execution began.`

function resp(content: ContentBlock[]): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
}
/** An adapter calling `calls` (tool_use blocks) once, then answering 'done'. */
function adapterCalling(...calls: Array<[string, Record<string, unknown>]>): LLMAdapter {
  let n = 0
  return {
    name: 'scripted',
    async chat(_messages: LLMMessage[]) {
      n += 1
      return n === 1 ? resp(calls.map(([name, input], i) => ({ type: 'tool_use', id: `tu${n}_${i}`, name, input }))) : resp([{ type: 'text', text: 'done' }])
    },
    async *stream() {},
  }
}
/** An adapter that calls `name` with `input` on every run's first turn. */
function adapterAlways(name: string, input: Record<string, unknown>): LLMAdapter {
  return {
    name: 'scripted',
    async chat(messages: LLMMessage[]) {
      const last = messages[messages.length - 1]
      const answered = Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result')
      return answered ? resp([{ type: 'text', text: 'done' }]) : resp([{ type: 'tool_use', id: `tu_${messages.length}`, name, input }])
    },
    async *stream() {},
  }
}

/** A JSON-Schema tool `run` that records what it received, read only after `before` settled
 *  (so that a change made meanwhile would show). */
function runTool(received: unknown[], before: () => Promise<unknown> = async () => undefined) {
  return {
    name: 'run',
    description: 'runs a command',
    inputSchema: { type: 'object', properties: { cmd: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } }, required: ['cmd'] },
    execute: async (input: any) => {
      await before()
      received.push(JSON.parse(JSON.stringify(input)))
      return { data: `ran ${input.cmd}` }
    },
  }
}

/** A gate that approves only `ls`, judged on what it is shown at once, deciding after `wait`. */
function lsOnly(shown: unknown[], wait: () => Promise<unknown>): ToolCallGate {
  return async (c: ToolCallContext) => {
    const ok = (c.input as any).cmd === 'ls'
    shown.push(JSON.parse(JSON.stringify(c.input)))
    await wait()
    // The gate's own view did not change meanwhile either.
    shown.push(JSON.parse(JSON.stringify(c.input)))
    return ok ? { action: 'allow' } : { action: 'deny', reason: 'only ls' }
  }
}

/**
 * An agent whose `run` tool records what it received and whose adapter calls `calls`. Gated: the
 * `lsOnly` gate records what it was shown and decides once `changed` fired. Ungated: the tool
 * reads its input only once `changed` fired.
 */
function agentRunning(gated: boolean, ...calls: Array<[string, Record<string, unknown>]>) {
  const received: unknown[] = []
  const shown: unknown[] = []
  const changed = signal()
  const registry = new ToolRegistry()
  registry.register(gated ? runTool(received) : runTool(received, () => changed.fired))
  const gate = gated ? { onToolCall: lsOnly(shown, () => changed.fired) } : {}
  const agent = new Agent({ name: 'g', model: 'm', adapter: adapterCalling(...calls), tools: ['run'], ...gate } as any, registry, new ToolExecutor(registry))
  return { agent, received, shown, changed }
}

failOnUnhandledRejection()

describe('1. what the gate approves is what runs', () => {
  test('a stream() consumer that changes the tool_use input while the gate decides changes nothing that runs', async () => {
    const { agent, received, shown, changed } = agentRunning(true, ['run', { cmd: 'ls', args: ['-l'] }])
    const traces: TraceEvent[] = []
    let done: any
    for await (const ev of agent.stream('go', { onTrace: (e: TraceEvent) => { traces.push(e) } } as any)) {
      if (ev.type === 'tool_use') {
        const block = ev.data as any
        // Later, while the gate awaits: the consumer's reference is the one it was handed.
        setImmediate(() => {
          block.input.cmd = 'rm -rf /'
          block.input.args.push('--no-preserve-root')
          changed.fire()
        })
      }
      if (ev.type === 'done') done = ev.data
    }
    expect(received).toEqual([{ cmd: 'ls', args: ['-l'] }])
    expect(shown).toEqual([{ cmd: 'ls', args: ['-l'] }, { cmd: 'ls', args: ['-l'] }])
    expect(done.toolCalls[0].input).toEqual({ cmd: 'ls', args: ['-l'] })
    expect((traces.find((e) => e.type === 'tool_call') as any).input).toEqual({ cmd: 'ls', args: ['-l'] })
  })

  test('without a gate too: a stream() consumer cannot change the input of a tool that is running', async () => {
    const { agent, received, changed } = agentRunning(false, ['run', { cmd: 'ls' }], ['run', { cmd: 'pwd' }])
    const blocks: any[] = []
    for await (const ev of agent.stream('go')) {
      if (ev.type === 'tool_use') {
        blocks.push(ev.data)
        if (blocks.length === 2) {
          setImmediate(() => {
            for (const b of blocks) b.input.cmd = 'rm -rf /'
            changed.fire()
          })
        }
      }
    }
    expect(received).toEqual([{ cmd: 'ls' }, { cmd: 'pwd' }])
  })

  test('the RunOptions.onToolCall notification cannot change what the gate approved', async () => {
    const { agent, received, shown, changed } = agentRunning(true, ['run', { cmd: 'ls' }])
    const notified: unknown[] = []
    const r = await agent.run('go', {
      onToolCall: (name: string, input: any) => {
        notified.push([name, { ...input }])
        queueMicrotask(() => {
          input.cmd = 'rm -rf /'
          changed.fire()
        })
      },
    } as any)
    expect(notified).toEqual([['run', { cmd: 'ls' }]])
    expect(shown).toEqual([{ cmd: 'ls' }, { cmd: 'ls' }])
    expect(received).toEqual([{ cmd: 'ls' }])
    expect(r.toolCalls[0]).toMatchObject({ toolName: 'run', input: { cmd: 'ls' }, output: 'ran ls' })
  })

  test('the RunOptions.onToolCall notification without a gate, several calls of a round: the tools run the kernel\'s copies', async () => {
    const { agent, received, changed } = agentRunning(false, ['run', { cmd: 'a' }], ['run', { cmd: 'b' }], ['run', { cmd: 'c' }])
    const held: any[] = []
    await agent.run('go', {
      onToolCall: (_name: string, input: any) => {
        held.push(input)
        if (held.length === 3) setImmediate(() => { for (const i of held) i.cmd = 'rm -rf /'; changed.fire() })
      },
    } as any)
    expect(received).toEqual([{ cmd: 'a' }, { cmd: 'b' }, { cmd: 'c' }])
  })

  test('the caller of execute (JSON-Schema tool) cannot change the input while an async gate decides', async () => {
    const received: unknown[] = []
    const shown: unknown[] = []
    const changed = signal()
    const registry = new ToolRegistry()
    registry.register(runTool(received))
    const executor = new ToolExecutor(registry, { onToolCall: lsOnly(shown, () => changed.fired) })
    const input = { cmd: 'ls', args: ['-l'] }
    const p = executor.execute('run', input, ctx)
    input.cmd = 'rm -rf /'
    input.args[0] = '--no-preserve-root'
    changed.fire()
    expect(await p).toEqual({ data: 'ran ls', metadata: { toolCallGate: { action: 'allow' } } })
    expect(shown).toEqual([{ cmd: 'ls', args: ['-l'] }, { cmd: 'ls', args: ['-l'] }])
    expect(received).toEqual([{ cmd: 'ls', args: ['-l'] }])
  })

  test('the caller of execute cannot reach a Zod tool\'s input through a member Zod passes on as it is (z.any)', async () => {
    const received: unknown[] = []
    const changed = signal()
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'run', description: 'd', inputSchema: z.object({ opts: z.any() }),
      execute: async (input: any) => { received.push(JSON.parse(JSON.stringify(input))); return { data: 'ok' } },
    }))
    const gate: ToolCallGate = async (c) => {
      const ok = (c.input as any).opts.cmd === 'ls'
      await changed.fired
      return { action: ok ? 'allow' : 'deny' }
    }
    const executor = new ToolExecutor(registry, { onToolCall: gate })
    const input = { opts: { cmd: 'ls' } }
    const p = executor.execute('run', input, ctx)
    input.opts.cmd = 'rm -rf /'
    changed.fire()
    expect((await p).data).toBe('ok')
    expect(received).toEqual([{ opts: { cmd: 'ls' } }])
  })

  test('an audit hook the gate hands ctx.input to cannot change what runs (the runner\'s path and execute\'s)', async () => {
    for (const path of ['runner', 'execute'] as const) {
      const received: unknown[] = []
      const audited = signal()
      const registry = new ToolRegistry()
      registry.register(runTool(received, () => audited.fired))
      const audit = (input: any) => {
        // Asynchronous, as an audit log is: it changes the value after the gate returned.
        queueMicrotask(() => {
          input.cmd = 'rm -rf /'
          audited.fire()
        })
      }
      const gate: ToolCallGate = (c) => {
        audit(c.input)
        return { action: (c.input as any).cmd === 'ls' ? 'allow' : 'deny' }
      }
      if (path === 'runner') {
        const agent = new Agent({ name: 'g', model: 'm', adapter: adapterCalling(['run', { cmd: 'ls' }]), tools: ['run'], onToolCall: gate } as any, registry, new ToolExecutor(registry))
        const r = await agent.run('go')
        expect(r.toolCalls[0].output).toBe('ran ls')
      } else {
        expect((await new ToolExecutor(registry, { onToolCall: gate }).execute('run', { cmd: 'ls' }, ctx)).data).toBe('ran ls')
      }
      expect(received).toEqual([{ cmd: 'ls' }])
    }
  })

  test('a gate that changes ctx.input itself before it allows does not rewrite the call', async () => {
    const received: unknown[] = []
    const registry = new ToolRegistry()
    registry.register(runTool(received))
    const gate: ToolCallGate = (c) => {
      (c.input as any).cmd = 'rm -rf /'
      return { action: 'allow' }
    }
    expect((await new ToolExecutor(registry, { onToolCall: gate }).execute('run', { cmd: 'ls' }, ctx)).data).toBe('ran ls')
    const agent = new Agent({ name: 'g', model: 'm', adapter: adapterCalling(['run', { cmd: 'pwd' }]), tools: ['run'], onToolCall: gate } as any, registry, new ToolExecutor(registry))
    expect((await agent.run('go')).toolCalls[0]).toMatchObject({ input: { cmd: 'pwd' }, output: 'ran pwd' })
    expect(received).toEqual([{ cmd: 'ls' }, { cmd: 'pwd' }])
  })

  test('ctx.input is still the validated input: a Zod transform applies to what the gate sees and to what runs', async () => {
    const received: unknown[] = []
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'run', description: 'd', inputSchema: z.object({ cmd: z.string().transform((s) => s.trim()), when: z.string().transform((s) => new Date(s)) }),
      execute: async (input: any) => { received.push(input); return { data: 'ok' } },
    }))
    const seen: any[] = []
    const executor = new ToolExecutor(registry, { onToolCall: (c) => { seen.push(c.input); return { action: 'allow' } } })
    await executor.execute('run', { cmd: '  ls  ', when: '2020-01-01T00:00:00Z' }, ctx)
    expect(seen).toEqual([{ cmd: 'ls', when: new Date('2020-01-01T00:00:00Z') }])
    expect(received).toEqual([{ cmd: 'ls', when: new Date('2020-01-01T00:00:00Z') }])
    // Two values: what the gate was handed is not what the tool received.
    expect(seen[0]).not.toBe(received[0])
    expect(seen[0].when).not.toBe((received[0] as any).when)
  })

  test('an input that cannot be read a second time is refused before the gate, with the validation text', async () => {
    const registry = new ToolRegistry()
    const ran: unknown[] = []
    registry.register(runTool(ran))
    const gate = jest.fn(() => ({ action: 'allow' as const }))
    let reads = 0
    const input = { get cmd() { reads += 1; if (reads > 1) throw new Error('read twice'); return 'ls' } }
    const r = await new ToolExecutor(registry, { onToolCall: gate }).execute('run', input, ctx)
    // The copy is taken first, read once: the gate and the tool see that copy's `ls`.
    expect(r).toEqual({ data: 'ran ls', metadata: { toolCallGate: { action: 'allow' } } })
    expect(reads).toBe(1)
    const bad = { get cmd(): string { throw new Error('unreadable') } }
    const r2 = await new ToolExecutor(registry, { onToolCall: gate }).execute('run', bad, ctx)
    expect(r2.isError).toBe(true)
    expect(r2.data).toContain('input cannot be read: unreadable')
    expect(gate).toHaveBeenCalledTimes(1)
  })
})

/** A registry with `hang` (never settles; tells `started`) and `echo`. */
function hangAndEcho(started: () => void, settle?: { reject?: (e: Error) => void }) {
  const registry = new ToolRegistry()
  registry.register(defineTool({
    name: 'hang', description: 'never settles', inputSchema: z.object({}),
    execute: () => new Promise((_resolve, reject) => {
      if (settle) settle.reject = reject
      started()
    }),
  }))
  registry.register(defineTool({ name: 'echo', description: 'e', inputSchema: z.object({ s: z.string() }), execute: async ({ s }) => ({ data: s }) }))
  return registry
}
const sem = (ex: ToolExecutor): { active: number; pending: number } => (ex as any).semaphore

describe('2. an aborted or timed-out run frees every slot', () => {
  test('abort: a never-settling tool on a maxConcurrency 1 executor does not wedge the next run, and its late rejection is handled', async () => {
    const started = signal()
    const settle: { reject?: (e: Error) => void } = {}
    const registry = hangAndEcho(() => started.fire(), settle)
    const executor = new ToolExecutor(registry, { maxConcurrency: 1 })
    const hung = new Agent({ name: 'h', model: 'm', adapter: adapterAlways('hang', {}), tools: ['hang'] } as any, registry, executor)
    const ac = new AbortController()
    const first = hung.run('go', { abortSignal: ac.signal })
    await started.fired
    ac.abort()
    const r1 = await first
    expect(r1.toolCalls[0].output).toBe(duringText('hang'))
    expect(sem(executor).active).toBe(0)
    const next = new Agent({ name: 'n', model: 'm', adapter: adapterAlways('echo', { s: 'ran' }), tools: ['echo'] } as any, registry, executor)
    const r2 = await next.run('go')
    expect(r2.success).toBe(true)
    expect(r2.toolCalls[0].output).toBe('ran')
    // The abandoned tool rejects long after: handled (afterEach checks for unhandled rejections).
    settle.reject!(new Error('late'))
  })

  test('a stream() run aborted during a wide round frees every slot its tools held', async () => {
    let n = 0
    const all = signal()
    const registry = hangAndEcho(() => { if (++n === 3) all.fire() })
    const executor = new ToolExecutor(registry, { maxConcurrency: 3 })
    const agent = new Agent({ name: 'h', model: 'm', adapter: adapterCalling(['hang', {}], ['hang', {}], ['hang', {}]), tools: ['hang'] } as any, registry, executor)
    const ac = new AbortController()
    const events: string[] = []
    const run = (async () => { for await (const ev of agent.stream('go', { abortSignal: ac.signal })) events.push(ev.type) })()
    await all.fired
    expect(sem(executor).active).toBe(3)
    ac.abort()
    await run
    expect(sem(executor).active).toBe(0)
    expect(await executor.execute('echo', { s: 'x' }, ctx)).toEqual({ data: 'x' })
  })

  test('the run\'s timeoutMs: a never-settling tool does not wedge the next run', async () => {
    const started = signal()
    const registry = hangAndEcho(() => started.fire())
    const executor = new ToolExecutor(registry, { maxConcurrency: 1 })
    const hung = new Agent({ name: 'h', model: 'm', adapter: adapterAlways('hang', {}), tools: ['hang'], timeoutMs: 50 } as any, registry, executor)
    const r1 = await hung.run('go')
    expect(r1.toolCalls[0].output).toBe(duringText('hang'))
    const next = new Agent({ name: 'n', model: 'm', adapter: adapterAlways('echo', { s: 'ran' }), tools: ['echo'] } as any, registry, executor)
    expect((await next.run('go')).toolCalls[0].output).toBe('ran')
  })

  test('a tool timeout: the timed-out call frees its slot for the call parked behind it', async () => {
    const registry = hangAndEcho(() => undefined)
    const executor = new ToolExecutor(registry, { maxConcurrency: 1, toolTimeoutMs: 30 })
    const first = executor.execute('hang', {}, ctx)
    const parked = executor.execute('echo', { s: 'next' }, ctx)
    expect(sem(executor).pending).toBe(1)
    expect((await first).data).toBe('Tool "hang" timed out after 30ms.')
    expect(await parked).toEqual({ data: 'next' })
  })
})

describe('3. ToolExecutor.execute honours its abort signal while it waits', () => {
  test('a gate that never settles: the abort frees the slot at once and settles execute with the runner\'s text', async () => {
    const registry = hangAndEcho(() => undefined)
    const gateCalled = signal()
    const executor = new ToolExecutor(registry, { maxConcurrency: 1, onToolCall: () => { gateCalled.fire(); return new Promise(() => {}) } })
    const ac = new AbortController()
    const p = executor.execute('echo', { s: 'x' }, { ...ctx, abortSignal: ac.signal })
    await gateCalled.fired
    expect(sem(executor).active).toBe(1)
    ac.abort()
    expect(sem(executor).active).toBe(0)
    expect(await p).toEqual({ data: duringText('echo'), isError: true })
  })

  test('a tool that never settles: the abort frees the slot at once; execute settles with the runner\'s text, the allow kept', async () => {
    for (const gate of [undefined, () => ({ action: 'allow' as const })]) {
      const started = signal()
      const registry = hangAndEcho(() => started.fire())
      const executor = new ToolExecutor(registry, { maxConcurrency: 1, onToolCall: gate })
      const ac = new AbortController()
      const p = executor.execute('hang', {}, { ...ctx, abortSignal: ac.signal })
      await started.fired
      const parked = executor.execute('echo', { s: 'after' }, ctx)
      ac.abort()
      expect(sem(executor).active).toBe(1) // handed to the parked call
      expect(await p).toEqual(gate === undefined ? { data: duringText('hang'), isError: true } : { data: duringText('hang'), isError: true, metadata: { toolCallGate: { action: 'allow' } } })
      expect((await parked).data).toBe('after')
    }
  })

  test('the tool is told through its signal; one that honours the abort keeps its own outcome', async () => {
    const registry = new ToolRegistry()
    const started = signal()
    registry.register(defineTool({
      name: 'polite', description: 'p', inputSchema: z.object({}),
      execute: (_i, c) => new Promise((_resolve, reject) => {
        c.abortSignal!.addEventListener('abort', () => reject(new Error('stopped on request')))
        started.fire()
      }),
    }))
    const executor = new ToolExecutor(registry, { maxConcurrency: 1 })
    const ac = new AbortController()
    const p = executor.execute('polite', {}, { ...ctx, abortSignal: ac.signal })
    await started.fired
    ac.abort()
    expect(sem(executor).active).toBe(0)
    expect(await p).toEqual({ data: 'Tool "polite" threw an error: stopped on request', isError: true })
  })

  test('a call parked for a slot leaves the queue when its signal aborts, or at once when it already has', async () => {
    const started = signal()
    const registry = hangAndEcho(() => started.fire())
    const executor = new ToolExecutor(registry, { maxConcurrency: 1 })
    const holder = executor.execute('hang', {}, ctx)
    await started.fired
    const ac = new AbortController()
    const p = executor.execute('echo', { s: 'x' }, { ...ctx, abortSignal: ac.signal })
    const behind = executor.execute('echo', { s: 'y' }, ctx)
    expect(sem(executor).pending).toBe(2)
    ac.abort()
    expect(sem(executor).pending).toBe(1)
    expect(await p).toEqual({ data: beforeText('echo'), isError: true })
    const pre = new AbortController()
    pre.abort()
    expect(await executor.execute('echo', { s: 'z' }, { ...ctx, abortSignal: pre.signal })).toEqual({ data: beforeText('echo'), isError: true })
    expect(sem(executor).pending).toBe(1)
    expect(sem(executor).active).toBe(1)
    void holder
    void behind
  })

  test('one signal for many calls: one abort answers every running and parked call', async () => {
    let n = 0
    const two = signal()
    const registry = hangAndEcho(() => { if (++n === 2) two.fire() })
    const executor = new ToolExecutor(registry, { maxConcurrency: 2 })
    const ac = new AbortController()
    const c = { ...ctx, abortSignal: ac.signal }
    const calls = [executor.execute('hang', {}, c), executor.execute('hang', {}, c), executor.execute('echo', { s: 'p' }, c)]
    await two.fired
    expect(sem(executor)).toMatchObject({ active: 2, pending: 1 })
    ac.abort()
    expect(sem(executor)).toMatchObject({ active: 0, pending: 0 })
    expect(await Promise.all(calls)).toEqual([
      { data: duringText('hang'), isError: true },
      { data: duringText('hang'), isError: true },
      { data: beforeText('echo'), isError: true },
    ])
  })
})

describe('the same class elsewhere', () => {
  test('a signal-like object whose abort event says nothing of `aborted`: a gated call seen aborted never runs without its slot', async () => {
    const ran: unknown[] = []
    const registry = new ToolRegistry()
    registry.register(runTool(ran))
    const target = new EventTarget()
    const fake = Object.assign(target, { aborted: false, reason: undefined }) as unknown as AbortSignal
    const gateCalled = signal()
    let allow!: () => void
    const executor = new ToolExecutor(registry, {
      maxConcurrency: 1,
      onToolCall: () => new Promise((r) => { allow = () => r({ action: 'allow' }); gateCalled.fire() }),
    })
    const p = executor.execute('run', { cmd: 'ls' }, { ...ctx, abortSignal: fake })
    await gateCalled.fired
    target.dispatchEvent(new Event('abort'))
    expect(sem(executor).active).toBe(0)
    // The gate allows within its time: the machine's abort check after it still stops the call.
    allow()
    expect(await p).toEqual({ data: beforeText('run'), isError: true, metadata: { toolCallGate: { action: 'allow' } } })
    expect(ran).toEqual([])
  })

  test('an aborted run does not wait for a ShellExecutor whose start or dispose never settles', async () => {
    for (const stuck of ['start', 'dispose'] as const) {
      const registry = new ToolRegistry()
      registerBuiltInTools(registry)
      const reached = signal()
      const never = () => { reached.fire(); return new Promise<void>(() => {}) }
      const shell: ShellExecutor = {
        start: stuck === 'start' ? never : async () => {},
        exec: async () => ({ stdout: 'hi\n', stderr: '', exitCode: 0 }),
        dispose: stuck === 'dispose' ? never : async () => {},
      }
      const agent = new Agent({ name: 's', model: 'm', adapter: adapterCalling(['bash', { command: 'echo hi' }]), tools: ['bash'], shellExecutor: shell } as any, registry, new ToolExecutor(registry))
      const ac = new AbortController()
      const run = agent.run('go', { abortSignal: ac.signal })
      await reached.fired
      ac.abort()
      const r = await run
      if (stuck === 'start') {
        // The abort answered the bash call waiting for its session.
        expect(r.toolCalls[0].output).toBe(duringText('bash'))
      } else {
        // The run was done; only its executor's dispose was still pending.
        expect(r.success).toBe(true)
        expect(r.toolCalls[0].output).toBe('hi\n')
      }
    }
  })
})
