// The original's basic example: one agent, a provider, one run.
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools } from '@oma-kernel/core'
import type { AgentConfig, AgentRunResult } from '@oma-kernel/core'

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  const executor = new ToolExecutor(registry)
  const config: AgentConfig = {
    name: 'coder',
    model: 'claude-sonnet-4-6',
    provider: 'anthropic',
    systemPrompt: 'You are a careful engineer.',
    tools: ['bash', 'file_read', 'file_write'],
    maxTurns: 8,
    temperature: 0.2,
    loopDetection: { maxRepetitions: 3, onLoopDetected: 'warn' },
    contextStrategy: { type: 'sliding-window', maxTurns: 6 },
  }
  const agent = new Agent(config, registry, executor)
  const result: AgentRunResult = await agent.run('Write a hello-world script and run it.')
  console.log(result.success, result.output, result.tokenUsage.input_tokens + result.tokenUsage.output_tokens)
  for (const call of result.toolCalls) console.log(call.toolName, call.duration)
  // oma-kernel's additive fields are optional booleans.
  const stopped: boolean | undefined = result.aborted ?? result.timedOut
  console.log(stopped, agent.getState().status, agent.getHistory().length)

  const followUp = await agent.prompt('Now explain it.')
  console.log(followUp.output)
  // @ts-expect-error not a provider
  new Agent({ name: 'x', model: 'm', provider: 'openrouter' }, registry, executor)
  // @ts-expect-error `model` is required
  new Agent({ name: 'x' }, registry, executor)
}
