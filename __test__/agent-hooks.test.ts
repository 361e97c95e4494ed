// Agent hooks and test-visible internals (CONTRACT §4.1, §4.4, §4.6, §19.2, §20.1 #8, §21).
import { Agent, AgentRunner, ToolRegistry, ToolExecutor } from '../index'
import type { AgentConfig, AgentRunResult, BeforeRunHookContext, ContentBlock, LLMMessage, TraceEvent } from '../index'
import { MockAdapter, assistantText, textReply, usage, userText } from './helpers/mock-adapter'
import { agentSetup, ANSWERED, FAILED } from './helpers/mock-adapter'

const setup = (config: Partial<AgentConfig> = {}, adapter?: MockAdapter) => agentSetup('hooked', config, adapter)

const IMG1: ContentBlock = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }
const IMG2: ContentBlock = { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BBBB' } }

describe('beforeRun (§4.4)', () => {
  test('receives { prompt, agent } where agent is a copy of config without the hooks', async () => {
    const seen: BeforeRunHookContext[] = []
    const afterRun = (r: AgentRunResult) => r
    const beforeRun = (ctx: BeforeRunHookContext) => {
      seen.push(ctx)
      return ctx
    }
    const { agent, adapter } = setup({ systemPrompt: 'sys', maxTurns: 3, beforeRun, afterRun })
    await agent.run('the prompt')
    expect(seen).toHaveLength(1)
    expect(seen[0].prompt).toBe('the prompt')
    expect(seen[0].agent).not.toBe(agent.config)
    expect(seen[0].agent).toStrictEqual({ name: 'hooked', model: 'mock-model', adapter, systemPrompt: 'sys', maxTurns: 3 })
    expect('beforeRun' in seen[0].agent).toBe(false)
    expect('afterRun' in seen[0].agent).toBe(false)
  })

  test('an unchanged prompt keeps the very message object; prompt = text of the last user message', async () => {
    let ctxPrompt: string | undefined
    const adapter = new MockAdapter([textReply('a1'), textReply('a2')])
    const { agent } = setup({ beforeRun: (ctx) => ((ctxPrompt = ctx.prompt), ctx) }, adapter)
    await agent.prompt('first')
    await agent.prompt('second')
    expect(ctxPrompt).toBe('second')
    const history = agent.getHistory()
    expect(adapter.calls[1].messages).toHaveLength(3)
    expect(adapter.calls[1].messages[2]).toBe(history[2])
  })

  test('a changed prompt replaces the last user message with a new one (run)', async () => {
    const { agent, adapter } = setup({ beforeRun: (ctx) => ({ ...ctx, prompt: ctx.prompt.toUpperCase() + '!' }) })
    const r = await agent.run('shout this')
    expect(r.success).toBe(true)
    expect(adapter.calls[0].messages).toStrictEqual([{ role: 'user', content: [{ type: 'text', text: 'SHOUT THIS!' }] }])
  })

  test('async hooks are awaited', async () => {
    const { agent, adapter } = setup({
      beforeRun: async (ctx) => {
        await new Promise((r) => setImmediate(r))
        return { ...ctx, prompt: 'async rewrite' }
      },
    })
    await agent.run('x')
    expect(adapter.calls[0].messages).toStrictEqual([userText('async rewrite')])
  })

  test('text blocks collapse into one new first text block; non-text blocks kept in order; history untouched', async () => {
    const adapter = new MockAdapter([textReply('earlier reply'), textReply('ok')])
    let hooked = false
    const { agent } = setup(
      {
        beforeRun: (ctx) => {
          if (!hooked) return ctx
          // prompt() runs on a shallow copy of the history: the last user message object is
          // shared, so extra blocks added here are part of the message the hook rewrites.
          const last = agent.getHistory()[agent.getHistory().length - 1]
          last.content.push(IMG1, { type: 'text', text: ' part two' }, IMG2)
          return { ...ctx, prompt: 'REWRITTEN' }
        },
      },
      adapter,
    )
    await agent.prompt('earlier')
    hooked = true
    const r = await agent.prompt('part one')
    expect(r.success).toBe(true)
    const sent = adapter.calls[1].messages
    expect(sent).toHaveLength(3)
    expect(sent.slice(0, 2)).toStrictEqual([userText('earlier'), assistantText('earlier reply')])
    expect(sent[2]).toStrictEqual({ role: 'user', content: [{ type: 'text', text: 'REWRITTEN' }, IMG1, IMG2] })
    const history = agent.getHistory()
    expect(sent[2]).not.toBe(history[2])
    // The persistent history keeps the original message object (not the rewritten one).
    expect(history[2].content[0]).toStrictEqual({ type: 'text', text: 'part one' })
    expect(history).toHaveLength(4)
  })

  test('the rewritten prompt is not written to the prompt() history', async () => {
    const adapter = new MockAdapter([textReply('r')])
    const { agent } = setup({ beforeRun: (ctx) => ({ ...ctx, prompt: 'rewritten' }) }, adapter)
    await agent.prompt('original')
    expect(adapter.calls[0].messages).toStrictEqual([userText('rewritten')])
    expect(agent.getHistory()).toStrictEqual([userText('original'), assistantText('r')])
  })

  test('returning undefined fails the run with the TypeError message; the LLM is not called', async () => {
    const { agent, adapter } = setup({ beforeRun: (() => undefined) as any })
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED("Cannot read properties of undefined (reading 'prompt')"))
    expect(adapter.calls).toHaveLength(0)
    const s = agent.getState()
    expect(s.status).toBe('error')
    expect(s.error).toBeInstanceOf(TypeError)
    expect(s.error instanceof Error).toBe(true)
  })

  test('returning null fails the run the same way', async () => {
    const { agent, adapter } = setup({ beforeRun: (() => null) as any })
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED("Cannot read properties of null (reading 'prompt')"))
    expect(adapter.calls).toHaveLength(0)
  })

  test('a throwing hook fails the run with its message; the LLM is not called', async () => {
    const { agent, adapter } = setup({
      beforeRun: () => {
        throw new Error('hook says no')
      },
    })
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED('hook says no'))
    expect(adapter.calls).toHaveLength(0)
    expect(agent.getState().error!.message).toBe('hook says no')
  })

  test('a failing beforeRun in prompt() leaves the history as it was (§21)', async () => {
    const { agent } = setup({ beforeRun: (() => undefined) as any })
    const r = await agent.prompt('x')
    expect(r.success).toBe(false)
    expect(agent.getHistory()).toStrictEqual([])
  })

  test('an object without prompt sends a text block whose text is undefined (key present)', async () => {
    const { agent, adapter } = setup({ beforeRun: (() => ({ agent: {} })) as any })
    const r = await agent.run('x')
    expect(r.success).toBe(true)
    expect(adapter.calls).toHaveLength(1)
    const sent = adapter.calls[0].messages
    expect(sent).toHaveLength(1)
    expect(sent[0]).toStrictEqual({ role: 'user', content: [{ type: 'text', text: undefined }] })
    expect('text' in (sent[0].content[0] as object)).toBe(true)
  })

  test('a non-string prompt is inserted as is ("not otherwise validated")', async () => {
    const { agent, adapter } = setup({ beforeRun: ((ctx: BeforeRunHookContext) => ({ ...ctx, prompt: 42 })) as any })
    await agent.run('x')
    expect(adapter.calls[0].messages[0].content).toStrictEqual([{ type: 'text', text: 42 }])
  })

  test('stream(): the hook applies; returning undefined yields an error event', async () => {
    const ok = setup({ beforeRun: (ctx) => ({ ...ctx, prompt: 'streamed rewrite' }) })
    for await (const _ of ok.agent.stream('x')) void _
    expect(ok.adapter.calls[0].messages).toStrictEqual([userText('streamed rewrite')])

    const bad = setup({ beforeRun: (() => undefined) as any })
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of bad.agent.stream('x')) events.push(e)
    expect(events).toHaveLength(1)
    expect(events[0].type).toBe('error')
    expect((events[0].data as Error).message).toBe("Cannot read properties of undefined (reading 'prompt')")
    expect(bad.adapter.calls).toHaveLength(0)
    expect(bad.agent.getState().status).toBe('error')
  })
})

describe('afterRun (§4.4, §4.6)', () => {
  test('is called with the AgentRunResult while state is still running; its return value replaces the result', async () => {
    const seen: AgentRunResult[] = []
    const statusDuring: string[] = []
    const replacement: AgentRunResult = {
      success: true,
      output: 'replaced',
      messages: [],
      tokenUsage: { input_tokens: 1, output_tokens: 1 },
      toolCalls: [],
    }
    const { agent } = setup({
      afterRun: (r) => {
        seen.push(r)
        statusDuring.push(agent.getState().status)
        return replacement
      },
    })
    const r = await agent.run('x')
    expect(r).toBe(replacement)
    expect(seen).toStrictEqual([ANSWERED('hello', { input_tokens: 10, output_tokens: 5 })])
    expect(statusDuring).toStrictEqual(['running'])
    expect(agent.getState().status).toBe('completed')
  })

  test('is called on budget-exceeded runs too (success false, budgetExceeded true)', async () => {
    const seen: AgentRunResult[] = []
    const { agent } = setup({ maxTokenBudget: 5, afterRun: (r) => (seen.push(r), r) })
    const r = await agent.run('x')
    expect(seen).toHaveLength(1)
    expect(r).toStrictEqual(ANSWERED('hello', { input_tokens: 10, output_tokens: 5 }, { success: false, budgetExceeded: true }))
  })

  test('may return an async value', async () => {
    const { agent } = setup({ afterRun: async (r) => ({ ...r, output: r.output + ' (checked)' }) })
    const r = await agent.run('x')
    expect(r.output).toBe('hello (checked)')
  })

  test('a throwing afterRun fails the run; state.tokenUsage keeps the run usage', async () => {
    const { agent } = setup({
      afterRun: () => {
        throw new Error('after failed')
      },
    })
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED('after failed'))
    const s = agent.getState()
    expect(s.status).toBe('error')
    expect(s.error).toBeInstanceOf(Error)
    expect(s.error!.message).toBe('after failed')
    expect(s.tokenUsage).toStrictEqual({ input_tokens: 10, output_tokens: 5 })
  })

  test('is not called when the run threw', async () => {
    const afterRun = jest.fn((r: AgentRunResult) => r)
    const { agent } = setup({ afterRun }, new MockAdapter([new Error('nope')]))
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED('nope'))
    expect(afterRun).not.toHaveBeenCalled()
  })

  test('prompt() appends the messages of the returned (replaced) result', async () => {
    const custom: LLMMessage = assistantText('from afterRun')
    const { agent } = setup({ afterRun: (r) => ({ ...r, messages: [custom] }) })
    const r = await agent.prompt('q')
    expect(r.messages).toStrictEqual([custom])
    expect(agent.getHistory()).toStrictEqual([userText('q'), custom])
    expect(agent.getHistory()[1]).toBe(custom)
  })

  test('returned value is not validated: undefined is returned as the run result', async () => {
    const { agent } = setup({ afterRun: (() => undefined) as any })
    const r = await agent.run('x')
    expect(r).toBeUndefined()
    expect(agent.getState().status).toBe('completed')
  })

  test('with onTrace, a value without messages fails the run (agent trace reads .messages)', async () => {
    const { agent } = setup({ afterRun: (() => undefined) as any })
    const traces: TraceEvent[] = []
    const r = await agent.run('x', { onTrace: (e) => void traces.push(e) })
    expect(r).toStrictEqual(FAILED("Cannot read properties of undefined (reading 'messages')"))
    expect(agent.getState().status).toBe('error')
  })

  test('prompt() rejects with the TypeError when afterRun returns a value without messages; history restored (§21)', async () => {
    const { agent } = setup({ afterRun: (() => undefined) as any })
    await expect(agent.prompt('q')).rejects.toThrow(new TypeError("Cannot read properties of undefined (reading 'messages')"))
    expect(agent.getHistory()).toStrictEqual([])
  })

  test('stream(): the done event carries the afterRun result', async () => {
    const { agent } = setup({ afterRun: (r) => ({ ...r, output: 'stream-after' }) })
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of agent.stream('x')) events.push(e)
    expect(events.map((e) => e.type)).toStrictEqual(['text', 'done'])
    expect((events[1].data as AgentRunResult).output).toBe('stream-after')
    expect(agent.getState().status).toBe('completed')
  })

  test('stream(): a throwing afterRun yields an error event after the runner finished', async () => {
    const { agent } = setup({
      afterRun: () => {
        throw new Error('stream after failed')
      },
    })
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of agent.stream('x')) events.push(e)
    expect(events.map((e) => e.type)).toStrictEqual(['text', 'error'])
    expect((events[1].data as Error).message).toBe('stream after failed')
    expect(agent.getState().status).toBe('error')
  })
})

describe('test-visible internals (§19.2): runner and messageHistory', () => {
  test('a runner assigned before the first run is used as-is (no adapter creation, config adapter unused)', async () => {
    const configAdapter = new MockAdapter([textReply('from config adapter')])
    const injectedAdapter = new MockAdapter([textReply('from injected runner', usage(3, 4))])
    const registry = new ToolRegistry()
    const agent = new Agent(
      { name: 'inj', model: 'config-model', adapter: configAdapter, systemPrompt: 'config prompt' },
      registry,
      new ToolExecutor(registry),
    )
    const runner = new AgentRunner(injectedAdapter, registry, new ToolExecutor(registry), {
      model: 'runner-model',
      systemPrompt: 'runner prompt',
    })
    ;(agent as any).runner = runner
    const r = await agent.run('x')
    expect(r.output).toBe('from injected runner')
    expect(r.tokenUsage).toStrictEqual({ input_tokens: 3, output_tokens: 4 })
    expect(configAdapter.calls).toHaveLength(0)
    expect(injectedAdapter.calls).toHaveLength(1)
    expect(injectedAdapter.calls[0].options.model).toBe('runner-model')
    expect(injectedAdapter.calls[0].options.systemPrompt).toBe('runner prompt')
    expect((agent as any).runner).toBe(runner)
    expect(agent.getState().tokenUsage).toStrictEqual({ input_tokens: 3, output_tokens: 4 })
  })

  test('an injected runner needs no adapter or provider credentials at all', async () => {
    const injectedAdapter = new MockAdapter([textReply('ok')])
    const registry = new ToolRegistry()
    const agent = new Agent({ name: 'noadapter', model: 'm' }, registry, new ToolExecutor(registry))
    ;(agent as any).runner = new AgentRunner(injectedAdapter, registry, new ToolExecutor(registry), { model: 'm' })
    const r = await agent.run('x')
    expect(r.success).toBe(true)
    expect(r.output).toBe('ok')
  })

  test('assigning messageHistory replaces the conversation prompt() continues from', async () => {
    const adapter = new MockAdapter([textReply('continued')])
    const { agent } = setup({}, adapter)
    const earlier: LLMMessage[] = [userText('earlier question'), assistantText('earlier answer')]
    const snapshot = earlier.slice()
    ;(agent as any).messageHistory = earlier
    expect(agent.getHistory()).toStrictEqual(snapshot)
    expect(agent.getHistory()).not.toBe(earlier)
    await agent.prompt('next')
    expect(adapter.calls[0].messages).toStrictEqual([...snapshot, userText('next')])
    expect(adapter.calls[0].messages[0]).toBe(snapshot[0])
    expect(agent.getHistory()).toStrictEqual([...snapshot, userText('next'), assistantText('continued')])
  })
})
