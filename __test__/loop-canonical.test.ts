// loopDetection.match (issue 19, beyond the original): 'canonical' sees a loop through the
// formatting of the arguments; 'exact' (the default) is the original's comparison.
import { z } from 'zod'
import { Agent, AgentRunner, LoopDetector, ToolExecutor, ToolRegistry, defineTool } from '../index'
import type { AgentConfig, LoopDetectionConfig } from '../index'
import { MockAdapter, agentSetup, textReply, toolReply } from './helpers/mock-adapter'

/** An agent whose model calls `probe` once per input in turn, then answers 'done'. */
async function runCalls(inputs: Array<Record<string, unknown>>, loopDetection: LoopDetectionConfig) {
  const adapter = new MockAdapter([...inputs.map((input, i) => toolReply([{ id: `c${i}`, name: 'probe', input }])), textReply('done')])
  const executed: unknown[] = []
  const { agent, registry } = agentSetup('looper', { tools: ['probe'], loopDetection }, adapter)
  registry.register(defineTool({
    name: 'probe',
    description: 'records its input',
    inputSchema: z.object({}).passthrough(),
    execute: async (input) => { executed.push(input); return { data: 'ok' } },
  }))
  const result = await agent.run('go')
  return { result, executed, modelCalls: adapter.calls.length }
}

const TERMINATE_AT_2: LoopDetectionConfig = { maxRepetitions: 2, onLoopDetected: 'terminate' }

describe("loopDetection.match: 'canonical'", () => {
  const variants: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['surrounding and repeated whitespace', { command: 'ls  -la ' }, { command: 'ls -la' }],
    ['a leading ./ and a trailing /', { path: './src/' }, { path: 'src' }],
    ['a numeric string and its number', { n: '1' }, { n: 1 }],
    ['NFD and NFC', { name: 'Cafe\u0301' }, { name: 'Caf\u00e9' }],
    ['letter case', { query: 'Hello World' }, { query: 'hello world' }],
    ['nested values and key order', { opts: { b: ' 2 ', a: ['./x/'] } }, { opts: { a: ['x'], b: 2 } }],
  ]

  test.each(variants)('%s: a loop under canonical, none under exact', async (_what, a, b) => {
    const canonical = await runCalls([a, b], { ...TERMINATE_AT_2, match: 'canonical' })
    expect(canonical.result.success).toBe(true)
    expect(canonical.result.loopDetected).toBe(true)
    // The second call is the repeat: terminated before it ran, the model not asked again.
    expect(canonical.executed).toEqual([a])
    expect(canonical.modelCalls).toBe(2)

    for (const loopDetection of [TERMINATE_AT_2, { ...TERMINATE_AT_2, match: 'exact' as const }]) {
      const exact = await runCalls([a, b], loopDetection)
      expect(exact.result.loopDetected).toBeUndefined()
      expect(exact.result.output).toBe('done')
      expect(exact.executed).toEqual([a, b])
    }
  })

  test('near misses are never merged', async () => {
    const pairs: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [{ command: 'ls -la' }, { command: 'ls -l a' }],
      [{ command: 'rm a b' }, { command: 'rm ab' }],
      [{ path: 'src' }, { path: 'src2' }],
      [{ path: './src/a' }, { path: 'src/b' }],
      [{ path: '../src' }, { path: 'src' }],
      [{ path: './/' }, { path: '/' }],
      [{ n: '1' }, { n: '1.5' }],
      [{ n: '01' }, { n: 1 }],
      [{ n: '12345678901234567890' }, { n: '12345678901234567891' }],
      [{ flag: 'true' }, { flag: true }],
      [{ v: 'null' }, { v: null }],
      [{ name: 'Caf\u00e9' }, { name: 'Cafe' }],
      [{ Key: 1 }, { key: 1 }],
      [{ list: ['a', 'b'] }, { list: ['b', 'a'] }],
    ]
    for (const [a, b] of pairs) {
      const r = await runCalls([a, b], { ...TERMINATE_AT_2, match: 'canonical' })
      expect({ a, b, loopDetected: r.result.loopDetected }).toEqual({ a, b, loopDetected: undefined })
      expect(r.executed).toEqual([a, b])
    }
  })

  test('with the default policy the detail and the warnings are the original texts', async () => {
    const calls = [{ command: 'ls  -la ' }, { command: 'LS -la' }, { command: 'ls\t-la' }, { command: 'ls -la' }]
    const warnings: string[] = []
    const adapter = new MockAdapter([...calls.map((input, i) => toolReply([{ id: `c${i}`, name: 'probe', input }])), textReply('done')])
    const { agent, registry } = agentSetup('looper', { tools: ['probe'], loopDetection: { match: 'canonical' } }, adapter)
    registry.register(defineTool({ name: 'probe', description: 'p', inputSchema: z.object({}).passthrough(), execute: async () => ({ data: 'ok' }) }))
    const result = await agent.run('go', { onWarning: (w: string) => warnings.push(w) } as any)
    expect(result.loopDetected).toBe(true)
    expect(warnings[0]).toBe('Tool call "probe" with identical arguments has repeated 3 times consecutively. The agent appears to be stuck in a loop.')
  })

  test('the exported LoopDetector takes the option too', () => {
    const d = new LoopDetector({ maxRepetitions: 2, match: 'canonical' })
    expect(d.recordToolCalls([{ name: 'file_read', input: { path: './README.md' } }])).toBeNull()
    expect(d.recordToolCalls([{ name: 'file_read', input: { path: 'README.md' } }])).toEqual({
      kind: 'tool_repetition',
      repetitions: 2,
      detail: 'Tool call "file_read" with identical arguments has repeated 2 times consecutively. The agent appears to be stuck in a loop.',
    })
    const exact = new LoopDetector({ maxRepetitions: 2 })
    expect(exact.recordToolCalls([{ name: 'file_read', input: { path: './README.md' } }])).toBeNull()
    expect(exact.recordToolCalls([{ name: 'file_read', input: { path: 'README.md' } }])).toBeNull()
  })

  test('an invalid match is a configuration error where the configuration is checked', () => {
    const text = (got: string) => `Invalid configuration: loopDetection.match must be "exact" or "canonical", got ${got}`
    const registry = new ToolRegistry()
    const executor = new ToolExecutor(registry)
    const adapter = new MockAdapter([])
    for (const [match, got] of [['fuzzy', '"fuzzy"'], ['Canonical', '"Canonical"'], [null, 'null'], [1, '1'], [true, 'true']] as const) {
      const loopDetection = { match } as unknown as LoopDetectionConfig
      expect(() => new Agent({ name: 'a', model: 'm', adapter, loopDetection } as AgentConfig, registry, executor)).toThrow(text(got))
      expect(() => new AgentRunner(adapter, registry, executor, { model: 'm', loopDetection })).toThrow(text(got))
      expect(() => new LoopDetector(loopDetection)).toThrow(text(got))
    }
    expect(adapter.calls).toHaveLength(0)
  })
})
