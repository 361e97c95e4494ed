// A hand-written adapter and the runner, as users of the original write them: LLMAdapter
// requires both chat and stream, as in the original.
import { AgentRunner, ToolRegistry, ToolExecutor } from '@oma-kernel/core'
import type { LLMAdapter, LLMChatOptions, LLMMessage, LLMResponse, LLMStreamOptions, StreamEvent, RunResult } from '@oma-kernel/core'

class EchoAdapter implements LLMAdapter {
  readonly name = 'echo'
  async chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse> {
    const last = messages[messages.length - 1]
    const text = last.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    return { id: 'r1', model: options.model, stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text }] }
  }
  async *stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncIterable<StreamEvent> {
    const response = await this.chat(messages, options)
    yield { type: 'text', data: 'echo' }
    yield { type: 'done', data: response }
  }
}

// @ts-expect-error stream is required, as in the original
export const chatOnly: LLMAdapter = { name: 'x', chat: async () => ({ id: '', model: '', stop_reason: '', usage: { input_tokens: 0, output_tokens: 0 }, content: [] }) }

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  const runner = new AgentRunner(new EchoAdapter(), registry, new ToolExecutor(registry), { model: 'm', maxTurns: 3, agentName: 'echo' })
  const result: RunResult = await runner.run([{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], { onMessage: (m) => console.log(m.role) })
  console.log(result.turns, result.output)
  for await (const event of runner.stream([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])) {
    // @ts-expect-error without streamDeltas there is no text_delta event
    if (event.type === 'text_delta') console.log(event.data)
  }
}
