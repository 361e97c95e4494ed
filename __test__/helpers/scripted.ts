// The scripted model of the shell suites (the ShellExecutor seam, the confined shell): one reply
// a call, the last one repeated once the script runs out.
import type { ContentBlock, LLMAdapter, LLMResponse } from '../../index'

/** A reply with `content`; by default a tool turn. */
export const resp = (content: ContentBlock[], stop = 'tool_use'): LLMResponse => ({
  id: 'r',
  model: 'm',
  stop_reason: stop,
  usage: { input_tokens: 1, output_tokens: 1 },
  content,
})
/** A final text reply. */
export const text = (t: string): LLMResponse => resp([{ type: 'text', text: t }], 'end_turn')

/** An adapter answering `steps` in order and then the last one again; an Error step is thrown. */
export function scripted(steps: Array<LLMResponse | Error>): LLMAdapter {
  let i = 0
  return {
    name: 'mock',
    async chat() {
      const s = steps[Math.min(i++, steps.length - 1)]
      if (s instanceof Error) throw s
      return s
    },
    async *stream() {
      // unused: the runner calls chat
    },
  }
}
