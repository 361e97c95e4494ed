// The original's custom-tool example: a Zod tool registered and granted to an agent.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, defineTool } from '@oma-kernel/core'

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city.',
  inputSchema: z.object({
    city: z.string().describe('City name'),
    unit: z.enum(['celsius', 'fahrenheit']).optional(),
  }),
  execute: async ({ city, unit }, context) => {
    if (context.abortSignal?.aborted) return { data: 'aborted', isError: true }
    const temperature = unit === 'fahrenheit' ? 68 : 20
    return { data: JSON.stringify({ city, temperature, by: context.agent.name }) }
  },
})

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  registry.register(weather)
  const agent = new Agent(
    { name: 'assistant', model: 'gpt-5-mini', provider: 'openai', tools: ['get_weather'] },
    registry,
    new ToolExecutor(registry),
  )
  const result = await agent.run('Weather in Bern?')
  console.log(result.output, result.toolCalls.map((c) => c.input))
  agent.addTool(defineTool({ name: 'now', description: 'Time', inputSchema: z.object({}), execute: async () => ({ data: new Date().toISOString() }) }))
  console.log(agent.getTools(), registry.toToolDefs().map((d) => d.inputSchema))
}
