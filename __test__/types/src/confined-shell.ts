// ConfinedShellExecutor (issue 14): its options, its result's additive `confinement`, probe(),
// and that it is a ShellExecutor wherever one is configured.
import { Agent, ConfinedShellExecutor, ToolExecutor, ToolRegistry } from '@oma-kernel/core'
import type {
  AgentConfig, ConfinedShellExecResult, ConfinedShellExecutorOptions, ConfinedShellLimits, ConfinedShellProbe,
  LLMAdapter, ShellConfinement, ShellExecResult, ShellExecutor,
} from '@oma-kernel/core'

declare const adapter: LLMAdapter

export async function main(): Promise<void> {
  const limits: ConfinedShellLimits = { cpuSeconds: 10, addressSpaceBytes: 2 ** 30, fileSizeBytes: 1 << 20, openFiles: 256, processes: 64 }
  const options: ConfinedShellExecutorOptions = { network: 'deny', readPaths: ['/opt/tools'], writePaths: [], limits, required: false }
  const confined = new ConfinedShellExecutor(options)
  const defaults = new ConfinedShellExecutor()
  // @ts-expect-error network is 'deny' or 'allow'
  new ConfinedShellExecutor({ network: 'none' })
  // @ts-expect-error limits are numbers
  new ConfinedShellExecutor({ limits: { cpuSeconds: '10' } })
  // @ts-expect-error no such limit
  new ConfinedShellExecutor({ limits: { memory: 1 } })

  const asExecutor: ShellExecutor = confined
  await confined.start()
  const r: ConfinedShellExecResult = await confined.exec('ls', { timeoutMs: 1000, sandboxRoot: '/tmp/ws', cwd: 'sub' })
  const plain: ShellExecResult = r
  const how: ShellConfinement = r.confinement
  const enforced: boolean = how.enforced
  const missing: readonly string[] = how.missing
  const abi: number = how.landlockAbi
  await confined.dispose()
  console.log(asExecutor, defaults, plain, enforced, missing, abi)

  const probe: ConfinedShellProbe = ConfinedShellExecutor.probe()
  const ok: boolean = probe.landlockAbi >= probe.requiredLandlockAbi && probe.platform === 'linux'
  console.log(ok)

  const registry = new ToolRegistry()
  const config: AgentConfig = { name: 'a', model: 'm', adapter, tools: ['bash'], cwd: '/tmp/ws', shellExecutor: confined }
  console.log(new Agent(config, registry, new ToolExecutor(registry)))
}
