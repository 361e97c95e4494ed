import { z } from 'zod'
import {
  AgentRunner, ToolRegistry, ToolExecutor, defineTool, TokenBudgetExceededError,
  LLMAdapter, LLMMessage, LLMResponse, StreamEvent, ContentBlock, RunnerOptions,
} from '../index'

const W_TOOL = 'WARNING: You appear to be repeating the same tool calls with identical arguments. This suggests you are stuck in a loop. Please try a different approach, use different parameters, or explain what you are trying to accomplish.'
const W_TEXT = 'WARNING: You appear to be generating the same response repeatedly. This suggests you are stuck in a loop. Please try a different approach or provide new information.'
const NOT_GRANTED = (t: string) => `Tool "${t}" is not granted to this agent. Built-in tools are opt-in: grant it via the agent's "tools" allowlist or "toolPreset" (or set the orchestrator's "defaultToolPreset").`

function resp(content: ContentBlock[], usage = { input_tokens: 10, output_tokens: 5 }): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage }
}
const text = (t: string): ContentBlock => ({ type: 'text', text: t })
const call = (id: string, name: string, input: Record<string, unknown> = {}): ContentBlock => ({ type: 'tool_use', id, name, input })

/** An adapter that replays scripted responses and records what it was sent. */
function scripted(responses: Array<LLMResponse | (() => Promise<LLMResponse>)>) {
  const seen: Array<{ messages: LLMMessage[]; options: any }> = []
  let i = 0
  const adapter: LLMAdapter = {
    name: 'mock',
    async chat(messages, options) {
      seen.push({ messages: JSON.parse(JSON.stringify(messages)), options })
      const r = responses[Math.min(i++, responses.length - 1)]
      return typeof r === 'function' ? r() : r
    },
    async *stream() {},
  }
  return { adapter, seen }
}

function setup(opts: Partial<RunnerOptions> = {}, responses: any[] = [], executorOptions = {}) {
  const registry = new ToolRegistry()
  const calls: string[] = []
  registry.register(defineTool({
    name: 'echo', description: 'echo', inputSchema: z.object({ v: z.string().default('d') }),
    execute: async (input: { v: string }) => { calls.push(input.v); return { data: `echo:${input.v}` } },
  }))
  const executor = new ToolExecutor(registry, executorOptions)
  const { adapter, seen } = scripted(responses)
  const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['echo'], ...opts })
  return { registry, executor, runner, seen, calls }
}

async function collect(gen: AsyncGenerator<StreamEvent>) {
  const events: StreamEvent[] = []
  for await (const e of gen) events.push(e)
  return events
}
const user = (t: string): LLMMessage => ({ role: 'user', content: [{ type: 'text', text: t }] })

describe('AgentRunner loop', () => {
  test('tool round then final answer: events, messages, records, usage', async () => {
    const { runner, calls } = setup({}, [resp([text('thinking'), call('t1', 'echo', { v: 'a' })]), resp([text('done')])])
    const events = await collect(runner.stream([user('go')]))
    expect(events.map((e) => e.type)).toEqual(['text', 'tool_use', 'tool_result', 'text', 'done'])
    expect(events[2].data).toEqual({ type: 'tool_result', tool_use_id: 't1', content: 'echo:a', is_error: undefined })
    const result: any = events[4].data
    expect(result.output).toBe('done')
    expect(result.turns).toBe(2)
    expect(result.tokenUsage).toEqual({ input_tokens: 20, output_tokens: 10 })
    expect(result.messages).toHaveLength(3)
    expect(result.toolCalls).toEqual([{ toolName: 'echo', input: { v: 'a' }, output: 'echo:a', duration: expect.any(Number) }])
    expect(calls).toEqual(['a'])
  })

  test('Zod defaults are applied before execute', async () => {
    const { runner, calls } = setup({}, [resp([call('t1', 'echo', {})]), resp([text('ok')])])
    await runner.run([user('go')])
    expect(calls).toEqual(['d'])
  })

  test('maxTurns exit returns the last assistant text; default is 10', async () => {
    const { runner } = setup({}, [resp([text('again'), call('t', 'echo', { v: 'x' })])])
    const r = await runner.run([user('go')])
    expect(r.turns).toBe(10)
    expect(r.output).toBe('again')
    const { runner: r2 } = setup({ maxTurns: 0 }, [])
    const out = await r2.run([user('q'), { role: 'assistant', content: [text('from history')] }])
    expect(out).toMatchObject({ turns: 0, output: 'from history', messages: [] })
  })

  test('abort between turns ends the run normally with aborted: true', async () => {
    const ctl = new AbortController()
    const { runner } = setup({}, [resp([call('t', 'echo', { v: 'x' })])])
    const r = await runner.run([user('go')], { onToolResult: () => ctl.abort(), abortSignal: ctl.signal })
    expect(r.turns).toBe(1)
    expect(r.aborted).toBe(true)
    // The tool_use is answered: the history stays replayable.
    expect(r.messages.map((m) => m.role)).toEqual(['assistant', 'user'])
  })

  test('a tool that never settles is answered when the run is aborted', async () => {
    const registry = new ToolRegistry()
    registry.register(defineTool({ name: 'hang', description: 'h', inputSchema: z.object({}), execute: () => new Promise(() => {}) }))
    const ctl = new AbortController()
    const { adapter } = scripted([resp([call('h1', 'hang')])])
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry), { model: 'm', allowedTools: ['hang'] })
    setTimeout(() => ctl.abort(), 20)
    const r = await runner.run([user('go')], { abortSignal: ctl.signal })
    expect(r.toolCalls[0].output).toBe('Tool "hang" was aborted during execution.')
    expect(r.aborted).toBe(true)
  })

  test('adapter rejection becomes an error event and run() rejects', async () => {
    const { runner } = setup({}, [async () => { throw new Error('boom') }])
    const events = await collect(runner.stream([user('go')]))
    expect(events.map((e) => e.type)).toEqual(['error'])
    expect((events[0].data as Error).message).toBe('boom')
    expect(events[0].data).toBeInstanceOf(Error)
    await expect(runner.run([user('go')])).rejects.toThrow('boom')
  })

  test('malformed adapter responses fail the run cleanly', async () => {
    for (const bad of [undefined, {}, { content: 'nope' }, { content: [{ type: 'tool_use', id: 'x', name: 'echo', input: 'str' }] }]) {
      const { runner } = setup({}, [async () => bad as any])
      const events = await collect(runner.stream([user('go')]))
      expect(events).toHaveLength(1)
      expect(events[0].type).toBe('error')
      expect((events[0].data as Error).message).toMatch(/^LLM adapter returned a malformed response: /)
    }
  })

  test('block types the loop does not interpret are carried through untouched', async () => {
    const odd = { type: 'thinking', thinking: 'hmm', signature: 's' } as any
    const { runner, seen } = setup({}, [resp([odd, call('t1', 'echo', { v: 'a' })]), resp([text('ok')])])
    const r = await runner.run([user('go')])
    expect(r.messages[0].content[0]).toEqual(odd)
    expect(seen[1].messages[1].content[0]).toEqual(odd)
    expect(r.output).toBe('ok')
  })

  test('NOT_GRANTED gate: ungranted tools never reach the executor', async () => {
    const { runner, calls } = setup({ allowedTools: [] }, [resp([call('t1', 'echo', { v: 'z' })]), resp([text('ok')])])
    const r = await runner.run([user('go')])
    expect(calls).toEqual([])
    expect(r.toolCalls[0].output).toBe(NOT_GRANTED('echo'))
    expect((r.messages[1].content[0] as any).is_error).toBe(true)
  })

  test('first-turn warning when tools were offered but not used', async () => {
    const warnings: string[] = []
    const { runner } = setup({ agentName: 'bob' }, [resp([text('plain')])])
    await runner.run([user('go')], { onWarning: (w) => warnings.push(w) })
    expect(warnings).toEqual(['Agent "bob" has 1 tool(s) available but the model returned no tool calls. If using a local model, verify it supports tool calling (see https://ollama.com/search?c=tools).'])
  })

  test('callbacks fire in contract order', async () => {
    const log: string[] = []
    const { runner } = setup({}, [resp([text('t'), call('a', 'echo', { v: '1' }), call('b', 'echo', { v: '2' })]), resp([text('end')])])
    for await (const e of runner.stream([user('go')], {
      onMessage: (m) => log.push(`msg:${m.role}`),
      onToolCall: (n, i: any) => log.push(`call:${i.v}`),
      onToolResult: (n, r) => log.push(`result:${r.data}`),
    })) log.push(`ev:${e.type}`)
    expect(log).toEqual([
      'msg:assistant', 'ev:text', 'ev:tool_use', 'ev:tool_use', 'call:1', 'call:2', 'result:echo:1', 'result:echo:2',
      'ev:tool_result', 'ev:tool_result', 'msg:user', 'msg:assistant', 'ev:text', 'ev:done',
    ])
  })

  test('an ungranted block finishes (onToolResult) before the next block starts', async () => {
    const log: string[] = []
    const { runner } = setup({}, [resp([call('a', 'nope'), call('b', 'echo', { v: '2' })]), resp([text('end')])])
    await runner.run([user('go')], {
      onToolCall: (n) => log.push(`call:${n}`),
      onToolResult: (n, r) => log.push(`result:${n}:${r.isError === true}`),
    })
    expect(log).toEqual(['call:nope', 'result:nope:true', 'call:echo', 'result:echo:false'])
  })

  test('a throwing callback ends the run with an error event', async () => {
    const { runner } = setup({}, [resp([call('a', 'echo')]), resp([text('x')])])
    const events = await collect(runner.stream([user('go')], { onToolCall: () => { throw new Error('cb failed') } }))
    expect(events.map((e) => e.type)).toEqual(['tool_use', 'error'])
    expect((events[1].data as Error).message).toBe('cb failed')
  })

  test('stream is pull-driven: a consumer that stops iterating stops the run', async () => {
    const { runner, seen } = setup({}, [resp([text('1'), call('a', 'echo', { v: '1' })]), resp([text('2'), call('b', 'echo', { v: '2' })]), resp([text('3')])])
    for await (const e of runner.stream([user('go')])) {
      if (e.type === 'text') break
    }
    await new Promise((r) => setTimeout(r, 10))
    expect(seen).toHaveLength(1)
  })
})

describe('token budget', () => {
  test('budget exceeded: event, deferred break after the tool round, output of that turn', async () => {
    const { runner } = setup({ maxTokenBudget: 10, agentName: 'ag' }, [resp([text('partial'), call('t', 'echo', { v: 'q' })]), resp([text('never')])])
    const events = await collect(runner.stream([user('go')]))
    expect(events.map((e) => e.type)).toEqual(['text', 'budget_exceeded', 'tool_use', 'tool_result', 'done'])
    const err = events[1].data as TokenBudgetExceededError
    expect(err).toBeInstanceOf(TokenBudgetExceededError)
    expect(err.message).toBe('Agent "ag" exceeded token budget: 15 tokens used (budget: 10)')
    const r: any = events[4].data
    expect(r).toMatchObject({ budgetExceeded: true, output: 'partial', turns: 1 })
    expect(r.messages).toHaveLength(2)
  })

  test('delegation usage rolls up and triggers the post-delegation check', async () => {
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'delegate', description: 'd', inputSchema: z.object({}),
      execute: async () => ({ data: 'sub', metadata: { tokenUsage: { input_tokens: 100, output_tokens: 50 } } }),
    }))
    const { adapter } = scripted([resp([call('d', 'delegate')]), resp([text('never')])])
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry), { model: 'm', allowedTools: ['delegate'], maxTokenBudget: 100 })
    const events = await collect(runner.stream([user('go')]))
    expect(events.map((e) => e.type)).toEqual(['tool_use', 'tool_result', 'budget_exceeded', 'done'])
    expect((events[2].data as any).tokensUsed).toBe(165)
    const r: any = events[3].data
    expect(r.tokenUsage).toEqual({ input_tokens: 110, output_tokens: 55 })
    expect(r.messages.map((m: LLMMessage) => m.role)).toEqual(['assistant', 'user'])
  })
})

describe('loop detection', () => {
  const same = () => resp([call('t', 'echo', { v: 'same' })])

  test('warn injects W_TOOL into the tool-result message, then terminates with a paired history', async () => {
    const warnings: string[] = []
    const { runner } = setup({ loopDetection: {} }, [same()])
    const events = await collect(runner.stream([user('go')], { onWarning: (w) => warnings.push(w) }))
    const r: any = events.at(-1)!.data
    expect(r.loopDetected).toBe(true)
    expect(r.turns).toBe(4)
    expect(events.filter((e) => e.type === 'loop_detected').map((e: any) => e.data.repetitions)).toEqual([3, 4])
    expect(warnings[0]).toBe('Tool call "echo" with identical arguments has repeated 3 times consecutively. The agent appears to be stuck in a loop.')
    const third = r.messages[5].content
    expect(third.at(-1)).toEqual({ type: 'text', text: W_TOOL })
    // §21: the terminating turn's tool_use is answered.
    expect(r.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 't', content: 'Tool call not executed: the run was stopped by loop detection.', is_error: true }],
    })
    // No tool_use event for the terminating turn.
    expect(events.filter((e) => e.type === 'tool_use')).toHaveLength(3)
  })

  test('text repetition (seeded from history) injects a user warning message', async () => {
    const { runner, seen } = setup({ loopDetection: { maxRepetitions: 2 } }, [resp([text('same  answer ')]), resp([text('new')])])
    const msgs: LLMMessage[] = [user('q'), { role: 'assistant', content: [text('same answer')] }, user('again')]
    const events = await collect(runner.stream(msgs))
    expect(events.map((e) => e.type)).toEqual(['text', 'loop_detected', 'text', 'done'])
    const r: any = events.at(-1)!.data
    expect(r.output).toBe('new')
    expect(r.loopDetected).toBeUndefined()
    expect(r.messages[1]).toEqual(user(W_TEXT))
    expect(seen[1].messages.at(-1)).toEqual(user(W_TEXT))
  })

  test('callback policy: continue never stops; terminate stops', async () => {
    const infos: any[] = []
    const { runner } = setup({ maxTurns: 5, loopDetection: { maxRepetitions: 2, onLoopDetected: (i) => { infos.push(i); return 'continue' } } }, [same()])
    const r = await runner.run([user('go')])
    expect(r.turns).toBe(5)
    expect(r.loopDetected).toBeUndefined()
    expect(infos).toHaveLength(4)
    expect(infos[0]).toEqual({ kind: 'tool_repetition', repetitions: 2, detail: expect.any(String) })
    const { runner: r2 } = setup({ loopDetection: { maxRepetitions: 2, onLoopDetected: async () => 'terminate' as const } }, [same()])
    const out = await r2.run([user('go')])
    expect(out).toMatchObject({ loopDetected: true, turns: 2 })
  })

  test('terminate policy on a text loop', async () => {
    const { runner } = setup({ loopDetection: { onLoopDetected: 'terminate', maxRepetitions: 2 } }, [resp([text('x')])])
    const history: LLMMessage[] = [user('a'), { role: 'assistant', content: [text('x')] }, user('b')]
    const r = await runner.run(history)
    expect(r).toMatchObject({ loopDetected: true, output: 'x', turns: 1 })
  })
})

describe('resolveTools', () => {
  let warn: jest.SpyInstance
  beforeEach(() => { warn = jest.spyOn(console, 'warn').mockImplementation(() => {}) })
  afterEach(() => warn.mockRestore())

  function runnerWith(opts: Partial<RunnerOptions>) {
    const registry = new ToolRegistry()
    for (const n of ['bash', 'file_read', 'grep', 'custom']) {
      registry.register(defineTool({ name: n, description: n, inputSchema: z.object({}), execute: async () => ({ data: n }) }))
    }
    registry.register(defineTool({ name: 'rt', description: 'rt', inputSchema: z.object({}), execute: async () => ({ data: 'rt' }) }), { runtimeAdded: true })
    return new AgentRunner({ name: 'x', chat: async () => resp([text('')]), async *stream() {} }, registry, new ToolExecutor(registry), { model: 'm', ...opts }) as any
  }
  const names = (r: any) => r.resolveTools().map((d: any) => d.name)

  test('resolutions are kept per options and tool list; a run whose entry was dropped still gets its grants', async () => {
    const { runner, seen } = setup({}, [resp([call('a', 'echo', { v: 'x' })]), resp([text('done')])])
    // Many other configurations overflow the kept resolutions between this runner's
    // resolveTools() and the start of its run (as user code in a console.warn spy could).
    const own = (AgentRunner.prototype as any).resolveTools
    ;(runner as any).resolveTools = function (this: any) {
      const defs = own.call(this)
      for (let i = 0; i < 200; i++) runnerWith({ agentName: `other-${i}` }).resolveTools()
      return defs
    }
    const r = await runner.run([user('go')])
    expect(r.toolCalls.map((c: any) => c.output)).toEqual(['echo:x'])
    expect(seen[0].options.tools.map((t: any) => t.name)).toEqual(['echo'])
    expect(r.output).toBe('done')
  })

  test('default deny keeps runtime tools only; presets, allowlists, denylists', () => {
    expect(names(runnerWith({}))).toEqual(['rt'])
    expect(names(runnerWith({ toolPreset: 'readonly' }))).toEqual(['file_read', 'grep', 'rt'])
    expect(names(runnerWith({ toolPreset: 'full', disallowedTools: ['bash', 'rt'] }))).toEqual(['file_read', 'grep'])
    expect(names(runnerWith({ allowedTools: ['custom'] }))).toEqual(['custom', 'rt'])
    expect(names(runnerWith({ toolPreset: null as any }))).toEqual(['bash', 'file_read', 'grep', 'custom', 'rt'])
    expect(warn).not.toHaveBeenCalled()
  })

  test('warnings go through console.warn with the exact texts', () => {
    names(runnerWith({ toolPreset: 'readonly', allowedTools: ['grep', 'bash'], disallowedTools: ['bash', 'grep'] }))
    expect(warn.mock.calls).toEqual([
      ['AgentRunner: both toolPreset and allowedTools are set. Final tool access will be the intersection of both.'],
      ['AgentRunner: tools ["grep", "bash"] appear in both allowedTools and disallowedTools. This is contradictory and may lead to unexpected behavior.'],
    ])
  })

  test('LLM tool defs come from Zod or llmInputSchema', () => {
    const d = runnerWith({ allowedTools: ['custom'] }).resolveTools()
    expect(d[0]).toEqual({ name: 'custom', description: 'custom', inputSchema: { type: 'object', properties: {} } })
  })

  test('invalid options fail at construction', () => {
    expect(() => runnerWith({ maxTurns: -1 })).toThrow('Invalid configuration: maxTurns must be a non-negative integer, got -1')
    expect(() => runnerWith({ maxTurns: NaN })).toThrow('maxTurns must be a non-negative integer')
    expect(() => runnerWith({ toolPreset: 'admin' as any })).toThrow('unknown toolPreset "admin"')
  })
})

describe('context strategies', () => {
  const long = (n: number) => 'x'.repeat(n)

  test('sliding-window keeps the first user message and prepends the truncation notice', async () => {
    const history: LLMMessage[] = [user('goal')]
    for (let i = 0; i < 4; i++) history.push({ role: 'assistant', content: [text(`a${i}`)] }, user(`u${i}`))
    const { runner, seen } = setup({ contextStrategy: { type: 'sliding-window', maxTurns: 1 } }, [resp([text('ok')])])
    const r = await runner.run(history)
    expect(seen[0].messages).toEqual([
      user('goal'),
      { role: 'assistant', content: [text('a3')] },
      { role: 'user', content: [text('[Earlier conversation history truncated — 6 turn(s) removed]\n\n'), text('u3')] },
    ])
    // The returned messages are the originals of this run only.
    expect(r.messages).toHaveLength(1)
  })

  test('summarize calls the model once, adds its usage, caches the prefix', async () => {
    const history: LLMMessage[] = [user('goal'), { role: 'assistant', content: [text(long(400))] }, user('u1'), { role: 'assistant', content: [text('a1')] }, user('u2')]
    const summary = resp([text(' - summary bullet ')], { input_tokens: 7, output_tokens: 3 })
    const { runner, seen } = setup({ contextStrategy: { type: 'summarize', maxTokens: 10, summaryModel: 'small' } }, [summary, resp([text('final')])])
    const traces: any[] = []
    const r = await runner.run(history, { onTrace: (e) => { traces.push(e) } })
    expect(seen[0].options.model).toBe('small')
    expect(seen[0].options.tools).toBeUndefined()
    expect(seen[0].messages).toHaveLength(1)
    expect((seen[0].messages[0].content[0] as any).text).toBe('Summarize the following conversation history for an LLM.\n- Preserve user goals, constraints, and decisions.\n- Keep key tool outputs and unresolved questions.\n- Use concise bullets.\n- Do not fabricate details.')
    expect((seen[0].messages[0].content[1] as any).text).toBe(`\n\nConversation:\n${JSON.stringify(history[1])}\n${JSON.stringify(history[2])}`)
    expect(JSON.stringify(seen[1].messages)).toContain('[Conversation summary]\\n- summary bullet\\n\\n')
    expect(r.tokenUsage).toEqual({ input_tokens: 17, output_tokens: 8 })
    expect(traces.filter((t) => t.type === 'llm_call').map((t) => t.phase)).toEqual(['summary', 'turn'])
  })

  test('the summary cache lives as long as its runner: a later run reuses it, another runner does not', async () => {
    const history: LLMMessage[] = [user('goal'), { role: 'assistant', content: [text(long(400))] }, user('u1'), { role: 'assistant', content: [text('a1')] }, user('u2')]
    const strategy = { type: 'summarize' as const, maxTokens: 10, summaryModel: 'small' }
    const responses = [resp([text('bullet')]), resp([text('first')]), resp([text('second')])]
    const { runner, seen, registry, executor } = setup({ contextStrategy: strategy }, responses)
    await runner.run(history)
    const again = await runner.run(history)
    // Same signature: the cached prefix, no second summary call.
    expect(seen.map((x) => x.options.model)).toEqual(['small', 'm', 'm'])
    expect(again.output).toBe('second')
    expect(JSON.stringify(seen[2].messages)).toContain('[Conversation summary]\\nbullet\\n\\n')
    const other = scripted([resp([text('other bullet')]), resp([text('x')])])
    const second = new AgentRunner(other.adapter, registry, executor, { model: 'm', contextStrategy: strategy })
    await second.run(history)
    expect(other.seen.map((x) => x.options.model)).toEqual(['small', 'm'])
  })

  test('compact replaces old tool results outside the preserved turns', async () => {
    const history: LLMMessage[] = [
      user('goal'),
      { role: 'assistant', content: [call('c1', 'echo')] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: long(300) }] },
      { role: 'assistant', content: [text('mid')] },
      user('next'),
    ]
    const { runner, seen } = setup({ contextStrategy: { type: 'compact', maxTokens: 10, preserveRecentTurns: 1 } }, [resp([text('ok')])])
    await runner.run(history)
    expect(seen[0].messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: '[Tool result: echo — 300 chars, compacted]' }] })
  })

  test('custom compress runs before every turn and its output must be a non-empty array', async () => {
    const estimates: number[] = []
    const compress = (msgs: LLMMessage[], est: number) => { estimates.push(est); return msgs.slice(-1) }
    const { runner, seen } = setup({ contextStrategy: { type: 'custom', compress } }, [resp([call('a', 'echo', { v: '1' })]), resp([text('ok')])])
    await runner.run([user('one'), { role: 'assistant', content: [text('two')] }, user('three')])
    expect(estimates).toHaveLength(2)
    expect(seen[0].messages).toEqual([user('three')])
    const { runner: bad } = setup({ contextStrategy: { type: 'custom', compress: () => [] } }, [resp([text('ok')])])
    await expect(bad.run([user('x')])).rejects.toThrow('contextStrategy.custom.compress must return a non-empty LLMMessage[]')
  })

  test('compressToolResults rewrites consumed results from turn 2 on, history keeps originals', async () => {
    const big = long(600)
    const registry = new ToolRegistry()
    registry.register(defineTool({ name: 'big', description: 'b', inputSchema: z.object({ n: z.number() }), execute: async () => ({ data: big }) }))
    const { adapter, seen } = scripted([resp([call('1', 'big', { n: 1 })]), resp([call('2', 'big', { n: 2 })]), resp([text('done')])])
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry), { model: 'm', allowedTools: ['big'], compressToolResults: true })
    const r = await runner.run([user('go')])
    expect((seen[2].messages[2].content[0] as any).content).toBe('[Tool output compressed — 600 chars, already processed]')
    expect((seen[2].messages[4].content[0] as any).content).toBe(big)
    expect((r.messages[1].content[0] as any).content).toBe(big)
  })
})

describe('executor scheduling', () => {
  test('maxConcurrency bounds the runner\'s tool executions (§21)', async () => {
    let active = 0
    let peak = 0
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'slow', description: 's', inputSchema: z.object({ i: z.number() }),
      execute: async () => { active++; peak = Math.max(peak, active); await new Promise((r) => setTimeout(r, 5)); active--; return { data: 'ok' } },
    }))
    const blocks = Array.from({ length: 6 }, (_, i) => call(`c${i}`, 'slow', { i }))
    const { adapter } = scripted([resp(blocks), resp([text('done')])])
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry, { maxConcurrency: 2 }), { model: 'm', allowedTools: ['slow'] })
    const r = await runner.run([user('go')])
    expect(r.toolCalls).toHaveLength(6)
    expect(peak).toBe(2)
  })
})

describe('strings handed to the kernel', () => {
  // The per-turn calls copy strings through one reused native buffer that grows on demand:
  // lengths around its size and multi-byte characters must come through byte-exact.
  it('keeps long and multi-byte texts and tool results intact', async () => {
    const sizes = [1, 1364, 1365, 1366, 4090, 4096, 4100, 70_000]
    for (const n of sizes) {
      const big = '€'.repeat(n) + '😀é'
      const { runner, seen } = setup({}, [resp([call('c1', 'echo', { v: big })]), resp([text(big)])])
      const result = await runner.run([user('go')])
      expect(result.output).toBe(big)
      expect(result.toolCalls[0].output).toBe(`echo:${big}`)
      const last = seen[1].messages[seen[1].messages.length - 1]
      expect(last.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'c1', content: `echo:${big}` })
    }
  })

  it('reports a released run as an error, not a crash', async () => {
    const native = require('../binding.js')
    expect(() => native.runNext(987654, false)).toThrow('oma-kernel: this run has already been released')
    expect(() => native.runRespond(987654, '[]', 0, 0)).toThrow('oma-kernel: this run has already been released')
    expect(() => native.runToolResult(987654, 0, 'x', 0)).toThrow('oma-kernel: this run has already been released')
    expect(() => native.semAcquire(987654)).toThrow('oma-kernel: this semaphore has already been released')
    expect(() => native.runNext('not a number', false)).toThrow('oma-kernel: argument 0 must be a number')
  })

  // Several calls of a round reach the kernel in one call (more arguments than it holds on the
  // stack here): each outcome keeps its index, its error flag, its text and its usage.
  it('hands a wide round to the kernel whole: order, errors, texts and delegated usage', async () => {
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'mix', description: 'm', inputSchema: z.object({ k: z.string(), n: z.number() }),
      execute: async ({ k, n }: { k: string; n: number }) => {
        await new Promise((r) => setTimeout(r, (n * 7) % 5))
        if (k === 'err') return { data: `bad ${n} \u0001"€`, isError: true }
        if (k === 'use') return { data: `used ${n}`, metadata: { tokenUsage: { input_tokens: n, output_tokens: 2 * n } } }
        return { data: `ok ${n} ${'😀'.repeat(n)}` }
      },
    }))
    const kinds = ['ok', 'err', 'use']
    const n = 40
    const round = Array.from({ length: n }, (_, i) => call(`c${i}`, 'mix', { k: kinds[i % 3], n: i }))
    const { adapter, seen } = scripted([resp(round), resp([text('fin')])])
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry, { maxConcurrency: 7 }), { model: 'm', allowedTools: ['mix'] })
    const r = await runner.run([user('go')])
    expect(r.output).toBe('fin')
    const expected = round.map((_, i) => {
      const k = kinds[i % 3]
      return k === 'err'
        ? { type: 'tool_result', tool_use_id: `c${i}`, content: `bad ${i} \u0001"€`, is_error: true }
        : { type: 'tool_result', tool_use_id: `c${i}`, content: k === 'use' ? `used ${i}` : `ok ${i} ${'😀'.repeat(i)}` }
    })
    // What the model is sent next is the kernel's copy of the outcomes.
    expect(seen[1].messages[seen[1].messages.length - 1].content).toEqual(expected)
    expect(r.messages[1].content).toEqual(expected)
    const delegated = round.map((_, i) => i).filter((i) => i % 3 === 2)
    const sum = delegated.reduce((a, i) => a + i, 0)
    expect(r.tokenUsage).toEqual({ input_tokens: 20 + sum, output_tokens: 10 + 2 * sum })
    expect(r.toolCalls.map((t: any) => t.output)).toEqual(expected.map((b) => b.content))
  })
})

describe('runner options built one after another', () => {
  test('each runner gets its own values; strategy objects may carry anything else', () => {
    const registry = new ToolRegistry()
    const cyclic: any = { name: 'c' }
    cyclic.self = cyclic
    const mk = (opts: Partial<RunnerOptions>) => new AgentRunner(undefined as any, registry, new ToolExecutor(registry), { model: 'm', ...opts })
    const strategy: any = { type: 'sliding-window', maxTurns: 3, extra: cyclic }
    expect(() => mk({ contextStrategy: strategy })).not.toThrow()
    expect(() => mk({ contextStrategy: strategy })).not.toThrow()
    expect(() => mk({ maxTurns: 2 })).not.toThrow()
    expect(() => mk({ maxTurns: -3 })).toThrow('Invalid configuration: maxTurns must be a non-negative integer, got -3')
    const preset: any = { toolPreset: 'full' }
    expect(() => mk(preset)).not.toThrow()
    preset.toolPreset = 'admin'
    expect(() => mk(preset)).toThrow('Invalid configuration: unknown toolPreset "admin"')
  })
})
