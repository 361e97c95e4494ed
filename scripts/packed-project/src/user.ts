// Typical user code, type-checked with `tsc --noEmit --strict` (CommonJS resolution: index.d.ts).
import { z } from 'zod'
import {
  Agent, ToolExecutor, ToolRegistry, createAdapter, defineTool, registerBuiltInTools,
  type AgentConfig, type AgentRunResult, type LLMAdapter, type StreamEvent,
} from '@oma-kernel/core'

const weather = defineTool({
  name: 'weather',
  description: 'Current temperature of a city',
  inputSchema: z.object({ city: z.string(), unit: z.enum(['C', 'F']).default('C') }),
  execute: async ({ city, unit }) => ({ data: `${city}: 21°${unit}` }),
})

export async function main(adapter: LLMAdapter): Promise<AgentRunResult> {
  const registry = new ToolRegistry()
  registry.register(weather)
  registerBuiltInTools(registry)
  const config: AgentConfig = {
    name: 'assistant',
    model: 'gpt-4o-mini',
    adapter,
    tools: ['weather', 'file_read'],
    cwd: process.cwd(),
    outputSchema: z.object({ summary: z.string() }),
  }
  const agent = new Agent(config, registry, new ToolExecutor(registry))
  for await (const ev of agent.stream('Weather in Paris?')) {
    const e: StreamEvent = ev
    if (e.type === 'text') console.log(e.data)
  }
  return agent.run('Weather in Paris?')
}

export const local: Promise<LLMAdapter> = createAdapter('openai', 'ollama', 'http://127.0.0.1:11434/v1')
