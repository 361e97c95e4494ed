// Optional end-to-end runs against real providers: each runs only when its key is set (and
// OMA_E2E=1, so a developer's exported keys do not make `npm test` spend money by surprise).
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, defineTool, SupportedProvider } from '../index'

const enabled = process.env.OMA_E2E === '1'
const cases: Array<{ provider: SupportedProvider; key: string; model: string }> = [
  { provider: 'anthropic', key: 'ANTHROPIC_API_KEY', model: process.env.OMA_E2E_ANTHROPIC_MODEL ?? 'claude-3-5-haiku-latest' },
  { provider: 'openai', key: 'OPENAI_API_KEY', model: process.env.OMA_E2E_OPENAI_MODEL ?? 'gpt-4o-mini' },
  { provider: 'gemini', key: 'GEMINI_API_KEY', model: process.env.OMA_E2E_GEMINI_MODEL ?? 'gemini-2.0-flash' },
]

for (const c of cases) {
  const run = enabled && process.env[c.key] ? test : test.skip
  run(`${c.provider}: a real tool-calling run`, async () => {
    const registry = new ToolRegistry()
    const calls: number[] = []
    registry.register(defineTool({
      name: 'add', description: 'Add two integers and return the sum.',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }: { a: number; b: number }) => { calls.push(a + b); return { data: String(a + b) } },
    }))
    const agent = new Agent({
      name: 'e2e', model: c.model, provider: c.provider, tools: ['add'], maxTurns: 4,
      systemPrompt: 'Use the add tool for arithmetic, then answer with the number only.',
    }, registry, new ToolExecutor(registry))
    const r = await agent.run('What is 1234 + 4321?')
    expect(r.success).toBe(true)
    expect(calls).toContain(5555)
    expect(r.output).toContain('5555')
  }, 120_000)
}
