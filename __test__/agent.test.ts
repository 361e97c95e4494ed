// Agent public API (CONTRACT §4, §20.1, §21).
import * as path from 'node:path'
import { z } from 'zod'
import { Agent, AgentRunner, ToolRegistry, ToolExecutor, defineTool } from '../index'
import type { AgentConfig, AgentRunResult, LLMMessage, ToolUseContext } from '../index'
import { MockAdapter, echoTool, sleep, textReply, toolReply, usage, userText } from './helpers/mock-adapter'
import { agentSetup, FAILED } from './helpers/mock-adapter'

const setup = (config: Partial<AgentConfig> = {}, adapter?: MockAdapter) => agentSetup('tester', config, adapter)

describe('construction (§4.1)', () => {
  test('name, config by reference, initial state, internal members', () => {
    const config: AgentConfig = { name: 'alpha', model: 'm1', adapter: new MockAdapter() }
    const agent = new Agent(config, new ToolRegistry(), new ToolExecutor(new ToolRegistry()))
    expect(agent.name).toBe('alpha')
    expect(agent.config).toBe(config)
    expect(agent.getState()).toStrictEqual({ status: 'idle', messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } })
    expect(agent.getHistory()).toStrictEqual([])
    expect((agent as any).runner).toBeNull()
    expect((agent as any).messageHistory).toStrictEqual([])
  })

  test('construction performs no I/O: the adapter is not called', () => {
    const { adapter } = setup()
    expect(adapter.calls).toHaveLength(0)
  })

  test('maxTurns: -1 throws at construction', () => {
    expect(() => setup({ maxTurns: -1 })).toThrow(
      new Error('Invalid configuration: maxTurns must be a non-negative integer, got -1'),
    )
  })

  test('configurations built one after the other are each checked on their own values', () => {
    // The options text is reused while the values read are equal: an edit in place must count.
    const tools = ['a']
    expect(() => setup({ maxTurns: 2, tools })).not.toThrow()
    expect(() => setup({ maxTurns: 2, tools })).not.toThrow()
    expect(() => setup({ maxTurns: -2, tools })).toThrow('Invalid configuration: maxTurns must be a non-negative integer, got -2')
    expect(() => setup({ maxTurns: 2, tools })).not.toThrow()
    const preset: any = { toolPreset: 'readonly' }
    expect(() => setup(preset)).not.toThrow()
    preset.toolPreset = 'admin'
    expect(() => setup(preset)).toThrow('Invalid configuration: unknown toolPreset "admin"')
  })

  test('maxTurns: 1.5 throws at construction', () => {
    expect(() => setup({ maxTurns: 1.5 })).toThrow(
      new Error('Invalid configuration: maxTurns must be a non-negative integer, got 1.5'),
    )
  })

  test("unknown toolPreset 'admin' throws at construction", () => {
    let caught: unknown
    try {
      setup({ toolPreset: 'admin' as any })
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(Error)
    expect((caught as Error).message).toBe(
      'Invalid configuration: unknown toolPreset "admin"; expected "readonly", "readwrite" or "full"',
    )
  })

  test('valid edge values do not throw (maxTurns: 0, every known preset)', () => {
    expect(() => setup({ maxTurns: 0 })).not.toThrow()
    for (const p of ['readonly', 'readwrite', 'full'] as const) expect(() => setup({ toolPreset: p })).not.toThrow()
  })
})

describe('run() (§4.2, §4.6)', () => {
  test('sends a fresh one-message conversation and returns the full AgentRunResult', async () => {
    const { agent, adapter } = setup({ systemPrompt: 'Be brief.', maxTokens: 123, temperature: 0.5 })
    const r = await agent.run('hi there')
    expect(r).toStrictEqual({
      success: true,
      output: 'hello',
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'hello' }] }],
      tokenUsage: { input_tokens: 10, output_tokens: 5 },
      toolCalls: [],
      structured: undefined,
    })
    expect('structured' in r).toBe(true)
    expect('turns' in r).toBe(false)
    expect(adapter.calls).toHaveLength(1)
    expect(adapter.calls[0].messages).toStrictEqual([{ role: 'user', content: [{ type: 'text', text: 'hi there' }] }])
    const o = adapter.calls[0].options
    expect(o.model).toBe('mock-model')
    expect(o.systemPrompt).toBe('Be brief.')
    expect(o.maxTokens).toBe(123)
    expect(o.temperature).toBe(0.5)
    expect(o.tools).toBeUndefined()
    expect(o.abortSignal).toBeUndefined()
  })

  test('does not read or write the history', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('a'), textReply('b')]))
    await agent.run('one')
    await agent.run('two')
    expect(agent.getHistory()).toStrictEqual([])
    expect(adapter.calls[1].messages).toStrictEqual([userText('two')])
  })

  test('a tool round: toolCalls record, tool_result message (is_error key present), summed usage', async () => {
    const adapter = new MockAdapter([
      toolReply([{ id: 't1', name: 'echo', input: { text: 'hi' } }], usage(5, 2)),
      textReply('done', usage(7, 3)),
    ])
    const { agent, registry } = setup({ tools: ['echo'] }, adapter)
    registry.register(echoTool())
    const r = await agent.run('go')
    expect(r.success).toBe(true)
    expect(r.output).toBe('done')
    expect(r.tokenUsage).toStrictEqual({ input_tokens: 12, output_tokens: 5 })
    expect(r.toolCalls).toStrictEqual([{ toolName: 'echo', input: { text: 'hi' }, output: 'echo:hi', duration: expect.any(Number) }])
    expect(r.messages).toHaveLength(3)
    expect(r.messages[1]).toStrictEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 't1', content: 'echo:hi', is_error: undefined }],
    })
    expect('is_error' in (r.messages[1].content[0] as object)).toBe(true)
    expect(adapter.calls[1].messages).toHaveLength(3)
    expect(adapter.calls[0].options.tools).toStrictEqual([
      {
        name: 'echo',
        description: 'echoes (echo)',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      },
    ])
  })

  test('caller onMessage is called after the message is pushed onto state.messages', async () => {
    const adapter = new MockAdapter([toolReply([{ id: 't1', name: 'echo', input: { text: 'x' } }]), textReply('ok')])
    const { agent, registry } = setup({ tools: ['echo'] }, adapter)
    registry.register(echoTool())
    const seen: Array<{ msg: LLMMessage; stateLen: number }> = []
    const r = await agent.run('go', { onMessage: (msg) => seen.push({ msg, stateLen: agent.getState().messages.length }) })
    expect(seen.map((s) => s.stateLen)).toStrictEqual([1, 2, 3])
    expect(seen.map((s) => s.msg)).toStrictEqual(r.messages)
    expect(agent.getState().messages).toStrictEqual(r.messages)
  })

  test('state.tokenUsage and state.messages accumulate across runs until reset()', async () => {
    const adapter = new MockAdapter([textReply('a', usage(1, 2)), textReply('b', usage(3, 4))])
    const { agent } = setup({}, adapter)
    await agent.run('one')
    await agent.run('two')
    const s = agent.getState()
    expect(s.tokenUsage).toStrictEqual({ input_tokens: 4, output_tokens: 6 })
    expect(s.messages).toStrictEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'a' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'b' }] },
    ])
  })

  test('the runner is created once and reused (also across reset)', async () => {
    const { agent } = setup({}, new MockAdapter([textReply('a'), textReply('b')]))
    await agent.run('one')
    const runner = (agent as any).runner
    expect(runner).toBeInstanceOf(AgentRunner)
    agent.reset()
    expect((agent as any).runner).toBe(runner)
    await agent.run('two')
    expect((agent as any).runner).toBe(runner)
  })
})

describe('prompt() (§4.2)', () => {
  test('appends the user message and the result messages; later prompts send the whole history', async () => {
    const adapter = new MockAdapter([textReply('first'), textReply('second')])
    const { agent } = setup({}, adapter)
    const r1 = await agent.prompt('q1')
    expect(r1.success).toBe(true)
    expect(agent.getHistory()).toStrictEqual([userText('q1'), { role: 'assistant', content: [{ type: 'text', text: 'first' }] }])
    await agent.prompt('q2')
    expect(adapter.calls[1].messages).toStrictEqual([
      userText('q1'),
      { role: 'assistant', content: [{ type: 'text', text: 'first' }] },
      userText('q2'),
    ])
    expect(agent.getHistory()).toStrictEqual([
      userText('q1'),
      { role: 'assistant', content: [{ type: 'text', text: 'first' }] },
      userText('q2'),
      { role: 'assistant', content: [{ type: 'text', text: 'second' }] },
    ])
  })

  test('the user message is in the history while the run is in flight', async () => {
    let during: LLMMessage[] = []
    const { agent } = setup(
      {},
      new MockAdapter([
        () => {
          during = agent.getHistory()
          return textReply('x')
        },
      ]),
    )
    await agent.prompt('hello')
    expect(during).toStrictEqual([userText('hello')])
  })

  test('tool-round messages are appended in order', async () => {
    const adapter = new MockAdapter([toolReply([{ id: 't1', name: 'echo', input: { text: 'a' } }]), textReply('fin')])
    const { agent, registry } = setup({ tools: ['echo'] }, adapter)
    registry.register(echoTool())
    const r = await agent.prompt('go')
    expect(agent.getHistory()).toStrictEqual([userText('go'), ...r.messages])
    expect(agent.getHistory()).toHaveLength(4)
  })

  test('§21: a failed prompt() leaves the history as it was (first prompt)', async () => {
    const { agent } = setup({}, new MockAdapter([new Error('provider down')]))
    const r = await agent.prompt('q1')
    expect(r).toStrictEqual(FAILED('provider down'))
    expect(agent.getHistory()).toStrictEqual([])
  })

  test('§21: a failed prompt() leaves an existing history unchanged, and the next prompt sends no dangling user turn', async () => {
    const adapter = new MockAdapter([textReply('a1'), new Error('boom'), textReply('a3')])
    const { agent } = setup({}, adapter)
    await agent.prompt('q1')
    const before = agent.getHistory()
    const snapshot = JSON.parse(JSON.stringify(before))
    const r = await agent.prompt('q2')
    expect(r).toStrictEqual(FAILED('boom'))
    const after = agent.getHistory()
    expect(after).toHaveLength(2)
    expect(after).toStrictEqual(snapshot)
    after.forEach((m, i) => expect(m).toBe(before[i]))
    await agent.prompt('q3')
    expect(adapter.calls[2].messages).toStrictEqual([...snapshot, userText('q3')])
  })
})

describe('getState / getHistory / reset (§4.2)', () => {
  test('getState returns a shallow copy with its own messages array', async () => {
    const { agent } = setup()
    await agent.run('x')
    const a = agent.getState()
    a.messages.push(userText('injected'))
    a.status = 'idle'
    const b = agent.getState()
    expect(b.messages).toHaveLength(1)
    expect(b.status).toBe('completed')
    expect(b.messages[0]).toBe(a.messages[0])
    expect(b.tokenUsage).toBe(a.tokenUsage)
  })

  test('getHistory returns a copy', async () => {
    const { agent } = setup()
    await agent.prompt('x')
    const h = agent.getHistory()
    h.push(userText('injected'))
    expect(agent.getHistory()).toHaveLength(2)
  })

  test('reset() clears history and state (no error key) and keeps the runner', async () => {
    const { agent } = setup({}, new MockAdapter([textReply('a'), new Error('bad')]))
    await agent.prompt('x')
    await agent.run('y')
    expect(agent.getState().status).toBe('error')
    const runner = (agent as any).runner
    agent.reset()
    const s = agent.getState()
    expect(s).toStrictEqual({ status: 'idle', messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } })
    expect('error' in s).toBe(false)
    expect(agent.getHistory()).toStrictEqual([])
    expect((agent as any).runner).toBe(runner)
  })
})

describe('addTool / removeTool / getTools (§4.2)', () => {
  test('getTools lists every registry tool in registration order, granted or not', () => {
    const { agent, registry } = setup()
    registry.register(echoTool('b_tool'))
    registry.register(echoTool('a_tool'))
    agent.addTool(echoTool('c_tool'))
    expect(agent.getTools()).toStrictEqual(['b_tool', 'a_tool', 'c_tool'])
  })

  test('addTool registers a runtime tool: offered without any grant, visible to the next run', async () => {
    const adapter = new MockAdapter([textReply('a'), textReply('b')])
    const { agent, registry } = setup({}, adapter)
    registry.register(echoTool('builtin_like'))
    await agent.run('one')
    expect(adapter.calls[0].options.tools).toBeUndefined()
    agent.addTool(echoTool('rt'))
    expect(registry.has('rt')).toBe(true)
    await agent.run('two')
    expect(adapter.calls[1].options.tools!.map((t) => t.name)).toStrictEqual(['rt'])
  })

  test('addTool with a duplicate name throws synchronously with the registry message', () => {
    const { agent } = setup()
    agent.addTool(echoTool())
    expect(() => agent.addTool(echoTool())).toThrow(
      new Error('ToolRegistry: a tool named "echo" is already registered. Use a unique name or deregister the existing one first.'),
    )
  })

  test('removeTool deregisters; absent name is a no-op', async () => {
    const adapter = new MockAdapter([textReply('a'), textReply('b')])
    const { agent } = setup({}, adapter)
    agent.addTool(echoTool('rt'))
    await agent.run('one')
    expect(adapter.calls[0].options.tools!.map((t) => t.name)).toStrictEqual(['rt'])
    agent.removeTool('rt')
    expect(() => agent.removeTool('rt')).not.toThrow()
    expect(() => agent.removeTool('never-there')).not.toThrow()
    expect(agent.getTools()).toStrictEqual([])
    await agent.run('two')
    expect(adapter.calls[1].options.tools).toBeUndefined()
  })
})

describe('buildToolContext (§4.2, ⚠ quirk 60 vs 50 chars)', () => {
  const long = 'R'.repeat(30) + 'S'.repeat(30) + 'T'.repeat(30) // 90 chars

  test('role = first 60 chars of systemPrompt; abortSignal key always present; default cwd; no team', () => {
    const { agent } = setup({ systemPrompt: long, model: 'mdl' })
    const ctx = agent.buildToolContext()
    expect(ctx).toStrictEqual({
      agent: { name: 'tester', role: long.slice(0, 60), model: 'mdl' },
      abortSignal: undefined,
      cwd: path.resolve(process.cwd(), '.agent-workspace'),
    })
    expect(ctx.agent.role).toHaveLength(60)
    expect('abortSignal' in ctx).toBe(true)
    expect('team' in ctx).toBe(false)
  })

  test("role 'assistant' when systemPrompt is undefined, '' when it is ''", () => {
    expect(setup().agent.buildToolContext().agent.role).toBe('assistant')
    expect(setup({ systemPrompt: '' }).agent.buildToolContext().agent.role).toBe('')
  })

  test('cwd: explicit string and null are passed through; the given signal is used', () => {
    const ctl = new AbortController()
    expect(setup({ cwd: '/tmp/sandbox' }).agent.buildToolContext(ctl.signal)).toStrictEqual({
      agent: { name: 'tester', role: 'assistant', model: 'mock-model' },
      abortSignal: ctl.signal,
      cwd: '/tmp/sandbox',
    })
    expect(setup({ cwd: null }).agent.buildToolContext().cwd).toBeNull()
  })

  test("the runner's tool context uses the first 50 chars (quirk) and the agent name/model", async () => {
    let seen: ToolUseContext | undefined
    const adapter = new MockAdapter([toolReply([{ id: 't1', name: 'ctx', input: {} }]), textReply('ok')])
    const { agent, registry } = setup({ systemPrompt: long, tools: ['ctx'], cwd: '/tmp/cwd-x' }, adapter)
    registry.register(
      defineTool({
        name: 'ctx',
        description: 'captures context',
        inputSchema: z.object({}),
        execute: async (_input: Record<string, never>, context: ToolUseContext) => {
          seen = context
          return { data: 'ok' }
        },
      }),
    )
    await agent.run('go')
    expect(seen!.agent).toStrictEqual({ name: 'tester', role: long.slice(0, 50), model: 'mock-model' })
    expect(seen!.cwd).toBe('/tmp/cwd-x')
  })
})

describe('lifecycle states (§4.8)', () => {
  test('idle → running (during the LLM call) → completed', async () => {
    const statuses: string[] = []
    const { agent } = setup(
      {},
      new MockAdapter([
        () => {
          statuses.push(agent.getState().status)
          return textReply('x')
        },
      ]),
    )
    statuses.push(agent.getState().status)
    const p = agent.run('go')
    statuses.push(agent.getState().status)
    await p
    statuses.push(agent.getState().status)
    expect(statuses).toStrictEqual(['idle', 'running', 'running', 'completed'])
  })

  test('a throwing adapter → status error with an Error instance', async () => {
    const { agent } = setup({}, new MockAdapter([new Error('upstream 500')]))
    const r = await agent.run('go')
    expect(r).toStrictEqual(FAILED('upstream 500'))
    const s = agent.getState()
    expect(s.status).toBe('error')
    expect(s.error).toBeInstanceOf(Error)
    expect(s.error instanceof Error).toBe(true)
    expect(s.error!.message).toBe('upstream 500')
  })

  test('a non-Error rejection is wrapped in new Error(String(value))', async () => {
    const adapter = new MockAdapter([
      () => {
        throw 'plain string failure'
      },
    ])
    const { agent } = setup({}, adapter)
    const r = await agent.run('go')
    expect(r).toStrictEqual(FAILED('plain string failure'))
    const err = agent.getState().error
    expect(err instanceof Error).toBe(true)
    expect(err!.message).toBe('plain string failure')
  })

  test('the thrown Error object itself is stored', async () => {
    const boom = new TypeError('typed failure')
    const { agent } = setup({}, new MockAdapter([boom]))
    await agent.run('go')
    expect(agent.getState().error).toBe(boom)
  })

  test('§21: a new run clears a stale error (already while running)', async () => {
    let duringError: unknown = 'not-read'
    let duringHasKey: boolean | undefined
    const adapter = new MockAdapter([
      new Error('first fails'),
      () => {
        const s = agent.getState()
        duringError = s.error
        duringHasKey = 'error' in s
        return textReply('ok')
      },
    ])
    const { agent } = setup({}, adapter)
    await agent.run('one')
    expect(agent.getState().error!.message).toBe('first fails')
    const r = await agent.run('two')
    expect(r.success).toBe(true)
    const s = agent.getState()
    expect(s.status).toBe('completed')
    expect(s.error).toBeUndefined()
    expect('error' in s).toBe(false)
    expect(duringError).toBeUndefined()
    expect(duringHasKey).toBe(false)
  })

  test('failed result reports zero tokens; state keeps nothing from the rejected runner.run but keeps pushed messages', async () => {
    const adapter = new MockAdapter([toolReply([{ id: 't1', name: 'echo', input: { text: 'a' } }], usage(9, 9)), new Error('turn 2 failed')])
    const { agent, registry } = setup({ tools: ['echo'] }, adapter)
    registry.register(echoTool())
    const r = await agent.run('go')
    expect(r).toStrictEqual(FAILED('turn 2 failed'))
    const s = agent.getState()
    expect(s.tokenUsage).toStrictEqual({ input_tokens: 0, output_tokens: 0 })
    expect(s.messages).toHaveLength(2)
    expect(s.messages[0].role).toBe('assistant')
    expect(s.messages[1].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 't1', content: 'echo:a' })
  })

  test('run() never rejects', async () => {
    const { agent } = setup({}, new MockAdapter([new Error('x')]))
    await expect(agent.run('go')).resolves.toMatchObject({ success: false, output: 'x' })
  })
})

describe('stream() (§4.7)', () => {
  test('yields runner events and a done AgentRunResult; no history, no state.messages', async () => {
    const adapter = new MockAdapter([toolReply([{ id: 't1', name: 'echo', input: { text: 'a' } }], usage(1, 1), 'calling'), textReply('fin', usage(2, 2))])
    const { agent, registry } = setup({ tools: ['echo'] }, adapter)
    registry.register(echoTool())
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of agent.stream('go')) events.push(e)
    expect(events.map((e) => e.type)).toStrictEqual(['text', 'tool_use', 'tool_result', 'text', 'done'])
    expect(events[0].data).toBe('calling')
    expect(events[2].data).toStrictEqual({ type: 'tool_result', tool_use_id: 't1', content: 'echo:a', is_error: undefined })
    const done = events[4].data as AgentRunResult
    expect(done).toStrictEqual({
      success: true,
      output: 'fin',
      messages: expect.any(Array),
      tokenUsage: { input_tokens: 3, output_tokens: 3 },
      toolCalls: [{ toolName: 'echo', input: { text: 'a' }, output: 'echo:a', duration: expect.any(Number) }],
      structured: undefined,
    })
    expect(done.messages).toHaveLength(3)
    expect('turns' in done).toBe(false)
    const s = agent.getState()
    expect(s.status).toBe('completed')
    expect(s.messages).toStrictEqual([])
    expect(s.tokenUsage).toStrictEqual({ input_tokens: 3, output_tokens: 3 })
    expect(agent.getHistory()).toStrictEqual([])
  })

  test('an adapter failure yields one error event (an Error) and sets state error', async () => {
    const { agent } = setup({}, new MockAdapter([new Error('stream boom')]))
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of agent.stream('go')) events.push(e)
    expect(events).toHaveLength(1)
    expect(events[0].type).toBe('error')
    expect(events[0].data).toBeInstanceOf(Error)
    expect((events[0].data as Error).message).toBe('stream boom')
    expect(agent.getState().status).toBe('error')
    expect(agent.getState().error!.message).toBe('stream boom')
  })
})

describe('timeout and abort (§4.3, §20.1 #7, §21 aborted/timedOut)', () => {
  function slowSetup(config: Partial<AgentConfig>, onExecute?: () => void) {
    // The model keeps asking for the slow tool; only the abort can end the run.
    const adapter = new MockAdapter([], () => toolReply([{ id: 'slow1', name: 'slow', input: {} }], usage(1, 1), 'working'))
    const s = setup({ tools: ['slow'], ...config }, adapter)
    s.registry.register(
      defineTool({
        name: 'slow',
        description: 'waits 200 ms',
        inputSchema: z.object({}),
        execute: async () => {
          onExecute?.()
          await sleep(200)
          return { data: 'slept' }
        },
      }),
    )
    return s
  }

  test('timeoutMs firing during a tool ends the run between turns: success true, aborted true, timedOut true', async () => {
    const { agent, adapter } = slowSetup({ timeoutMs: 50 })
    const r = await agent.run('go')
    expect(adapter.calls).toHaveLength(1)
    expect(r.success).toBe(true)
    expect(r.aborted).toBe(true)
    expect(r.timedOut).toBe(true)
    expect(r.output).toBe('working')
    expect(r.toolCalls).toHaveLength(1)
    expect(r.messages).toHaveLength(2)
    expect(r.structured).toBeUndefined()
    expect(agent.getState().status).toBe('completed')
    // The run-scoped timeout signal reached the adapter.
    expect(adapter.calls[0].options.abortSignal).toBeInstanceOf(AbortSignal)
  })

  test('oma-kernel: a tool still running when the run aborts is answered at once (README, Differences)', async () => {
    const { agent } = slowSetup({ timeoutMs: 50 })
    const r = await agent.run('go')
    expect(r.toolCalls[0].output).toBe('Tool "slow" was aborted during execution.')
    expect(r.messages[1].content[0]).toStrictEqual({ type: 'tool_result', tool_use_id: 'slow1', content: 'Tool "slow" was aborted during execution.', is_error: true })
  })

  test('timeoutMs via prompt(): flags present, history gets the partial messages', async () => {
    const { agent } = slowSetup({ timeoutMs: 50 })
    const r = await agent.prompt('go')
    expect(r.aborted).toBe(true)
    expect(r.timedOut).toBe(true)
    expect(agent.getHistory()).toHaveLength(3)
  })

  test('a caller abort between turns: aborted true, no timedOut', async () => {
    const ctl = new AbortController()
    const { agent, adapter } = slowSetup({}, () => ctl.abort())
    const r = await agent.run('go', { abortSignal: ctl.signal })
    expect(adapter.calls).toHaveLength(1)
    expect(r.success).toBe(true)
    expect(r.aborted).toBe(true)
    expect('timedOut' in r).toBe(false)
    expect(adapter.calls[0].options.abortSignal).toBe(ctl.signal)
  })

  test('pre-aborted caller signal merged with a timeout: no LLM call, empty output, aborted but not timedOut', async () => {
    const ctl = new AbortController()
    ctl.abort()
    const { agent, adapter } = slowSetup({ timeoutMs: 60_000 })
    const r = await agent.run('go', { abortSignal: ctl.signal })
    expect(adapter.calls).toHaveLength(0)
    expect(r.success).toBe(true)
    expect(r.output).toBe('')
    expect(r.messages).toStrictEqual([])
    expect(r.aborted).toBe(true)
    expect('timedOut' in r).toBe(false)
  })

  test('the timeout-only signal reaches the adapter; its reason is a TimeoutError DOMException', async () => {
    const { agent, adapter } = slowSetup({ timeoutMs: 50 })
    await agent.run('go')
    const signal = adapter.calls[0].options.abortSignal!
    expect(signal.aborted).toBe(true)
    expect(signal.reason.name).toBe('TimeoutError')
    expect(signal.reason.message).toBe('The operation was aborted due to timeout')
  })

  test('caller signal + timeout are merged: a new signal whose reason is an AbortError DOMException', async () => {
    const ctl = new AbortController()
    const { agent, adapter } = slowSetup({ timeoutMs: 60_000 }, () => ctl.abort(new Error('caller reason')))
    const r = await agent.run('go', { abortSignal: ctl.signal })
    const signal = adapter.calls[0].options.abortSignal!
    expect(signal).not.toBe(ctl.signal)
    expect(signal.aborted).toBe(true)
    expect(signal.reason.name).toBe('AbortError')
    expect(signal.reason.message).toBe('This operation was aborted')
    expect(r.aborted).toBe(true)
    expect('timedOut' in r).toBe(false)
  })

  test('each run gets a fresh timeout signal', async () => {
    const adapter = new MockAdapter([textReply('a'), textReply('b')])
    const { agent } = setup({ timeoutMs: 60_000 }, adapter)
    await agent.run('1')
    await agent.run('2')
    const s1 = adapter.calls[0].options.abortSignal
    const s2 = adapter.calls[1].options.abortSignal
    expect(s1).toBeInstanceOf(AbortSignal)
    expect(s2).toBeInstanceOf(AbortSignal)
    expect(s1).not.toBe(s2)
  })

  test('no abort: neither aborted nor timedOut keys on the result', async () => {
    const { agent } = setup({ timeoutMs: 60_000 })
    const r = await agent.run('go')
    expect(r.success).toBe(true)
    expect('aborted' in r).toBe(false)
    expect('timedOut' in r).toBe(false)
  })

  test('a finished run stops its timeout: the signal it handed out never aborts afterwards', async () => {
    // (AbortSignal.timeout's timer cannot be cleared: each finished run's signal stayed reachable
    // until it fired.)
    for (const stream of [false, true]) {
      const adapter = new MockAdapter([textReply('a')])
      const { agent } = setup({ timeoutMs: 100 }, adapter)
      if (stream) for await (const _ of agent.stream('go')) { /* drain */ }
      else expect((await agent.run('go')).success).toBe(true)
      const signal = adapter.calls[0].options.abortSignal!
      await sleep(300)
      expect(signal.aborted).toBe(false)
    }
  })

  test('a timeoutMs beyond what a Node timer holds (2^31 ms up to 2^32 - 1) does not fire early', async () => {
    // AbortSignal.timeout(3e9) aborts after 1 ms (with a TimeoutOverflowWarning).
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    try {
      const adapter = new MockAdapter([], async () => {
        await sleep(50)
        return textReply('late')
      })
      const { agent } = setup({ timeoutMs: 3_000_000_000 }, adapter)
      const r = await agent.run('go')
      expect(r.output).toBe('late')
      expect('aborted' in r).toBe(false)
      expect(adapter.calls[0].options.abortSignal!.aborted).toBe(false)
      await sleep(10)
      expect(warnings).not.toContain('TimeoutOverflowWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })

  test('a timeoutMs AbortSignal.timeout refuses fails the run with Node\'s own error, as before', async () => {
    for (const timeoutMs of [1.5, 2 ** 32, Infinity]) {
      let expected = ''
      try {
        AbortSignal.timeout(timeoutMs)
      } catch (e) {
        expected = (e as Error).message
      }
      expect(expected).not.toBe('')
      const adapter = new MockAdapter([textReply('a')])
      const { agent } = setup({ timeoutMs }, adapter)
      const r = await agent.run('go')
      expect(r.success).toBe(false)
      expect(r.output).toBe(expected)
      expect(adapter.calls).toHaveLength(0)
    }
  })
})

describe('call timing', () => {
  it('never calls the model before run() / stream() has returned (also on a reused agent)', async () => {
    const { agent, adapter } = agentSetup('timing', {}, new MockAdapter([], textReply('ok')))
    for (let i = 0; i < 2; i++) {
      const before = adapter.calls.length
      const p = agent.run('go')
      expect(adapter.calls.length).toBe(before)
      await p
      expect(adapter.calls.length).toBe(before + 1)
    }
    const it = agent.stream('go')
    const first = it.next()
    expect(adapter.calls.length).toBe(2)
    await first
    for await (const _ of it) { /* drain */ }
    expect(adapter.calls.length).toBe(3)
  })
})
