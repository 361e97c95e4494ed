// Runs under Jest (ts-jest, CommonJS: require → index.js) and under Vitest (globals, ESM:
// import → index.mjs). Errors and results must be instances of the test realm's classes.
import { z } from 'zod'
import { Agent, ToolExecutor, ToolRegistry, TokenBudgetExceededError, defineTool } from '@oma-kernel/core'
import { resp, scripted } from './mock'

function setup(adapter: ReturnType<typeof scripted>, extra: Record<string, unknown> = {}) {
  const registry = new ToolRegistry()
  registry.register(defineTool({
    name: 'add',
    description: 'Add two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number().default(1) }),
    execute: async ({ a, b }) => ({ data: String(a + b) }),
  }))
  return new Agent({ name: 'calc', model: 'm', adapter, tools: ['add'], ...extra }, registry, new ToolExecutor(registry))
}

test('a tool round, then the answer', async () => {
  const adapter = scripted([
    resp([{ type: 'tool_use', id: 't1', name: 'add', input: { a: 2 } }], 'tool_use'),
    resp([{ type: 'text', text: 'It is 3.' }]),
  ])
  const r = await setup(adapter).run('What is 2 + 1?')
  expect(r.success).toBe(true)
  expect(r.output).toBe('It is 3.')
  expect(r.toolCalls.map((c) => [c.toolName, c.output])).toEqual([['add', '3']])
  expect(r.messages).toBeInstanceOf(Array)
  expect(r.tokenUsage).toEqual({ input_tokens: 6, output_tokens: 4 })
})

test('structured output parsed with the Zod schema', async () => {
  const adapter = scripted([resp([{ type: 'text', text: '```json\n{"answer": 42}\n```' }])])
  const r = await setup(adapter, { outputSchema: z.object({ answer: z.number() }) }).run('answer')
  expect(r.success).toBe(true)
  expect(r.structured).toEqual({ answer: 42 })
})

test('a token budget stops the run; the error class is the realm\'s own', async () => {
  const adapter = scripted([resp([{ type: 'tool_use', id: 't1', name: 'add', input: { a: 1 } }], 'tool_use')])
  const r = await setup(adapter, { maxTokenBudget: 4 }).run('loop')
  expect(r.budgetExceeded).toBe(true)
  const e = new TokenBudgetExceededError('calc', 5, 4)
  expect(e).toBeInstanceOf(TokenBudgetExceededError)
  expect(e).toBeInstanceOf(Error)
  expect(() => { throw e }).toThrow(TokenBudgetExceededError)
})

test('a duplicate tool name throws an Error of this realm', () => {
  const registry = new ToolRegistry()
  const tool = defineTool({ name: 'x', description: 'x', inputSchema: z.object({}), execute: async () => ({ data: '' }) })
  registry.register(tool)
  expect(() => registry.register(tool)).toThrow(Error)
  expect(() => registry.register(tool)).toThrow('already registered')
})
