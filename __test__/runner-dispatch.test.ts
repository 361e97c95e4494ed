// The runner's blocks of a wide round go to this package's ToolExecutor through callbacks
// (no promise per call) and to any other executor, or one whose `execute` was replaced, through
// `execute` as upstream calls it. Both must give the same run, the same order and the same
// bounds; these tests drive both paths with the same rounds.
import { z } from 'zod'
import { AgentRunner, ToolRegistry, ToolExecutor, defineTool, LLMAdapter, LLMMessage, LLMResponse, ContentBlock } from '../index'

const user = (t: string): LLMMessage => ({ role: 'user', content: [{ type: 'text', text: t }] })
const call = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({ type: 'tool_use', id, name, input })
function resp(content: ContentBlock[]): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
}
function scripted(responses: LLMResponse[]): { adapter: LLMAdapter; seen: LLMMessage[][] } {
  const seen: LLMMessage[][] = []
  let i = 0
  return {
    seen,
    adapter: {
      name: 'mock',
      async chat(messages) {
        seen.push(JSON.parse(JSON.stringify(messages)))
        return responses[Math.min(i++, responses.length - 1)]
      },
      async *stream() {},
    },
  }
}

/** A registry whose tool logs its starts and ends and settles after `delay(n)` ms. */
function tools(log: string[], delay: (n: number) => number = () => 0) {
  const registry = new ToolRegistry()
  registry.register(defineTool({
    name: 'work', description: 'w', inputSchema: z.object({ n: z.number(), fail: z.boolean().optional() }),
    execute: async ({ n, fail }: { n: number; fail?: boolean }) => {
      log.push(`start ${n}`)
      await new Promise((r) => setTimeout(r, delay(n)))
      log.push(`end ${n}`)
      if (fail) throw new Error(`tool ${n} failed`)
      return { data: `done ${n}` }
    },
  }))
  return registry
}

const round = (n: number, failing: number[] = []) =>
  Array.from({ length: n }, (_, i) => call(`c${i}`, 'work', failing.includes(i) ? { n: i, fail: true } : { n: i }))

type Variant = 'own executor' | 'spied execute' | 'subclass'
const variants: Variant[] = ['own executor', 'spied execute', 'subclass']

/** The executor of a variant and a count of the runner's calls to its `execute`. */
function executorOf(variant: Variant, registry: ToolRegistry, options: { maxConcurrency?: number } = {}) {
  const counted = { n: 0 }
  if (variant === 'subclass') {
    // A subclass's own execute is a replaced one too.
    class Counting extends ToolExecutor {
      execute(...args: Parameters<ToolExecutor['execute']>) {
        counted.n++
        return super.execute(...args)
      }
    }
    return { executor: new Counting(registry, options), counted }
  }
  const executor = new ToolExecutor(registry, options)
  if (variant === 'spied execute') {
    const spy = jest.spyOn(executor, 'execute')
    return { executor, counted: { get n() { return spy.mock.calls.length } } }
  }
  return { executor, counted }
}

describe.each(variants)('a wide round through %s', (variant) => {
  test('runs every block under maxConcurrency, in block order, and answers in block order', async () => {
    const log: string[] = []
    const registry = tools(log, (n) => (n * 3) % 4)
    const { executor, counted } = executorOf(variant, registry, { maxConcurrency: 1 })
    const { adapter, seen } = scripted([resp(round(5)), resp([{ type: 'text', text: 'fin' }])])
    const ends: string[] = []
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    const r = await runner.run([user('go')], { onToolResult: (name, result) => { ends.push(`${name}:${result.data}`) } })
    expect(r.output).toBe('fin')
    // One slot: each tool starts after the previous one ended, in the model's order.
    expect(log).toEqual([0, 1, 2, 3, 4].flatMap((n) => [`start ${n}`, `end ${n}`]))
    expect(ends).toEqual([0, 1, 2, 3, 4].map((n) => `work:done ${n}`))
    expect(seen[1][seen[1].length - 1].content).toEqual([0, 1, 2, 3, 4].map((n) => ({ type: 'tool_result', tool_use_id: `c${n}`, content: `done ${n}` })))
    expect(r.toolCalls.map((c) => c.output)).toEqual([0, 1, 2, 3, 4].map((n) => `done ${n}`))
    // Through a replaced execute, the runner calls it once per block.
    if (variant !== 'own executor') expect(counted.n).toBe(5)
  })

  test('a failing tool is its block\'s error result; the others run on', async () => {
    const log: string[] = []
    const registry = tools(log, (n) => n)
    const { executor } = executorOf(variant, registry, { maxConcurrency: 2 })
    const { adapter, seen } = scripted([resp(round(4, [1, 2])), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    const r = await runner.run([user('go')])
    expect(r.output).toBe('fin')
    expect(seen[1][seen[1].length - 1].content).toEqual([
      { type: 'tool_result', tool_use_id: 'c0', content: 'done 0' },
      { type: 'tool_result', tool_use_id: 'c1', content: 'Tool "work" threw an error: tool 1 failed', is_error: true },
      { type: 'tool_result', tool_use_id: 'c2', content: 'Tool "work" threw an error: tool 2 failed', is_error: true },
      { type: 'tool_result', tool_use_id: 'c3', content: 'done 3' },
    ])
    expect(log.filter((l) => l.startsWith('end'))).toHaveLength(4)
  })

  test('an onToolResult that throws fails the run only once every tool of the round ended', async () => {
    const log: string[] = []
    const registry = tools(log, (n) => 3 * n)
    const { executor } = executorOf(variant, registry, { maxConcurrency: 2 })
    const { adapter } = scripted([resp(round(4)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    const onToolResult = (_name: string, result: { data: string }) => { if (result.data === 'done 0') throw new Error('callback broke') }
    await expect(runner.run([user('go')], { onToolResult })).rejects.toThrow('callback broke')
    expect(log.filter((l) => l.startsWith('end'))).toEqual(['end 0', 'end 1', 'end 2', 'end 3'])
  })

  test('a block the gate does not grant is answered without running, the others run', async () => {
    const log: string[] = []
    const registry = tools(log)
    const { executor, counted } = executorOf(variant, registry)
    const blocks = [call('c0', 'work', { n: 0 }), call('c1', 'other', { n: 1 }), call('c2', 'work', { n: 2 })]
    const { adapter, seen } = scripted([resp(blocks), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    await runner.run([user('go')])
    const results = seen[1][seen[1].length - 1].content as Array<{ content: string; is_error?: boolean }>
    expect(results.map((b) => b.content)).toEqual([
      'done 0',
      'Tool "other" is not granted to this agent. Built-in tools are opt-in: grant it via the agent\'s "tools" allowlist or "toolPreset" (or set the orchestrator\'s "defaultToolPreset").',
      'done 2',
    ])
    expect(log).toEqual(['start 0', 'start 2', 'end 0', 'end 2'])
    if (variant !== 'own executor') expect(counted.n).toBe(2)
  })
})

describe.each(variants)('a wide round through %s, with a gate and a timeout', (variant) => {
  test('the runner\'s onToolCall gate judges each block; a denied one is its error result', async () => {
    const log: string[] = []
    const registry = tools(log)
    const { executor } = executorOf(variant, registry, { maxConcurrency: 1 })
    const { adapter, seen } = scripted([resp(round(3)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, {
      model: 'm', allowedTools: ['work'],
      onToolCall: async ({ input }) => ((input as { n: number }).n === 1 ? { action: 'deny', reason: 'not one' } : { action: 'allow' }),
    })
    await runner.run([user('go')])
    expect((seen[1][seen[1].length - 1].content as Array<{ content: string }>).map((b) => b.content)).toEqual([
      'done 0', 'Tool "work" denied by onToolCall: not one', 'done 2',
    ])
    expect(log).toEqual(['start 0', 'end 0', 'start 2', 'end 2'])
  })

  test('an executor whose registry disallows the tool refuses every block, though the runner granted it', async () => {
    const log: string[] = []
    // The runner's registry has no rail; the executor's does (`new ToolRegistry({ disallow })`).
    const runnerRegistry = tools(log)
    const railed = new ToolRegistry({ disallow: ['work'] })
    for (const t of runnerRegistry.list()) railed.register(t)
    const { executor } = executorOf(variant, railed)
    const { adapter, seen } = scripted([resp(round(2)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, runnerRegistry, executor, { model: 'm', allowedTools: ['work'] })
    await runner.run([user('go')])
    const notGranted = 'Tool "work" is not granted to this agent. Built-in tools are opt-in: grant it via the agent\'s "tools" allowlist or "toolPreset" (or set the orchestrator\'s "defaultToolPreset").'
    expect(seen[1][seen[1].length - 1].content).toEqual([0, 1].map((n) => ({ type: 'tool_result', tool_use_id: `c${n}`, content: notGranted, is_error: true })))
    expect(log).toEqual([])
  })

  test('a block that outlives its timeout frees its slot for the next one', async () => {
    const log: string[] = []
    const registry = new ToolRegistry()
    registry.register(defineTool({
      name: 'work', description: 'w', inputSchema: z.object({ n: z.number() }), timeoutMs: 30,
      // Block 0 never settles; the others end at once.
      execute: ({ n }: { n: number }) => {
        log.push(`start ${n}`)
        return n === 0 ? new Promise<never>(() => {}) : Promise.resolve({ data: `done ${n}` })
      },
    }))
    const { executor } = executorOf(variant, registry, { maxConcurrency: 1 })
    const { adapter, seen } = scripted([resp(round(3)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    const r = await runner.run([user('go')])
    expect(r.output).toBe('fin')
    expect((seen[1][seen[1].length - 1].content as Array<{ content: string }>).map((b) => b.content)).toEqual([
      'Tool "work" timed out after 30ms.', 'done 1', 'done 2',
    ])
    expect(log).toEqual(['start 0', 'start 1', 'start 2'])
  })
})

describe('the runner and the executor it is given', () => {
  test('passes each block its own context and the runner\'s per-execution options, as upstream', async () => {
    const log: string[] = []
    const registry = tools(log)
    const executor = new ToolExecutor(registry)
    const spy = jest.spyOn(executor, 'execute')
    const { adapter } = scripted([resp(round(2)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'], toolTimeoutMs: 5000 })
    await runner.run([user('go')])
    expect(spy.mock.calls.map((c) => [c[0], c[1], (c[2] as { toolCallId?: string }).toolCallId, c[3]])).toEqual([
      ['work', { n: 0 }, 'c0', { onToolCall: undefined, toolTimeoutMs: 5000 }],
      ['work', { n: 1 }, 'c1', { onToolCall: undefined, toolTimeoutMs: 5000 }],
    ])
  })

  test('reads an executor\'s execute once per block', async () => {
    const log: string[] = []
    const registry = tools(log)
    const inner = new ToolExecutor(registry)
    let reads = 0
    const executor = {
      get execute() {
        reads++
        return (...args: Parameters<ToolExecutor['execute']>) => inner.execute(...args)
      },
    } as unknown as ToolExecutor
    const { adapter } = scripted([resp(round(3)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, executor, { model: 'm', allowedTools: ['work'] })
    const r = await runner.run([user('go')])
    expect(r.toolCalls.map((c) => c.output)).toEqual(['done 0', 'done 1', 'done 2'])
    expect(reads).toBe(3)
  })

  test('an executor without a usable execute gives each block its error result', async () => {
    const registry = tools([])
    const { adapter, seen } = scripted([resp(round(2)), resp([{ type: 'text', text: 'fin' }])])
    const runner = new AgentRunner(adapter, registry, { execute: 42 } as unknown as ToolExecutor, { model: 'm', allowedTools: ['work'] })
    const r = await runner.run([user('go')])
    expect(r.output).toBe('fin')
    const results = seen[1][seen[1].length - 1].content as Array<{ content: string; is_error?: boolean }>
    expect(results).toHaveLength(2)
    for (const b of results) {
      expect(b.is_error).toBe(true)
      expect(b.content).toMatch(/execute is not a function/)
    }
  })
})
