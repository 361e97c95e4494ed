// AgentConfig.outputSchemaRetries (issue 19, beyond the original's single retry): each retry
// sends the original's feedback text with the latest errors, every attempt's tokens count toward
// maxTokenBudget, and the budget and abort are checked before each retry.
import { z } from 'zod'
import { Agent, ToolExecutor, ToolRegistry, defineTool } from '../index'
import type { AgentConfig, LLMMessage } from '../index'
import { MockAdapter, agentSetup, textReply, toolReply, usage } from './helpers/mock-adapter'

const schema = z.object({ answer: z.number() })
const FIRST = 'Your previous response did not produce valid JSON matching the required schema.'
const LAST = 'Please try again. Respond with ONLY valid JSON, no other text.'

/** The feedback messages of a result, and their texts checked against the original's layout. */
function feedbacks(messages: LLMMessage[]): string[] {
  return messages
    .filter((m) => m.role === 'user')
    .map((m) => {
      const c = m.content as Array<{ type: string; text: string }>
      expect(c).toHaveLength(1)
      const lines = c[0].text.split('\n')
      expect([lines[0], lines[1], lines.at(-2), lines.at(-1)]).toEqual([FIRST, '', '', LAST])
      expect(lines[2].startsWith('Error: ')).toBe(true)
      return c[0].text
    })
}

describe('outputSchemaRetries', () => {
  test('a model that succeeds at the third attempt', async () => {
    const adapter = new MockAdapter([textReply('not json at all', usage(3, 4)), textReply('{"answer":"x"}', usage(5, 6)), textReply('{"answer":42}', usage(7, 8))])
    const { agent } = agentSetup('retrier', { outputSchema: schema, outputSchemaRetries: 3 }, adapter)
    const result = await agent.run('give me the answer')
    expect(result.success).toBe(true)
    expect(result.structured).toEqual({ answer: 42 })
    expect(result.output).toBe('{"answer":42}')
    expect(adapter.calls).toHaveLength(3)
    expect(result.tokenUsage).toEqual({ input_tokens: 15, output_tokens: 18 })
    expect(agent.getState().tokenUsage).toEqual({ input_tokens: 15, output_tokens: 18 })
    expect(agent.getState().status).toBe('completed')
    // [attempt 1, feedback 1, attempt 2, feedback 2, attempt 3]
    expect(result.messages.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant', 'user', 'assistant'])
    const [f1, f2] = feedbacks(result.messages)
    expect(f1).toContain('not json at all')
    expect(f2).toContain('answer')
    expect(f2).not.toBe(f1)
    // Each retry is sent the whole story so far, its own feedback last.
    expect(adapter.calls[1].messages.at(-1)).toEqual(result.messages[1])
    expect(adapter.calls[2].messages.slice(1)).toEqual(result.messages.slice(0, 4))
  })

  test('a model that never succeeds: every retry, then success false', async () => {
    const adapter = new MockAdapter([], textReply('{"nope":true}'))
    const { agent } = agentSetup('stubborn', { outputSchema: schema, outputSchemaRetries: 4 }, adapter)
    const result = await agent.run('q')
    expect(adapter.calls).toHaveLength(5)
    expect(result).toMatchObject({ success: false, structured: undefined, output: '{"nope":true}' })
    expect('structured' in result).toBe(true)
    expect(feedbacks(result.messages)).toHaveLength(4)
    expect(result.tokenUsage).toEqual({ input_tokens: 50, output_tokens: 25 })
    expect(agent.getState().status).toBe('completed')
  })

  test('0 disables the retry; unset keeps the original single one', async () => {
    const none = agentSetup('none', { outputSchema: schema, outputSchemaRetries: 0 }, new MockAdapter([], textReply('bad')))
    const r0 = await none.agent.run('q')
    expect(none.adapter.calls).toHaveLength(1)
    expect(r0).toMatchObject({ success: false, structured: undefined, output: 'bad' })
    expect(r0.messages).toHaveLength(1)
    const unset = agentSetup('unset', { outputSchema: schema }, new MockAdapter([], textReply('bad')))
    const r1 = await unset.agent.run('q')
    expect(unset.adapter.calls).toHaveLength(2)
    expect(feedbacks(r1.messages)).toHaveLength(1)
  })

  test('the budget counts every attempt and runs out mid-retries', async () => {
    // 40 tokens per attempt, a budget of 100: the third attempt spends it (120), no fourth.
    const adapter = new MockAdapter([], textReply('{"nope":1}', usage(20, 20)))
    const { agent } = agentSetup('budgeted', { outputSchema: schema, outputSchemaRetries: 5, maxTokenBudget: 100 }, adapter)
    const result = await agent.run('q')
    expect(adapter.calls).toHaveLength(3)
    expect(result).toMatchObject({ success: false, structured: undefined, budgetExceeded: true })
    expect(result.tokenUsage).toEqual({ input_tokens: 60, output_tokens: 60 })
    expect(feedbacks(result.messages)).toHaveLength(2)

    // Unset: the original's single retry has a budget of its own, so neither attempt exceeds it.
    const original = agentSetup('orig', { outputSchema: schema, maxTokenBudget: 100 }, new MockAdapter([], textReply('{"nope":1}', usage(20, 20))))
    const r = await original.agent.run('q')
    expect(original.adapter.calls).toHaveLength(2)
    expect(r.budgetExceeded).toBeUndefined()
  })

  test('a valid answer from the attempt that spent the budget is still the structured result', async () => {
    const adapter = new MockAdapter([textReply('nope', usage(30, 30)), textReply('{"answer":7}', usage(30, 30))])
    const { agent } = agentSetup('late', { outputSchema: schema, outputSchemaRetries: 3, maxTokenBudget: 100 }, adapter)
    const result = await agent.run('q')
    expect(result).toMatchObject({ success: true, structured: { answer: 7 }, budgetExceeded: true })
    expect(adapter.calls).toHaveLength(2)
  })

  test('an abort between attempts: no further retry', async () => {
    const controller = new AbortController()
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'stop',
      description: 'aborts the run',
      inputSchema: z.object({}),
      execute: async () => { controller.abort(); return { data: 'stopped' } },
    }))
    // Attempt 1 answers badly; attempt 2 calls a tool that aborts; the runner then ends.
    const adapter = new MockAdapter([textReply('bad'), toolReply([{ id: 's', name: 'stop', input: {} }])], textReply('{"answer":1}'))
    const config: AgentConfig = { name: 'aborted', model: 'm', adapter, tools: ['stop'], outputSchema: schema, outputSchemaRetries: 5 }
    const agent = new Agent(config, registry, new ToolExecutor(registry))
    const result = await agent.run('q', { abortSignal: controller.signal })
    expect(adapter.calls).toHaveLength(2)
    expect(result).toMatchObject({ success: false, structured: undefined, aborted: true })
    // One feedback (after attempt 1): no retry was started after the abort.
    expect(result.messages.filter((m) => m.role === 'user' && (m.content as any[])[0].type === 'text')).toHaveLength(1)
    expect(agent.getState().status).toBe('completed')
  })

  test('invalid values are a configuration error from the constructor', () => {
    const registry = new ToolRegistry()
    const executor = new ToolExecutor(registry)
    const text = (got: string) => `Invalid configuration: outputSchemaRetries must be an integer from 0 to 5, got ${got}`
    const cases: Array<[unknown, string]> = [[6, '6'], [-1, '-1'], [1.5, '1.5'], ['3', '"3"'], [null, 'null'], [NaN, 'NaN'], [Infinity, 'Infinity'], [true, 'true']]
    for (const [value, got] of cases) {
      const config = { name: 'bad', model: 'm', adapter: new MockAdapter([]), outputSchema: schema, outputSchemaRetries: value } as unknown as AgentConfig
      expect(() => new Agent(config, registry, executor)).toThrow(text(got))
    }
    for (const value of [0, 1, 5, undefined]) {
      expect(() => new Agent({ name: 'ok', model: 'm', outputSchemaRetries: value } as AgentConfig, registry, executor)).not.toThrow()
    }
  })
})
