// The onToolCall gate (upstream 1.11, `consequential` 1.13): its types on the executor, the
// runner, the agent config, results and traces.
import { z } from 'zod'
import { Agent, AgentRunner, ToolExecutor, ToolRegistry, defineTool, bashTool } from '@oma-kernel/core'
import type {
  AgentConfig, LLMAdapter, RunnerOptions, ToolCallContext, ToolCallDecision, ToolCallGate, ToolCallGateMetadata,
  ToolCallTrace, ToolExecutorExecutionOptions, ToolResult, ToolUseContext,
} from '@oma-kernel/core'

declare const ctx: ToolUseContext
declare const adapter: LLMAdapter

export async function main(): Promise<void> {
  const gate: ToolCallGate = (c: ToolCallContext) => {
    const name: string = c.toolName
    const agent: string = c.agentName
    const flag: boolean | undefined = c.consequential
    const ids: Array<string | undefined> = [c.runId, c.taskId, c.toolCallId]
    console.log(name, agent, flag, ids, c.input)
    return name === 'bash' ? { action: 'deny', reason: 'no shell' } : { action: 'allow' }
  }
  const asyncGate: ToolCallGate = async () => ({ action: 'suspend' })
  // @ts-expect-error an unknown action
  const badGate: ToolCallGate = () => ({ action: 'maybe' })
  // @ts-expect-error an allow has no reason
  const allowWithReason: ToolCallDecision = { action: 'allow', reason: 'x' }
  console.log(badGate, allowWithReason)

  const registry = new ToolRegistry()
  const tool = defineTool({ name: 't', description: 'd', inputSchema: z.object({}), consequential: true, execute: async () => ({ data: '' }) })
  registry.register(tool)
  const consequential: boolean | undefined = bashTool.consequential
  console.log(consequential)

  const executor = new ToolExecutor(registry, { onToolCall: gate, maxConcurrency: 2 })
  const per: ToolExecutorExecutionOptions = { onToolCall: asyncGate }
  const r: ToolResult = await executor.execute('t', {}, { ...ctx, toolCallId: 'tu_1' }, per)
  const meta: ToolCallGateMetadata | undefined = r.metadata?.toolCallGate
  console.log(meta?.action, meta?.reason)

  const ro: RunnerOptions = { model: 'm', onToolCall: gate }
  new AgentRunner(adapter, registry, executor, ro)
  const config: AgentConfig = { name: 'a', model: 'm', onToolCall: asyncGate }
  const agent = new Agent(config, registry, executor)
  // RunOptions.onToolCall stays 1.7's notification: (name, input) => void.
  await agent.run('hi', { onToolCall: (name: string) => { console.log(name) } })

  const onTrace = (t: ToolCallTrace): void => {
    const gated: boolean | undefined = t.gated
    const action: 'allow' | 'deny' | 'suspend' | undefined = t.gateAction
    const reason: string | undefined = t.gateReason
    console.log(gated, action, reason)
  }
  console.log(onTrace)
}
