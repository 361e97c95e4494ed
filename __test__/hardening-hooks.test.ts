// Issue 30, the same class elsewhere: every place that awaits user code while keeping a run alive
// honours the run's abort. An Agent's beforeRun / afterRun hook that never settles no longer
// holds an aborted or timed-out run (it is left behind ABANDON_AFTER_MS after the abort, as a JS
// adapter is, its later outcome still handled), in run(), prompt() and stream(); and a stream()
// stopped early with return() no longer waits forever for a ShellExecutor release. A callback the
// run calls and does not await (onMessage, onToolCall, onToolResult, onWarning) may return a
// rejecting promise without an unhandled rejection.
import {
  Agent,
  ToolExecutor,
  ToolRegistry,
  LLMAdapter,
  LLMMessage,
  LLMResponse,
  ContentBlock,
  ShellExecutor,
  StreamEvent,
  registerBuiltInTools,
} from '../index'
import { failOnUnhandledRejection, signal, turns } from './helpers/async'

const beforeRunText = 'The run was aborted while beforeRun had not settled'
const afterRunText = 'The run was aborted while afterRun had not settled'
const ZERO = { input_tokens: 0, output_tokens: 0 }

/** A hook's promise that never settles unless the test settles it, and the event of its call. */
function stuck<T>() {
  const called = signal()
  const settle: { resolve?: (v: T) => void; reject?: (e: unknown) => void } = {}
  const hook = () => {
    called.fire()
    return new Promise<T>((resolve, reject) => { settle.resolve = resolve; settle.reject = reject })
  }
  return { hook, called: called.fired, settle }
}

function resp(content: ContentBlock[]): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
}

/** An adapter answering 'done' at once; counts its calls. */
function doneAdapter(): LLMAdapter & { calls: number } {
  const a = {
    name: 'scripted',
    calls: 0,
    async chat(_messages: LLMMessage[]) {
      a.calls += 1
      return resp([{ type: 'text', text: 'done' }])
    },
    async *stream() {},
  }
  return a
}

/** An adapter calling `name` with `input` once, then answering 'done'. */
function adapterCalling(name: string, input: Record<string, unknown>): LLMAdapter {
  let n = 0
  return {
    name: 'scripted',
    async chat() {
      n += 1
      return n === 1 ? resp([{ type: 'tool_use', id: 'tu1', name, input }]) : resp([{ type: 'text', text: 'done' }])
    },
    async *stream() {},
  }
}

function agentWith(config: Record<string, unknown>, adapter: LLMAdapter = doneAdapter()) {
  const registry = new ToolRegistry()
  return new Agent({ name: 'hooked', model: 'm', adapter, ...config } as any, registry, new ToolExecutor(registry))
}

async function collect(it: AsyncIterable<StreamEvent | { type: string; data?: unknown }>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = []
  for await (const e of it) out.push(e as StreamEvent)
  return out
}

const running = (agent: Agent, signal: AbortSignal) => agent.run('go', { abortSignal: signal })
const streaming = (agent: Agent, signal: AbortSignal) => collect(agent.stream('go', { abortSignal: signal }))

/**
 * Starts `start` (run or stream) on an agent whose `hook` never settles on its own, and aborts the
 * caller's signal once the hook was called. The outcome (not awaited), the agent, the hook's settle.
 */
async function abortedIn<R>(hook: 'beforeRun' | 'afterRun', start: (agent: Agent, signal: AbortSignal) => Promise<R>, adapter?: LLMAdapter) {
  const h = stuck<any>()
  const agent = agentWith({ [hook]: h.hook }, adapter)
  const ac = new AbortController()
  const outcome = start(agent, ac.signal)
  await h.called
  ac.abort()
  return { outcome, agent, settle: h.settle }
}

failOnUnhandledRejection()

describe('beforeRun and afterRun never hold an aborted or timed-out run', () => {
  test('run(): a beforeRun that never settles is left behind after the caller\'s abort, its late rejection handled; one that settles in its time keeps its outcome', async () => {
    const adapter = doneAdapter()
    const { outcome: run, agent, settle } = await abortedIn('beforeRun', running, adapter)
    // The failed result of an interrupted run, as for a JS adapter left behind (no flags: the
    // caller's own abort, not the timeout).
    expect(await run).toEqual({ success: false, output: beforeRunText, messages: [], tokenUsage: ZERO, toolCalls: [], structured: undefined })
    expect(adapter.calls).toBe(0)
    expect(agent.getState().status).toBe('error')
    expect((agent.getState().error as Error).message).toBe(beforeRunText)
    // The abandoned hook rejects long after (afterEach checks for unhandled rejections).
    settle.reject!(new Error('late'))

    // A hook that settles after the abort, within its time, keeps its own outcome.
    const honours = await abortedIn('beforeRun', running)
    honours.settle.reject!(new Error('my hook saw the abort'))
    const run2 = honours.outcome
    const r2 = await run2
    expect(r2.success).toBe(false)
    expect(r2.output).toBe('my hook saw the abort')
  })

  test('run(): an afterRun that never settles is left behind after the caller\'s abort', async () => {
    const { outcome: run, agent, settle } = await abortedIn('afterRun', running)
    expect(await run).toEqual({ success: false, output: afterRunText, messages: [], tokenUsage: ZERO, toolCalls: [], structured: undefined })
    // The abandoned hook resolves long after: nothing changes.
    settle.resolve!({ success: true, output: 'late' })
    await turns()
    expect(agent.getState().status).toBe('error')
  })

  test('prompt(): an afterRun that never settles ends at the agent\'s timeoutMs (aborted, timedOut), the history restored', async () => {
    const after = stuck<any>()
    const agent = agentWith({ afterRun: after.hook, timeoutMs: 50 })
    const r = await agent.prompt('go')
    expect(r).toEqual({ success: false, output: afterRunText, messages: [], tokenUsage: ZERO, toolCalls: [], structured: undefined, aborted: true, timedOut: true })
    expect(agent.getHistory()).toEqual([])
    after.settle.reject!(undefined)
  })

  test('stream(): a beforeRun that never settles ends the stream with an error event after the abort', async () => {
    const adapter = doneAdapter()
    const { outcome: events, settle } = await abortedIn('beforeRun', streaming, adapter)
    const got = await events
    expect(got.map((e) => e.type)).toEqual(['error'])
    expect((got[0].data as Error).message).toBe(beforeRunText)
    expect(adapter.calls).toBe(0)
    settle.reject!(new Error('late'))
  })

  test('stream(): an afterRun that never settles ends the stream with an error event after the abort', async () => {
    const { outcome: events, agent, settle } = await abortedIn('afterRun', streaming)
    const got = await events
    expect(got.map((e) => e.type)).toEqual(['text', 'error'])
    expect((got[1].data as Error).message).toBe(afterRunText)
    expect(agent.getState().status).toBe('error')
    settle.reject!(new Error('late'))
  })

  test('stream(): an afterRun that never settles ends at the agent\'s timeoutMs', async () => {
    const after = stuck<any>()
    const agent = agentWith({ afterRun: after.hook, timeoutMs: 50 })
    const got = await collect(agent.stream('go'))
    expect(got.map((e) => e.type)).toEqual(['text', 'error'])
    expect((got[1].data as Error).message).toBe(afterRunText)
  })
})

describe('a stream stopped with return() does not wait forever for its shell release', () => {
  test('a ShellExecutor whose dispose never settles: return() settles, the stream is done', async () => {
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const disposing = signal()
    let rejectDispose!: (e: Error) => void
    const shell: ShellExecutor = {
      start: async () => {},
      exec: async () => ({ stdout: 'hi\n', stderr: '', exitCode: 0 }),
      dispose: () => { disposing.fire(); return new Promise<void>((_r, reject) => { rejectDispose = reject }) },
    }
    const agent = new Agent({ name: 's', model: 'm', adapter: adapterCalling('bash', { command: 'echo hi' }), tools: ['bash'], shellExecutor: shell } as any, registry, new ToolExecutor(registry))
    const it = agent.stream('go')[Symbol.asyncIterator]()
    let e = await it.next()
    while (!e.done && (e.value as StreamEvent).type !== 'tool_result') e = await it.next()
    expect((e.value as StreamEvent).type).toBe('tool_result')
    // The consumer stops: the run is over, its lease released (dispose reached), and return()
    // does not wait for a dispose that never settles.
    expect(await it.return!(undefined)).toEqual({ done: true, value: undefined })
    await disposing.fired
    expect(await it.next()).toEqual({ done: true, value: undefined })
    // The dispose left behind fails long after: a process warning, never an unhandled rejection.
    const warned = signal<unknown>()
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation((w: unknown) => warned.fire(w))
    try {
      rejectDispose(new Error('dispose failed late'))
      expect(await warned.fired).toBe("oma-kernel: a shell executor's dispose() failed after its run ended: dispose failed late")
    } finally {
      warn.mockRestore()
    }
  })
})

describe('a run\'s notification callbacks that return a rejecting promise', () => {
  test('onMessage, onToolCall, onToolResult and onWarning: the run goes on, no unhandled rejection', async () => {
    const registry = new ToolRegistry()
    registry.register({ name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { s: { type: 'string' } } }, execute: async (input: any) => ({ data: String(input.s) }) })
    const agent = new Agent({ name: 'n', model: 'm', adapter: adapterCalling('echo', { s: 'x' }), tools: ['echo'] } as any, registry, new ToolExecutor(registry))
    const seen: string[] = []
    const rejecting = (name: string) => async () => { seen.push(name); throw new Error(`${name} rejected`) }
    const r = await agent.run('go', { onMessage: rejecting('onMessage'), onToolCall: rejecting('onToolCall'), onToolResult: rejecting('onToolResult') } as any)
    expect(r.success).toBe(true)
    expect(r.toolCalls[0].output).toBe('x')
    expect(new Set(seen)).toEqual(new Set(['onMessage', 'onToolCall', 'onToolResult']))
    // The first-turn warning (a tool offered, none called), through stream().
    const plain = new Agent({ name: 'p', model: 'm', adapter: doneAdapter(), tools: ['echo'] } as any, registry, new ToolExecutor(registry))
    const events = await collect(plain.stream('go', { onWarning: rejecting('onWarning'), onMessage: rejecting('onMessage') } as any))
    expect(events[events.length - 1].type).toBe('done')
    expect(seen).toContain('onWarning')
    // afterEach: no unhandled rejection.
  })
})
