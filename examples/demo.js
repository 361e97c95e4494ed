'use strict'
// A complete agent run on the native kernel: a scripted "model" (no API key needed) asks for
// two tools in parallel, reads their results and answers. Run with `npm run demo`.
const { z } = require('zod')
const { Agent, ToolRegistry, ToolExecutor, defineTool } = require('..')

const registry = new ToolRegistry()
registry.register(defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ data: JSON.stringify({ city, tempC: city === 'Oslo' ? -3 : 18 }) }),
}))
registry.register(defineTool({
  name: 'convert',
  description: 'Celsius to Fahrenheit',
  inputSchema: z.object({ c: z.number() }),
  execute: async ({ c }) => ({ data: String(c * 9 / 5 + 32) }),
}))

// The adapter is the model: any object with `chat(messages, options)` works.
let turn = 0
const scriptedModel = {
  name: 'scripted',
  async chat(messages, options) {
    turn++
    const usage = { input_tokens: 50 * turn, output_tokens: 20 }
    if (turn === 1) {
      return {
        id: 't1', model: options.model, stop_reason: 'tool_use', usage,
        content: [
          { type: 'text', text: 'Let me check both cities.' },
          { type: 'tool_use', id: 'w1', name: 'get_weather', input: { city: 'Oslo' } },
          { type: 'tool_use', id: 'w2', name: 'get_weather', input: { city: 'Lisbon' } },
        ],
      }
    }
    if (turn === 2) {
      return {
        id: 't2', model: options.model, stop_reason: 'tool_use', usage,
        content: [{ type: 'tool_use', id: 'c1', name: 'convert', input: { c: -3 } }],
      }
    }
    const results = messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_result').map((b) => b.content)
    return {
      id: 't3', model: options.model, stop_reason: 'end_turn', usage,
      content: [{ type: 'text', text: `Oslo is colder (${results[2]}°F); tool results: ${results.join(' | ')}` }],
    }
  },
}

async function main() {
  const agent = new Agent(
    { name: 'demo', model: 'scripted-1', adapter: scriptedModel, tools: ['get_weather', 'convert'], loopDetection: {} },
    registry,
    new ToolExecutor(registry),
  )
  for await (const event of agent.stream('Which is colder, Oslo or Lisbon?')) {
    if (event.type === 'text') console.log('text      ', event.data)
    if (event.type === 'tool_use') console.log('tool_use  ', event.data.name, JSON.stringify(event.data.input))
    if (event.type === 'tool_result') console.log('tool_result', event.data.content)
    if (event.type === 'done') {
      const r = event.data
      console.log('done       success=%s turns=%d tokens=%j', r.success, r.messages.filter((m) => m.role === 'assistant').length, r.tokenUsage)
    }
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
