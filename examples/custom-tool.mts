// Custom tool: `defineTool` with a Zod input schema. The model sees the JSON Schema made from
// it; every call is validated with your schema's own `safeParse` before `execute` runs, and a
// call that does not validate goes back to the model as an error result carrying Zod's message.
//
// Runs on the embedded scripted model by default (which gets one call wrong on purpose, to
// show the validation); OPENAI_API_KEY, ANTHROPIC_API_KEY or OMA_BASE_URL switch to a real model.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, defineTool } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import { toolOutcomes, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

const RATES: Record<string, number> = { USD: 1.08, JPY: 162.5, GBP: 0.85, CHF: 0.95 }

const exchangeRate = defineTool({
  name: 'get_exchange_rate',
  description: 'Exchange rate from EUR to another currency (ISO 4217 code, e.g. "USD").',
  inputSchema: z.object({
    to: z.string().regex(/^[A-Z]{3}$/, 'Use an upper-case ISO 4217 code such as "USD"').describe('Three-letter currency code'),
  }),
  execute: async ({ to }) => {
    const rate = RATES[to]
    return rate === undefined ? { data: `No rate for ${to}.`, isError: true } : { data: JSON.stringify({ from: 'EUR', to, rate }) }
  },
})

function scriptedModel(request: ChatRequest): ScriptedReply {
  const done = toolOutcomes(request)
  if (done.length === 0) {
    // Two calls in one turn; the second does not validate ("yen" is not an upper-case ISO code).
    return { text: 'Looking up both rates.', toolCalls: [{ name: 'get_exchange_rate', args: { to: 'USD' } }, { name: 'get_exchange_rate', args: { to: 'yen' } }] }
  }
  const rates = done.flatMap((o) => {
    try {
      return [JSON.parse(o.result) as { to: string; rate: number }]
    } catch {
      return [] // an error result: the model reads it and tries again below
    }
  })
  if (!rates.some((r) => r.to === 'JPY')) return { toolCalls: [{ name: 'get_exchange_rate', args: { to: 'JPY' } }] }
  const amount = (to: string) => (250 * rates.find((r) => r.to === to)!.rate).toFixed(2)
  return { text: `250 EUR is ${amount('USD')} USD or ${amount('JPY')} JPY.` }
}

const model = await chooseModel(scriptedModel)
console.log(`model: ${model.label}\n`)

const registry = new ToolRegistry()
registry.register(exchangeRate)
const agent = new Agent(
  { name: 'fx', ...model.config, tools: ['get_exchange_rate'], systemPrompt: 'Use the tools for rates; never guess them.', maxTurns: 6 },
  registry,
  new ToolExecutor(registry),
)

const result = await agent.run('How much is 250 EUR in US dollars and in Japanese yen?', {
  onToolCall: (name, input) => console.log(`call    ${name} ${JSON.stringify(input)}`),
  onToolResult: (name, r) => console.log(`result  ${name} ${r.isError ? 'ERROR ' : ''}${r.data.replace(/\n/g, ' ')}`),
})
console.log(`\nanswer: ${result.output}`)
console.log(`success: ${result.success}; tool calls: ${result.toolCalls.length}; tokens: ${result.tokenUsage.input_tokens} + ${result.tokenUsage.output_tokens}`)
await model.close()
if (!result.success) process.exitCode = 1
