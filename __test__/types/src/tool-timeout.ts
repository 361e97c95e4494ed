// Per-tool timeouts (oma-kernel, issue 15 point 3): ToolDefinition.timeoutMs (through defineTool
// and on a tool object), and the toolTimeoutMs default on the executor, per execution, on the
// runner and on the agent config.
import { z } from 'zod'
import { Agent, AgentRunner, ToolExecutor, ToolRegistry, defineTool, bashTool } from '@oma-kernel/core'
import type {
  AgentConfig, DefineToolConfig, LLMAdapter, RunnerOptions, ToolDefinition, ToolExecutorExecutionOptions,
  ToolExecutorOptions, ToolUseContext,
} from '@oma-kernel/core'

declare const ctx: ToolUseContext
declare const adapter: LLMAdapter

export async function main(): Promise<void> {
  const tool = defineTool({
    name: 'slow', description: 'd', inputSchema: z.object({ n: z.number() }), timeoutMs: 5000,
    execute: async ({ n }, context) => {
      // The signal a timeout aborts (its reason a TimeoutError DOMException).
      const reason: unknown = context.abortSignal?.reason
      return { data: `${n} ${String(reason)}` }
    },
  })
  const ms: number | undefined = tool.timeoutMs
  const builtin: number | undefined = bashTool.timeoutMs
  console.log(ms, builtin)
  // @ts-expect-error a number of milliseconds, not a string
  defineTool({ name: 'x', description: 'd', inputSchema: z.object({}), timeoutMs: '5s', execute: async () => ({ data: '' }) })
  const cfg: DefineToolConfig<{ a: string }, z.ZodType<{ a: string }>>['timeoutMs'] = 10
  console.log(cfg)
  const plain: ToolDefinition<{ a: string }> = {
    name: 'p', description: 'd', inputSchema: z.object({ a: z.string() }), timeoutMs: 100, execute: async () => ({ data: '' }),
  }

  const registry = new ToolRegistry()
  registry.register(tool)
  registry.register(plain)
  const options: ToolExecutorOptions = { toolTimeoutMs: 30_000, maxConcurrency: 2 }
  const executor = new ToolExecutor(registry, options)
  const per: ToolExecutorExecutionOptions = { toolTimeoutMs: 1000 }
  await executor.execute('slow', { n: 1 }, ctx, per)
  // @ts-expect-error per-execution options are readonly
  per.toolTimeoutMs = 5

  const ro: RunnerOptions = { model: 'm', toolTimeoutMs: 2000, callTimeoutMs: 60_000 }
  new AgentRunner(adapter, registry, executor, ro)
  const config: AgentConfig = { name: 'a', model: 'm', toolTimeoutMs: 2000 }
  // @ts-expect-error a number of milliseconds
  const bad: AgentConfig = { name: 'a', model: 'm', toolTimeoutMs: '2s' }
  console.log(bad)
  new Agent(config, registry, executor)
}
