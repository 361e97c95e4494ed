// Built-in tools: ToolDefinition objects whose inputSchema is a Zod schema, as in the original.
import {
  bashTool, fileReadTool, fileWriteTool, fileEditTool, grepTool, globTool, delegateToAgentTool,
  BUILT_IN_TOOLS, ALL_BUILT_IN_TOOLS_WITH_DELEGATE, registerBuiltInTools, ToolRegistry, ToolExecutor, Agent,
} from '@oma-kernel/core'
import type { ToolDefinition, ToolUseContext, RegisterBuiltInToolsOptions } from '@oma-kernel/core'

declare const ctx: ToolUseContext

export async function main(): Promise<void> {
  const input = fileReadTool.inputSchema.parse({ path: '/tmp/x', offset: 1 })
  const path: string = input.path
  const offset: number | undefined = input.offset
  // @ts-expect-error `path` is a string
  const wrong: number = input.path
  console.log(path, offset, wrong)
  const safe = grepTool.inputSchema.safeParse({ pattern: 'x' })
  if (safe.success) console.log(safe.data.pattern, safe.data.maxResults)

  await fileWriteTool.execute({ path: '/tmp/x', content: 'hi' }, ctx)
  await fileEditTool.execute({ path: '/tmp/x', old_string: 'hi', new_string: 'ho', replace_all: true }, ctx)
  await bashTool.execute({ command: 'ls', timeout: 1000 }, ctx)
  await globTool.execute({}, ctx)
  await delegateToAgentTool.execute({ target_agent: 'b', prompt: 'p' }, ctx)
  // @ts-expect-error `path` is required
  await fileReadTool.execute({ offset: 1 }, ctx)
  // @ts-expect-error `command` must be a string
  await bashTool.execute({ command: ['ls'] }, ctx)

  const all: ToolDefinition<any>[] = [...BUILT_IN_TOOLS, ...ALL_BUILT_IN_TOOLS_WITH_DELEGATE]
  const registry = new ToolRegistry()
  const options: RegisterBuiltInToolsOptions = { includeDelegateTool: true }
  registerBuiltInTools(registry, options)
  const agent = new Agent({ name: 'reader', model: 'm', toolPreset: 'readonly', cwd: '/srv/workspace' }, registry, new ToolExecutor(registry))
  console.log(all.length, agent.getTools())
  // @ts-expect-error not a preset
  new Agent({ name: 'r', model: 'm', toolPreset: 'admin' }, registry, new ToolExecutor(registry))
}
