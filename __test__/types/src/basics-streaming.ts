// The original's streaming example, and streamDeltas (oma-kernel) beside it. A switch over the
// original's event types stays exhaustive: text_delta exists only with `streamDeltas: true`.
import { Agent, ToolRegistry, ToolExecutor } from '@oma-kernel/core'
import type { StreamEvent, StreamEventWithDeltas, TextDeltaEvent, AgentRunResult, LLMResponse } from '@oma-kernel/core'

function describe(event: StreamEvent): string {
  switch (event.type) {
    case 'text': return String(event.data)
    case 'reasoning': return 'thinking'
    case 'tool_use': return 'tool'
    case 'tool_result': return 'result'
    case 'loop_detected': return 'loop'
    case 'budget_exceeded': return 'budget'
    case 'done': return (event.data as AgentRunResult).output
    case 'error': return (event.data as Error).message
    default: {
      const unreachable: never = event.type
      return unreachable
    }
  }
}

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  const agent = new Agent({ name: 'writer', model: 'gpt-5-mini', provider: 'openai' }, registry, new ToolExecutor(registry))

  for await (const event of agent.stream('Write a haiku.')) {
    const e: StreamEvent = event
    console.log(describe(e))
    // @ts-expect-error without streamDeltas there is no text_delta event
    if (event.type === 'text_delta') console.log('never')
  }

  for await (const event of agent.stream('Write a haiku.', { streamDeltas: true })) {
    if (event.type === 'text_delta') {
      const delta: string = event.data
      process.stdout.write(delta)
    } else {
      console.log(describe(event))
    }
  }

  // A flag only known at run time may yield deltas: typed with them.
  const flag = Math.random() > 0.5
  for await (const event of agent.stream('x', { streamDeltas: flag })) {
    const e: StreamEventWithDeltas = event
    // @ts-expect-error may be a text_delta event
    const original: StreamEvent = event
    console.log(e, original)
  }
  for await (const event of agent.stream('x', { streamDeltas: false })) describe(event)

  const delta: TextDeltaEvent = { type: 'text_delta', data: 'x' }
  // @ts-expect-error a text_delta event is not one of the original's StreamEvents
  const asOriginal: StreamEvent = delta
  console.log(asOriginal)
  const final: LLMResponse | undefined = undefined
  console.log(final)
}
