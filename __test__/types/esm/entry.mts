// An ES module importing the package: node16 / nodenext resolve it through the `import`
// condition to index.d.mts, which must give the same types as the CommonJS entry.
import core, { Agent, ToolRegistry, ToolExecutor, defineTool, fileReadTool, registerBuiltInTools, createAdapter } from '@oma-kernel/core'
import * as ns from '@oma-kernel/core'
import type { ToolDefinition, StreamEvent, LLMAdapter } from '@oma-kernel/core'
import { z } from 'zod'
import { z as z4 } from 'zod/v4'

const registry = new ToolRegistry()
registerBuiltInTools(registry)
const lookup = defineTool({
  name: 'lookup',
  description: 'd',
  inputSchema: z.object({ id: z.number() }),
  execute: async ({ id }) => ({ data: String(id + 1) }),
})
const lookup4 = defineTool({
  name: 'lookup4',
  description: 'd',
  inputSchema: z4.object({ id: z4.string() }),
  // @ts-expect-error `id` is a string
  execute: async ({ id }) => ({ data: String(id + 1) as number }),
})
registry.register(lookup)
registry.register(lookup4)
export const typed: ToolDefinition<{ id: number }> = lookup
export const sameClass: typeof ns.Agent = core.Agent
export const read: string = fileReadTool.inputSchema.parse({ path: '/x' }).path

const adapter: LLMAdapter = await createAdapter('openai', 'k', 'http://127.0.0.1:1/v1')
const agent = new Agent({ name: 'a', model: 'm', adapter }, registry, new ToolExecutor(registry))
for await (const event of agent.stream('hi')) {
  const e: StreamEvent = event
  console.log(e.type)
}
