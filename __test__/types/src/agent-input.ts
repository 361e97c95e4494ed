// Richer inputs (upstream 1.15): the input types of Agent.run / stream / prompt, AgentConfig.history,
// beforeRun's context and result, and InvalidMessageError.
import { Agent, InvalidMessageError, ToolExecutor, ToolRegistry } from '@oma-kernel/core'
import type {
  AgentConfig, AgentPromptInput, AgentRunInput, BeforeRunHookContext, BeforeRunHookResult, ContentBlock, LLMMessage, StreamEvent,
} from '@oma-kernel/core'

const image: ContentBlock = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }
const history: readonly LLMMessage[] = [
  { role: 'user', content: [{ type: 'text', text: 'hi' }, image] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'echo', input: { text: 'x' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'x' }] },
]

export async function main(): Promise<void> {
  const asString: AgentRunInput = 'hello'
  const asList: AgentRunInput = history
  const asPrompt: AgentPromptInput = 'hello'
  const asBlocks: AgentPromptInput = [{ type: 'text', text: 'look' }, image] as const
  // @ts-expect-error a run input is a string or a message list, not blocks
  const blocksAsRun: AgentRunInput = [image]
  // @ts-expect-error a prompt input is a string or blocks, not messages
  const messagesAsPrompt: AgentPromptInput = history
  // @ts-expect-error not a number
  const numberInput: AgentRunInput = 42
  console.log(blocksAsRun, messagesAsPrompt, numberInput)

  const beforeRun = (ctx: BeforeRunHookContext): BeforeRunHookResult => {
    const prompt: string = ctx.prompt
    const messages: readonly LLMMessage[] | undefined = ctx.messages
    const config: AgentConfig = ctx.agent
    console.log(config.name)
    return { ...ctx, prompt: prompt.trim(), messages: [...(messages ?? []), { role: 'user', content: [{ type: 'text', text: 'more' }] }] }
  }
  // A 1.7 hook (returns its context) still fits, and so does an async one.
  const legacy = (ctx: BeforeRunHookContext): BeforeRunHookContext => ctx
  const asyncHook = async (ctx: BeforeRunHookContext): Promise<BeforeRunHookResult> => ({ prompt: ctx.prompt, agent: ctx.agent })
  // @ts-expect-error the result's prompt is a string
  const badResult: BeforeRunHookResult = { prompt: 1, agent: { name: 'a', model: 'm' } }
  console.log(badResult)

  const registry = new ToolRegistry()
  const config: AgentConfig = { name: 'a', model: 'm', history, beforeRun }
  const agent = new Agent(config, registry, new ToolExecutor(registry))
  new Agent({ name: 'b', model: 'm', beforeRun: legacy }, registry, new ToolExecutor(registry))
  new Agent({ name: 'c', model: 'm', beforeRun: asyncHook }, registry, new ToolExecutor(registry))

  await agent.run(asString)
  await agent.run(asList, { runId: 'r' })
  await agent.prompt(asPrompt)
  await agent.prompt(asBlocks)
  const events: AsyncGenerator<StreamEvent> = agent.stream(history)
  for await (const e of events) console.log(e.type)
  // @ts-expect-error prompt() takes no message list
  await agent.prompt(history)

  try {
    await agent.run(history)
  } catch (e) {
    if (e instanceof InvalidMessageError) {
      const code: 'INVALID_MESSAGE' = e.code
      const message: string = e.message
      console.log(code, message)
    }
  }
  const made = new InvalidMessageError('messages must be an array, got null')
  const asError: Error = made
  console.log(asError)
}
