// A scripted adapter for the test files (shared by the Jest and Vitest runs).
import type { ContentBlock, LLMAdapter, LLMResponse, StreamEvent } from '@oma-kernel/core'

export const resp = (content: ContentBlock[], stop = 'end_turn'): LLMResponse => ({
  id: 'r',
  model: 'm',
  stop_reason: stop,
  usage: { input_tokens: 3, output_tokens: 2 },
  content,
})

export function scripted(replies: LLMResponse[]): LLMAdapter & { calls: number } {
  return {
    name: 'mock',
    calls: 0,
    async chat() {
      return replies[Math.min(this.calls++, replies.length - 1)]
    },
    // eslint-disable-next-line require-yield
    async *stream(): AsyncGenerator<StreamEvent> {
      throw new Error('not scripted')
    },
  }
}
