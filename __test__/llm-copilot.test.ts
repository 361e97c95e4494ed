import { createAdapter } from '../lib/llm'
import { collect, eachServer, isolateEnv, sseData } from './llm-server'

isolateEnv(['GITHUB_COPILOT_TOKEN', 'GITHUB_TOKEN', 'OPENAI_API_KEY'])
const server = eachServer()
beforeEach(async () => {
  process.env.GITHUB_API_URL = server.url
})

afterEach(async () => {
  jest.restoreAllMocks()
})

const completion = (content: string) => ({
  id: 'c', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 },
})

describe('Copilot', () => {
  test('exchanges the GitHub token, caches the Copilot token, refreshes it when expiring', async () => {
    await expect(createAdapter('copilot')).rejects.toThrow(/GITHUB_COPILOT_TOKEN or GITHUB_TOKEN/)
    process.env.GITHUB_TOKEN = 'gho_abc'
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {})
    const adapter = await createAdapter('copilot', undefined, 'http://ignored')
    expect(warn).toHaveBeenCalledWith('[open-multi-agent] baseURL is not supported for the copilot provider and will be ignored.')
    expect(adapter.name).toBe('copilot')
    expect(adapter.capabilities).toEqual({ echoesReasoning: 'never' })
    const now = Math.floor(Date.now() / 1000)
    server.replies.push(
      { json: { token: 'cop-1', expires_at: now + 1800, endpoints: { api: `${server.url}/copilot-api` } } },
      { json: completion('one') },
      { json: completion('two') },
    )
    const r1 = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'gpt-4o' })
    const r2 = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'gpt-4o' })
    expect([r1.content, r2.content]).toEqual([[{ type: 'text', text: 'one' }], [{ type: 'text', text: 'two' }]])
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /copilot_internal/v2/token',
      'POST /copilot-api/chat/completions',
      'POST /copilot-api/chat/completions',
    ])
    expect(server.requests[0].headers.authorization).toBe('token gho_abc')
    expect(server.requests[1].headers.authorization).toBe('Bearer cop-1')
    expect(server.requests[1].headers['copilot-integration-id']).toBe('vscode-chat')

    // A token about to expire is exchanged again before the next call.
    const fresh = await createAdapter('copilot', 'gho_explicit')
    server.requests.length = 0
    server.replies.push(
      { json: { token: 'short', expires_at: now + 10, endpoints: { api: server.url } } },
      { sse: sseData([{ id: 's', model: 'm', choices: [{ index: 0, delta: { content: 'streamed' }, finish_reason: 'stop' }] }]) },
      { json: { token: 'renewed', expires_at: now + 1800, endpoints: { api: server.url } } },
      { json: completion('three') },
    )
    const events = await collect(fresh.stream([], { model: 'gpt-4o' }))
    expect(events.map((e) => e.type)).toEqual(['text', 'done'])
    await fresh.chat([], { model: 'gpt-4o' })
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['token gho_explicit', 'Bearer short', 'token gho_explicit', 'Bearer renewed'])
  })

  test('a failed exchange fails the call with `<status> <message>`', async () => {
    server.replies.push({ status: 401, json: { message: 'Bad credentials' } })
    const adapter = await createAdapter('copilot', 'gho_bad')
    await expect(adapter.chat([], { model: 'gpt-4o' })).rejects.toThrow('401 Bad credentials')
  })
})
