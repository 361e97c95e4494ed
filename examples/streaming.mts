// Streaming: `agent.stream()` yields the run's events as they happen (`text` per turn,
// `tool_use`, `tool_result`, then `done` with the result). With `streamDeltas: true` and a native
// adapter (`provider` / `createAdapter`) it also yields `text_delta` events as the tokens arrive,
// before each turn's whole `text` event. Without the flag the sequence is the original's.
//
// Runs on the embedded scripted model by default (it streams word by word);
// OPENAI_API_KEY, ANTHROPIC_API_KEY or OMA_BASE_URL switch to a real model.
import { Agent, ToolRegistry, ToolExecutor, type AgentRunResult } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import type { ChatRequest, ScriptedReply } from './scripted-server.mjs'

function scriptedModel(_request: ChatRequest): ScriptedReply {
  return {
    text: 'A native addon keeps the agent loop in Rust: the model call, the tool gate and the context ' +
      'strategies run without crossing into JavaScript for every message. Your code still sees the same ' +
      'events, in the same order, as with the original package.',
  }
}

const model = await chooseModel(scriptedModel, { chunkDelayMs: 10 })
console.log(`model: ${model.label}\n`)

const agent = new Agent(
  { name: 'writer', ...model.config, systemPrompt: 'You are a concise technical writer.', maxTurns: 2 },
  new ToolRegistry(),
  new ToolExecutor(new ToolRegistry()),
)

let deltas = 0
let streamed = ''
let whole = ''
let result: AgentRunResult | undefined
for await (const event of agent.stream('In three sentences: why run an agent loop in a native addon?', { streamDeltas: true })) {
  if (event.type === 'text_delta') {
    deltas++
    streamed += event.data as string
    process.stdout.write(event.data as string)
  } else if (event.type === 'text') {
    whole = event.data as string
  } else if (event.type === 'done') {
    result = event.data as AgentRunResult
  } else if (event.type === 'error') {
    console.error('\nstream error:', event.data)
    process.exitCode = 1
  }
}
process.stdout.write('\n\n')
console.log(`text_delta events: ${deltas}; deltas add up to the turn's text: ${streamed === whole}`)
if (result) console.log(`done: success=${result.success}; tokens: ${result.tokenUsage.input_tokens} input, ${result.tokenUsage.output_tokens} output`)
await model.close()
