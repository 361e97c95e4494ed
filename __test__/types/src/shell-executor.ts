// The ShellExecutor seam (upstream 1.16): the interface and its option/result types, the
// LocalShellExecutor value, and where an executor is configured (agent, runner, tool context).
import { Agent, AgentRunner, LocalShellExecutor, ToolExecutor, ToolRegistry, bashTool } from '@oma-kernel/core'
import type {
  AgentConfig, LLMAdapter, RunnerOptions, ShellExecOptions, ShellExecResult, ShellExecutor, ToolUseContext,
} from '@oma-kernel/core'

declare const ctx: ToolUseContext
declare const adapter: LLMAdapter

export async function main(): Promise<void> {
  // A user's executor: start and dispose are optional.
  const remote: ShellExecutor = {
    async start() {},
    async exec(command: string, options: ShellExecOptions): Promise<ShellExecResult> {
      const cwd: string | undefined = options.cwd
      const timeoutMs: number = options.timeoutMs
      const signal: AbortSignal | undefined = options.abortSignal
      // oma-kernel's additive field: the tool context's sandbox root, null when disabled.
      const root: string | null | undefined = options.sandboxRoot
      return { stdout: `${command} ${cwd} ${timeoutMs} ${signal?.aborted} ${root}`, stderr: '', exitCode: 0 }
    },
    async dispose() {},
  }
  const execOnly: ShellExecutor = { exec: async () => ({ stdout: '', stderr: '', exitCode: 124 }) }
  // @ts-expect-error exec is required
  const noExec: ShellExecutor = { start: async () => {} }
  // @ts-expect-error exitCode is a number
  const badResult: ShellExecResult = { stdout: '', stderr: '', exitCode: '0' }
  // @ts-expect-error timeoutMs is required
  const noTimeout: ShellExecOptions = { cwd: '/' }
  console.log(execOnly, noExec, badResult, noTimeout)

  const local = new LocalShellExecutor()
  const asExecutor: ShellExecutor = local
  const r: ShellExecResult = await local.exec('ls', { timeoutMs: 1000, cwd: '/tmp' })
  console.log(asExecutor, r.stdout, r.stderr, r.exitCode)

  const registry = new ToolRegistry()
  const config: AgentConfig = { name: 'a', model: 'm', adapter, tools: ['bash'], shellExecutor: remote }
  const agent = new Agent(config, registry, new ToolExecutor(registry))
  const handed: ShellExecutor | undefined = agent.buildToolContext().shellExecutor
  console.log(handed)
  // @ts-expect-error an executor needs exec
  const badConfig: AgentConfig = { name: 'a', model: 'm', shellExecutor: {} }
  console.log(badConfig)

  const options: RunnerOptions = { model: 'm', shellExecutor: local }
  new AgentRunner(adapter, registry, new ToolExecutor(registry), options)

  await bashTool.execute({ command: 'ls' }, { ...ctx, shellExecutor: remote })
}
