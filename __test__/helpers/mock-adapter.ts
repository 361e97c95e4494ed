// Shared test helpers: a scripted mock LLM adapter and small builders for responses/tools.
import { z } from 'zod'
import { Agent, ToolExecutor, ToolRegistry, defineTool } from '../../index'
import type {
  AgentConfig,
  AgentRunResult,
  ContentBlock,
  LLMAdapter,
  LLMChatOptions,
  LLMMessage,
  LLMResponse,
  StreamEvent,
  TokenUsage,
  ToolDefinition,
} from '../../index'

export type Reply =
  | LLMResponse
  | Error
  | ((messages: LLMMessage[], options: LLMChatOptions, call: number) => LLMResponse | Promise<LLMResponse>)

export interface RecordedCall {
  /** Shallow copy of the array the runner passed (the runner keeps mutating its own). */
  messages: LLMMessage[]
  options: LLMChatOptions
}

/** An adapter that answers from a script; once the script is exhausted `fallback` is used. */
export class MockAdapter implements LLMAdapter {
  readonly name = 'mock'
  readonly calls: RecordedCall[] = []
  private readonly script: Reply[]

  constructor(script: Reply[] = [], private readonly fallback?: Reply) {
    this.script = script.slice()
  }

  async chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse> {
    const call = this.calls.length
    this.calls.push({ messages: messages.slice(), options })
    const reply = this.script.length > 0 ? this.script.shift() : this.fallback
    if (reply === undefined) throw new Error(`MockAdapter: no scripted reply for call ${call + 1}`)
    if (reply instanceof Error) throw reply
    if (typeof reply === 'function') return reply(messages, options, call)
    return reply
  }

  // Required by LLMAdapter (as in the original); the runner only calls chat().
  // eslint-disable-next-line require-yield
  async *stream(): AsyncGenerator<StreamEvent> {
    throw new Error('MockAdapter: stream() is not scripted')
  }
}

let nextId = 0

export function usage(input = 10, output = 5): TokenUsage {
  return { input_tokens: input, output_tokens: output }
}

export function response(content: ContentBlock[], u: TokenUsage = usage(), stop_reason = 'end_turn'): LLMResponse {
  nextId += 1
  return { id: `resp_${nextId}`, model: 'mock-model', stop_reason, usage: u, content }
}

export function textReply(text: string, u: TokenUsage = usage()): LLMResponse {
  return response([{ type: 'text', text }], u)
}

export function toolReply(
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>,
  u: TokenUsage = usage(),
  text?: string,
): LLMResponse {
  const content: ContentBlock[] = []
  if (text !== undefined) content.push({ type: 'text', text })
  for (const c of calls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input })
  return response(content, u, 'tool_use')
}

export function userText(text: string): LLMMessage {
  return { role: 'user', content: [{ type: 'text', text }] }
}

export function assistantText(text: string): LLMMessage {
  return { role: 'assistant', content: [{ type: 'text', text }] }
}

/** A Zod tool that records each input it is called with in `seen` and answers `answer(input)`. */
export function recordingTool<T>(name: string, description: string, inputSchema: z.ZodType<T, any, any>, answer: (input: T) => string) {
  const seen: T[] = []
  const tool = defineTool({
    name,
    description,
    inputSchema,
    execute: async (input: T) => {
      seen.push(input)
      return { data: answer(input) }
    },
  })
  return { tool, seen }
}

/** `echo` tool: returns `echo:<text>`. */
export function echoTool(name = 'echo'): ToolDefinition<any> {
  return defineTool({
    name,
    description: `echoes (${name})`,
    inputSchema: z.object({ text: z.string() }),
    execute: async ({ text }: { text: string }) => ({ data: `echo:${text}` }),
  })
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** An Agent over a fresh registry and executor, with a scripted adapter. */
export function agentSetup(name: string, config: Partial<AgentConfig> = {}, adapter = new MockAdapter([textReply('hello')])) {
  const registry = new ToolRegistry()
  const executor = new ToolExecutor(registry)
  const agent = new Agent({ name, model: 'mock-model', adapter, ...config } as AgentConfig, registry, executor)
  return { agent, registry, executor, adapter }
}

/** The result of a run whose one turn answered `text` (§4.5); `extra` sets or adds fields. */
export const ANSWERED = (text: string, tokenUsage: TokenUsage, extra: Partial<AgentRunResult> = {}): AgentRunResult => ({
  success: true,
  output: text,
  messages: [assistantText(text)],
  tokenUsage,
  toolCalls: [],
  structured: undefined,
  ...extra,
})

/** The result of a run that threw (§4.6). */
export const FAILED = (message: string): AgentRunResult => ({
  success: false,
  output: message,
  messages: [],
  tokenUsage: { input_tokens: 0, output_tokens: 0 },
  toolCalls: [],
  structured: undefined,
})
