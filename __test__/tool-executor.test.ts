import { z } from 'zod'
import { z as z4 } from 'zod/v4'
import { ToolRegistry, ToolExecutor, defineTool, truncateToolOutput, Semaphore, ToolUseContext, LoopDetector, estimateTokens } from '../index'

const ctx: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' } }

function registryWith(...tools: any[]) {
  const r = new ToolRegistry()
  for (const t of tools) r.register(t)
  return r
}
const tool = (over: Record<string, unknown> = {}) =>
  defineTool({ name: 't', description: 'd', inputSchema: z.object({ n: z.number() }), execute: async ({ n }: any) => ({ data: `n=${n}` }), ...over } as any)

describe('defineTool and ToolRegistry', () => {
  test('defineTool omits undefined optional keys and keeps key order', () => {
    const t = defineTool({ name: 'x', description: 'd', inputSchema: z.object({}), execute: async () => ({ data: '' }) })
    expect(Object.keys(t)).toEqual(['name', 'description', 'inputSchema', 'execute'])
    expect('maxOutputChars' in t).toBe(false)
    const t2 = defineTool({ name: 'x', description: 'd', inputSchema: z.object({}), maxOutputChars: 5, execute: async () => ({ data: '' }) })
    expect(Object.keys(t2)).toEqual(['name', 'description', 'inputSchema', 'maxOutputChars', 'execute'])
  })

  test('register / get by identity / duplicate error / unregister / re-register', () => {
    const r = new ToolRegistry()
    const t = tool()
    r.register(t)
    expect(r.get('t')).toBe(t)
    expect(() => r.register(tool())).toThrow('ToolRegistry: a tool named "t" is already registered. Use a unique name or deregister the existing one first.')
    r.unregister('t')
    expect(r.has('t')).toBe(false)
    r.register(t, { runtimeAdded: true })
    expect(r.toRuntimeToolDefs().map((d) => d.name)).toEqual(['t'])
    r.deregister('missing')
  })

  test('bad tools are rejected at registration with clear errors', () => {
    const r = new ToolRegistry()
    expect(() => r.register({ description: 'd', inputSchema: z.object({}), execute: async () => ({ data: '' }) } as any)).toThrow('ToolRegistry: a tool must have a non-empty string "name"')
    expect(() => r.register({ name: 'x', description: 'd', inputSchema: z.object({}) } as any)).toThrow('ToolRegistry: tool "x" must have an "execute" function')
    expect(() => r.register({ name: 'x', description: 'd', execute: async () => ({ data: '' }) } as any)).toThrow('ToolRegistry: tool "x" must have an "inputSchema"')
    expect(() => r.register({ name: 'x', description: 'd', inputSchema: { type: 'nope' }, execute: async () => ({ data: '' }) } as any)).toThrow(/ToolRegistry: tool "x" has an invalid inputSchema/)
    expect(() => r.register(null as any)).toThrow(new TypeError('ToolRegistry: a tool must be an object with name, description, inputSchema and execute'))
    // Shape errors are TypeErrors; 1.7.0's duplicate is a plain Error (CONTRACT §8.2).
    expect(() => r.register({ name: 'x', description: 'd' } as any)).toThrow(TypeError)
    r.register(tool())
    let dup: unknown
    try { r.register(tool()) } catch (e) { dup = e }
    expect(dup).toBeInstanceOf(Error)
    expect(dup).not.toBeInstanceOf(TypeError)
    expect(r.list().map((t) => t.name)).toEqual(['t'])
  })

  test('toToolDefs / toLLMTools', () => {
    const llm = { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false }
    const r = registryWith(tool(), defineTool({ name: 'raw', description: 'r', inputSchema: z.object({}), llmInputSchema: llm, execute: async () => ({ data: '' }) }))
    const defs = r.toToolDefs()
    expect(defs[0]).toEqual({ name: 't', description: 'd', inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } })
    expect(defs[1].inputSchema).toBe(llm)
    // A Zod schema is converted once: later definitions (every run's, for the adapter) hand out
    // that same JSON Schema object; the definition objects themselves are new each time.
    const again = r.toToolDefs()
    expect(again[0]).not.toBe(defs[0])
    expect(again[0].inputSchema).toBe(defs[0].inputSchema)
    expect(r.toLLMTools()).toEqual([
      { name: 't', description: 'd', input_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } },
      { name: 'raw', description: 'r', input_schema: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false } },
    ])
  })
})

describe('ToolExecutor.execute', () => {
  test('missing tool, abort before execution, invalid input', async () => {
    const ex = new ToolExecutor(registryWith(tool()))
    expect(await ex.execute('nope', {}, ctx)).toEqual({ data: 'Tool "nope" is not registered in the ToolRegistry.', isError: true })
    const ctl = new AbortController()
    ctl.abort()
    expect(await ex.execute('t', { n: 1 }, { ...ctx, abortSignal: ctl.signal })).toEqual({ data: 'Tool "t" was aborted before execution began.', isError: true })
    expect(await ex.execute('t', { n: 'x' }, ctx)).toEqual({ data: 'Invalid input for tool "t":\n  • n: Expected number, received string', isError: true })
    const root = new ToolExecutor(registryWith(tool({ inputSchema: z.string() })))
    expect((await root.execute('t', { n: 1 } as any, ctx)).data).toBe('Invalid input for tool "t":\n  • : Expected string, received object')
  })

  test('Zod 4 schemas validate with Zod 4 messages and transforms', async () => {
    const ex = new ToolExecutor(registryWith(tool({ inputSchema: z4.object({ n: z4.number().transform((v) => v * 2) }) })))
    expect(await ex.execute('t', { n: 2 }, ctx)).toEqual({ data: 'n=4' })
    const bad = await ex.execute('t', { n: 'q' }, ctx)
    expect(bad.isError).toBe(true)
    expect(bad.data).toMatch(/^Invalid input for tool "t":\n  • n: /)
  })

  test('plain JSON Schema input is validated natively', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] }
    const ex = new ToolExecutor(registryWith(tool({ inputSchema: schema })))
    expect(await ex.execute('t', { n: 3 }, ctx)).toEqual({ data: 'n=3' })
    const bad = await ex.execute('t', { n: 0 }, ctx)
    expect(bad.isError).toBe(true)
    expect(bad.data).toMatch(/^Invalid input for tool "t":\n  • n: 0 is less than the minimum of 1/)
    const missing = await ex.execute('t', {}, ctx)
    expect(missing.data).toMatch(/^Invalid input for tool "t":\n  • : "n" is a required property/)
    expect(new ToolRegistry().toToolDefs()).toEqual([])
    expect(registryWith(tool({ inputSchema: schema })).toToolDefs()[0].inputSchema).toBe(schema)
  })

  test('misbehaving tools become isError results', async () => {
    const cases: Array<[any, string]> = [
      [async () => { throw new Error('kaput') }, 'Tool "t" threw an error: kaput'],
      [async () => { throw 'plain string' }, 'Tool "t" threw an error: plain string'],
      [async () => { throw { code: 42 } }, 'Tool "t" threw an error: {"code":42}'],
      [async () => { throw undefined }, 'Tool "t" threw an error: undefined'],
      [() => { throw new Error('sync') }, 'Tool "t" threw an error: sync'],
      [async () => undefined, 'Tool "t" threw an error: Cannot read properties of undefined (reading \'isError\')'],
      [async () => null, 'Tool "t" threw an error: Cannot read properties of null (reading \'isError\')'],
      [async () => 42, 'Tool "t" returned an invalid result: expected an object with a string "data", got number'],
      [async () => ({ data: 7 }), 'Tool "t" returned an invalid result: "data" must be a string, got number'],
      [async () => ({ data: null }), 'Tool "t" returned an invalid result: "data" must be a string, got null'],
    ]
    for (const [execute, expected] of cases) {
      const ex = new ToolExecutor(registryWith(tool({ execute })))
      expect(await ex.execute('t', { n: 1 }, ctx)).toEqual({ data: expected, isError: true })
    }
    const circular: any = {}
    circular.self = circular
    const ex = new ToolExecutor(registryWith(tool({ execute: async () => { throw circular } })))
    expect((await ex.execute('t', { n: 1 }, ctx)).data).toBe('Tool "t" threw an error: [object Object]')
  })

  test('output schema, truncation and metadata', async () => {
    const ex = new ToolExecutor(registryWith(tool({ outputSchema: z.string().max(3), execute: async () => ({ data: 'toolong' }) })))
    expect(await ex.execute('t', { n: 1 }, ctx)).toEqual({ data: 'Invalid output for tool "t":\n  • : String must contain at most 3 character(s)', isError: true })
    const meta = { tokenUsage: { input_tokens: 1, output_tokens: 2 } }
    const big = new ToolExecutor(registryWith(tool({ execute: async () => ({ data: 'X'.repeat(200), metadata: meta }) })), { maxToolOutputChars: 50 })
    const r = await big.execute('t', { n: 1 }, ctx)
    expect(r.data).toBe('X'.repeat(9) + '\n\n[...truncated 186 characters...]\n\n' + 'X'.repeat(5))
    expect(r.metadata).toBe(meta)
    const perTool = new ToolExecutor(registryWith(tool({ maxOutputChars: 10, execute: async () => ({ data: 'Y'.repeat(40) }) })), { maxToolOutputChars: 1000 })
    expect((await perTool.execute('t', { n: 1 }, ctx)).data).toBe('Y'.repeat(10))
    // A limit given as a numeric string is read as its number (README, differences).
    const asText = new ToolExecutor(registryWith(tool({ maxOutputChars: '10' as any, execute: async () => ({ data: 'Y'.repeat(40) }) })))
    expect((await asText.execute('t', { n: 1 }, ctx)).data).toBe('Y'.repeat(10))
    const same = { data: 'short' }
    const untouched = new ToolExecutor(registryWith(tool({ execute: async () => same })), { maxToolOutputChars: 100 })
    expect(await untouched.execute('t', { n: 1 }, ctx)).toBe(same)
  })

  test('executeBatch honours maxConcurrency and maps by id', async () => {
    let active = 0
    let peak = 0
    const ex = new ToolExecutor(registryWith(tool({
      execute: async ({ n }: any) => { active++; peak = Math.max(peak, active); await new Promise((r) => setTimeout(r, 3)); active--; return { data: String(n) } },
    })), { maxConcurrency: 3 })
    const calls = Array.from({ length: 9 }, (_, i) => ({ id: `c${i}`, name: 't', input: { n: i } }))
    const out = await ex.executeBatch(calls, ctx)
    expect(out.size).toBe(9)
    expect(out.get('c4')).toEqual({ data: '4' })
    expect(peak).toBe(3)
    expect(() => new ToolExecutor(new ToolRegistry(), { maxConcurrency: 0 })).toThrow(RangeError)
  })
})

describe('truncateToolOutput', () => {
  test('contract example and edge cases', () => {
    expect(truncateToolOutput('X'.repeat(200), 50)).toHaveLength(50)
    expect(truncateToolOutput('abc', 3)).toBe('abc')
    expect(truncateToolOutput('a'.repeat(100), 10)).toBe('a'.repeat(10))
    const s = 'é'.repeat(1000)
    const t = truncateToolOutput(s, 100)
    expect(t.length).toBeLessThanOrEqual(100)
    expect(t).toContain('[...truncated ')
  })
})

describe('Semaphore', () => {
  test('FIFO hand-off, counters, run releases on throw', async () => {
    const s = new Semaphore(1)
    const order: number[] = []
    await s.acquire()
    const a = s.acquire().then(() => order.push(1))
    const b = s.acquire().then(() => order.push(2))
    expect([s.limit, s.active, s.pending]).toEqual([1, 1, 2])
    s.release()
    await a
    s.release()
    await b
    s.release()
    expect(order).toEqual([1, 2])
    expect(s.active).toBe(0)
    s.release()
    expect(s.active).toBe(0)
    await expect(s.run(async () => { throw new Error('x') })).rejects.toThrow('x')
    expect(s.active).toBe(0)
    expect(await s.run(async () => 5)).toBe(5)
  })

  test('idle and busy again: counters and FIFO order hold over repeated busy periods', async () => {
    const s = new Semaphore(2)
    for (let round = 0; round < 3; round++) {
      expect([s.limit, s.active, s.pending]).toEqual([2, 0, 0])
      const order: string[] = []
      await s.acquire()
      await s.acquire()
      const waiters = ['a', 'b', 'c'].map((k) => s.acquire().then(() => { order.push(k) }))
      expect([s.active, s.pending]).toEqual([2, 3])
      for (let i = 0; i < 3; i++) {
        s.release()
        await waiters[i]
      }
      expect([s.active, s.pending]).toEqual([2, 0])
      s.release()
      s.release()
      expect(order).toEqual(['a', 'b', 'c'])
      // Extra releases while idle stay no-ops.
      s.release()
    }
    expect([s.limit, s.active, s.pending]).toEqual([2, 0, 0])
  })

  test('invalid limits throw RangeError (§21)', () => {
    expect(() => new Semaphore(0)).toThrow(new RangeError('Semaphore max must be at least 1, got 0'))
    expect(() => new Semaphore(NaN)).toThrow('Semaphore max must be at least 1, got NaN')
    expect(() => new Semaphore(1.5)).toThrow('Semaphore max must be an integer, got 1.5')
    expect(() => new Semaphore(0)).toThrow(RangeError)
  })
})

describe('LoopDetector and estimateTokens', () => {
  test('LoopDetector public class', () => {
    const d = new LoopDetector()
    const b = [{ name: 's', input: { a: 1, b: 2 } }]
    expect(d.recordToolCalls(b)).toBeNull()
    expect(d.recordToolCalls([{ name: 's', input: { b: 2, a: 1 } }])).toBeNull()
    expect(d.recordToolCalls(b)).toStrictEqual({
      kind: 'tool_repetition', repetitions: 3,
      detail: 'Tool call "s" with identical arguments has repeated 3 times consecutively. The agent appears to be stuck in a loop.',
    })
    expect(d.recordToolCalls([])).toBeNull()
    expect(d.recordText('   ')).toBeNull()
  })

  test('estimateTokens counts UTF-16 chars / 4', () => {
    expect(estimateTokens([])).toBe(0)
    expect(estimateTokens([
      { role: 'user', content: [{ type: 'text', text: 'abcd😀' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: '1', name: 'x', input: { k: 'v' } }] },
    ])).toBe(Math.ceil((6 + 64 + 9) / 4))
  })
})
