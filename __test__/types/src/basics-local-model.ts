// The original's local-model example: an OpenAI-compatible server (Ollama, vLLM, LM Studio)
// through `provider: 'openai'` and `baseURL`, and createAdapter for direct calls.
import { Agent, ToolRegistry, ToolExecutor, createAdapter } from '@oma-kernel/core'
import type { LLMAdapter, LLMResponse, StreamEvent } from '@oma-kernel/core'

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  const agent = new Agent(
    { name: 'local', model: 'qwen2.5:7b', provider: 'openai', baseURL: 'http://localhost:11434/v1', apiKey: 'ollama', timeoutMs: 120_000 },
    registry,
    new ToolExecutor(registry),
  )
  console.log((await agent.run('Hi')).output)

  const adapter: LLMAdapter = await createAdapter('openai', 'ollama', 'http://localhost:11434/v1')
  const response: LLMResponse = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], { model: 'qwen2.5:7b', maxTokens: 64 })
  console.log(response.content, response.usage.output_tokens)
  for await (const event of adapter.stream([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], { model: 'qwen2.5:7b' })) {
    const e: StreamEvent = event
    console.log(e.type)
  }
  // @ts-expect-error not a provider
  await createAdapter('ollama')
}
