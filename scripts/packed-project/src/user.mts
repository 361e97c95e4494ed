// The same from an ES module (import resolution: index.d.mts).
import { z } from 'zod'
import { Agent, ToolExecutor, ToolRegistry, defineTool, type AgentRunResult, type LLMAdapter } from '@oma-kernel/core'
import core from '@oma-kernel/core'

export async function run(adapter: LLMAdapter): Promise<AgentRunResult> {
  const registry = new ToolRegistry()
  registry.register(defineTool({
    name: 'add',
    description: 'Add',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: async ({ a, b }) => ({ data: String(a + b) }),
  }))
  const agent = new Agent({ name: 'calc', model: 'm', adapter, tools: ['add'] }, registry, new ToolExecutor(registry))
  return agent.run('2 + 3?')
}

export const sameAgent: typeof Agent = core.Agent
