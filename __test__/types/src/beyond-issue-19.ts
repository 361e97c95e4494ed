// Issue 19's opt-ins at the type level: loopDetection.match, new ToolRegistry({ disallow }) and
// AgentConfig.outputSchemaRetries (the original's shapes stay accepted).
import { Agent, LoopDetector, ToolExecutor, ToolRegistry } from '@oma-kernel/core'
import type { AgentConfig, LLMAdapter, LoopDetectionConfig, RunnerOptions, ToolRegistryOptions } from '@oma-kernel/core'

declare const adapter: LLMAdapter

export function main(): void {
  const canonical: LoopDetectionConfig = { maxRepetitions: 2, match: 'canonical' }
  const exact: LoopDetectionConfig = { match: 'exact', onLoopDetected: 'terminate' }
  // @ts-expect-error only 'exact' or 'canonical'
  const fuzzy: LoopDetectionConfig = { match: 'fuzzy' }
  new LoopDetector(canonical).recordToolCalls([{ name: 'bash', input: { command: 'ls' } }])
  const ro: RunnerOptions = { model: 'm', loopDetection: exact }
  console.log(ro, fuzzy)

  const railOptions: ToolRegistryOptions = { disallow: ['bash'] }
  const names: readonly string[] = ['bash', 'file_write']
  const railed = new ToolRegistry({ disallow: names })
  const plain = new ToolRegistry()
  // @ts-expect-error disallow is a list of names
  new ToolRegistry({ disallow: 'bash' })
  // @ts-expect-error the names are strings
  new ToolRegistry({ disallow: [1] })
  const config: AgentConfig = { name: 'a', model: 'm', adapter, toolPreset: 'full', tools: ['bash'], loopDetection: canonical }
  new Agent(config, railed, new ToolExecutor(railed))
  const retries: AgentConfig = { name: 'r', model: 'm', adapter, outputSchemaRetries: 3 }
  // @ts-expect-error a number of retries
  const badRetries: AgentConfig = { name: 'r', model: 'm', adapter, outputSchemaRetries: '3' }
  const n: number | undefined = retries.outputSchemaRetries
  console.log(badRetries, n)
  console.log(railOptions, plain)
}
