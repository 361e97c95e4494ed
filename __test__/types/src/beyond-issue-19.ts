// Issue 19's opt-ins at the type level: loopDetection.match (the original's shapes stay accepted).
import { Agent, LoopDetector, ToolExecutor, ToolRegistry } from '@oma-kernel/core'
import type { AgentConfig, LLMAdapter, LoopDetectionConfig, RunnerOptions } from '@oma-kernel/core'

declare const adapter: LLMAdapter

export function main(): void {
  const canonical: LoopDetectionConfig = { maxRepetitions: 2, match: 'canonical' }
  const exact: LoopDetectionConfig = { match: 'exact', onLoopDetected: 'terminate' }
  // @ts-expect-error only 'exact' or 'canonical'
  const fuzzy: LoopDetectionConfig = { match: 'fuzzy' }
  new LoopDetector(canonical).recordToolCalls([{ name: 'bash', input: { command: 'ls' } }])
  const ro: RunnerOptions = { model: 'm', loopDetection: exact }
  console.log(ro, fuzzy)

  const registry = new ToolRegistry()
  const config: AgentConfig = { name: 'a', model: 'm', adapter, toolPreset: 'full', tools: ['bash'], loopDetection: canonical }
  new Agent(config, registry, new ToolExecutor(registry))
}
