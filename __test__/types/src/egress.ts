// The egress policy (upstream 1.16): the policy type, createAdapter's fifth parameter, the agent
// config field and the error class.
import { Agent, EgressPolicyError, ToolExecutor, ToolRegistry, createAdapter, isRetryableError } from '@oma-kernel/core'
import type { AgentConfig, EgressPolicy, EgressPolicyErrorReason, NativeAdapter } from '@oma-kernel/core'

export async function main(): Promise<void> {
  const offline: EgressPolicy = { mode: 'offline' }
  const allow: EgressPolicy = { mode: 'allowlist', allowedOrigins: ['http://127.0.0.1:11434'] as const }
  // @ts-expect-error an allowlist needs its origins
  const noOrigins: EgressPolicy = { mode: 'allowlist' }
  // @ts-expect-error an unknown mode
  const unknown: EgressPolicy = { mode: 'deny' }
  // @ts-expect-error offline takes no origins
  const offlineWithOrigins: EgressPolicy = { mode: 'offline', allowedOrigins: [] }
  console.log(noOrigins, unknown, offlineWithOrigins)

  const adapter: NativeAdapter = await createAdapter('openai', 'k', 'http://127.0.0.1:11434/v1', undefined, offline)
  console.log(adapter.name)
  // @ts-expect-error the fifth parameter is a policy
  await createAdapter('openai', 'k', undefined, undefined, 'offline')

  const registry = new ToolRegistry()
  const config: AgentConfig = { name: 'a', model: 'm', provider: 'openai', egressPolicy: allow }
  new Agent(config, registry, new ToolExecutor(registry))

  try {
    await createAdapter('openai', 'k', 'https://api.openai.com/v1', undefined, offline)
  } catch (e) {
    if (e instanceof EgressPolicyError) {
      const reason: EgressPolicyErrorReason = e.reason
      const code: string = e.code
      const provider: string | undefined = e.provider
      const origin: string | undefined = e.origin
      const retry: boolean = isRetryableError(e)
      console.log(reason, code, provider, origin, retry, e.message)
    }
  }
  const made = new EgressPolicyError('denied', 'msg', 'openai', 'https://api.openai.com')
  // @ts-expect-error not a reason
  new EgressPolicyError('refused', 'msg')
  console.log(made.name)
}
