// Local model: any OpenAI-compatible server (Ollama, vLLM, LM Studio) through `provider:
// 'openai'` and a `baseURL`, or through `createAdapter('openai', key, baseURL)` directly. Plain
// `http://` endpoints are served from Node's own event loop. Models that write their tool calls
// as text instead of native `tool_calls` still work: the adapter extracts them.
//
//   OMA_BASE_URL=http://localhost:11434/v1 OMA_MODEL=qwen2.5 node local-model.mjs   (Ollama)
//
// Without OMA_BASE_URL it talks to the embedded scripted server, which plays a small local model
// that writes its tool call as text, in <tool_call> tags.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, createAdapter, defineTool } from '@oma-kernel/core'
import { startScriptedServer, toolOutcomes, lastUserText, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

function scriptedLocalModel(request: ChatRequest): ScriptedReply {
  if (request.tools.length === 0) return { text: `Hello! You said: ${lastUserText(request)}` }
  const counted = toolOutcomes(request).find((o) => o.name === 'count_words')
  if (!counted) {
    const sentence = /"(.*)"/.exec(lastUserText(request))?.[1] ?? ''
    return { text: `<tool_call>${JSON.stringify({ name: 'count_words', arguments: { text: sentence } })}</tool_call>` }
  }
  return { text: `The sentence has ${counted.result} words.` }
}

const server = process.env.OMA_BASE_URL ? undefined : await startScriptedServer(scriptedLocalModel)
const baseURL = process.env.OMA_BASE_URL ?? server!.baseURL
const modelName = process.env.OMA_MODEL ?? (server ? 'scripted-local' : 'qwen2.5')
const apiKey = process.env.OMA_API_KEY ?? 'ollama' // local servers ignore the key; the adapter wants one
console.log(`model: ${modelName} at ${baseURL}${server ? ' (embedded scripted server)' : ''}\n`)

// 1. The adapter on its own: one chat call.
const adapter = await createAdapter('openai', apiKey, baseURL)
const reply = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'Say hello in five words.' }] }], { model: modelName, maxTokens: 64 })
const replyText = reply.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
console.log(`adapter.chat: ${replyText.trim()} (${reply.usage.input_tokens} + ${reply.usage.output_tokens} tokens, stop: ${reply.stop_reason})`)

// 2. An agent on the same server, with a tool.
const registry = new ToolRegistry()
registry.register(defineTool({
  name: 'count_words',
  description: 'Count the words in a text.',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ data: String(text.split(/\s+/).filter(Boolean).length) }),
}))
const agent = new Agent(
  { name: 'local', model: modelName, provider: 'openai', baseURL, apiKey, tools: ['count_words'], maxTurns: 4 },
  registry,
  new ToolExecutor(registry),
)
const result = await agent.run('How many words are in "the quick brown fox jumps over the lazy dog"? Use the count_words tool.')
for (const call of result.toolCalls) console.log(`tool: ${call.toolName} ${JSON.stringify(call.input)} -> ${call.output}`)
console.log(`answer: ${result.output}`)
console.log(`success: ${result.success}`)
await server?.close()
if (!result.success) process.exitCode = 1
