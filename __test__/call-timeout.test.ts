// callTimeoutMs and LLMCallTimeoutError (issue 15 point 2, upstream 1.9): each model call gets a
// deadline of its own; when it passes first the run fails with LLMCallTimeoutError, unless the
// caller's own signal fired first. Beyond upstream: an adapter that never settles is not waited
// for, and a native adapter's request is cancelled.
import { spawnSync } from 'child_process'
import * as path from 'path'
import { z } from 'zod'
import {
  Agent, AgentRunner, ToolRegistry, ToolExecutor, defineTool, LLMCallTimeoutError, isRetryableError,
  TokenBudgetExceededError, InvalidMessageError,
  LLMAdapter, LLMChatOptions, LLMMessage, LLMResponse, ContentBlock, RunnerOptions, AgentConfig,
} from '../index'
import { eachServer } from './llm-server'
import { watchTimers } from './helpers/timers'
import { FAILED } from './helpers/mock-adapter'

const errors = require('../lib/errors.js')

function resp(content: ContentBlock[]): LLMResponse {
  return { id: 'r', content, model: 'm', stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } }
}
const text = (t: string): ContentBlock => ({ type: 'text', text: t })
const user = (t: string): LLMMessage => ({ role: 'user', content: [text(t)] })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const never = () => new Promise<LLMResponse>(() => {})

/** An adapter whose n-th call runs `replies[n]` (the last one repeats), recording each call's options. */
function scripted(replies: Array<(options: LLMChatOptions) => LLMResponse | Promise<LLMResponse>>) {
  const options: LLMChatOptions[] = []
  const adapter: LLMAdapter = {
    name: 'scripted',
    async chat(_messages, o) {
      options.push(o)
      return replies[Math.min(options.length - 1, replies.length - 1)](o)
    },
    async *stream() {},
  }
  return { adapter, options }
}

function registry() {
  const reg = new ToolRegistry()
  reg.register(defineTool({ name: 'echo', description: 'echo', inputSchema: z.object({ v: z.string() }), execute: async ({ v }) => ({ data: `echo:${v}` }) }))
  return reg
}

function agent(adapter: LLMAdapter, extra: Partial<AgentConfig> = {}) {
  const reg = registry()
  const a = new Agent({ name: 'analyst', model: 'm', tools: ['echo'], ...extra }, reg, new ToolExecutor(reg))
  a.runner = new AgentRunner(adapter, reg, new ToolExecutor(reg), {
    model: 'm', allowedTools: ['echo'], agentName: 'analyst', callTimeoutMs: extra.callTimeoutMs, contextStrategy: extra.contextStrategy,
  })
  return a
}

function runner(adapter: LLMAdapter, opts: Partial<RunnerOptions> = {}) {
  const reg = registry()
  return new AgentRunner(adapter, reg, new ToolExecutor(reg), { model: 'm', allowedTools: ['echo'], ...opts })
}

/**
 * The deadlines armed while `body` runs that were never cleared. Only timers of the deadline's
 * length count: a process-wide count of active timers also sees other tests' sockets and the
 * run's 100 ms abandon timer, and flaked under load.
 */
async function unclearedDeadlines(ms: number, body: () => Promise<void>): Promise<number> {
  const timers = watchTimers(ms)
  try {
    await body()
  } finally {
    timers.restore()
  }
  timers.clearLive()
  return timers.live.size
}

describe('LLMCallTimeoutError (upstream texts)', () => {
  test('name, code, fields and message with an agent', () => {
    const err = new LLMCallTimeoutError(20_000, 'analyst')
    expect(err.name).toBe('LLMCallTimeoutError')
    expect(err.code).toBe('LLM_CALL_TIMEOUT')
    expect(err.timeoutMs).toBe(20_000)
    expect(err.agent).toBe('analyst')
    expect(err.message).toBe('Agent "analyst" LLM call exceeded per-call timeout of 20000ms')
    expect(String(err)).toBe('LLMCallTimeoutError: Agent "analyst" LLM call exceeded per-call timeout of 20000ms')
  })

  test('without an agent the message omits it', () => {
    const err = new LLMCallTimeoutError(20_000)
    expect(err.agent).toBeUndefined()
    expect(err.message).toBe('LLM call exceeded per-call timeout of 20000ms')
  })

  test('instanceof holds in this realm, for the entry and the module alike', () => {
    const err = new LLMCallTimeoutError(1000, 'b')
    expect(err).toBeInstanceOf(LLMCallTimeoutError)
    expect(err).toBeInstanceOf(errors.LLMCallTimeoutError)
    expect(err).toBeInstanceOf(Error)
    expect(err instanceof TokenBudgetExceededError).toBe(false)
  })
})

describe('isRetryableError (upstream rules)', () => {
  const withStatus = (status: unknown, key = 'status') => Object.assign(new Error('x'), { [key]: status })
  test('terminal: budget, invalid message, cancellation, 4xx other than 408/409/429', () => {
    expect(isRetryableError(new TokenBudgetExceededError('a', 10, 5))).toBe(false)
    expect(isRetryableError(new InvalidMessageError('m'))).toBe(false)
    const abort = new Error('stop')
    abort.name = 'AbortError'
    expect(isRetryableError(abort)).toBe(false)
    class APIUserAbortError extends Error {}
    expect(isRetryableError(new APIUserAbortError('user'))).toBe(false)
    for (const s of [400, 401, 403, 404, 422, 499]) expect(isRetryableError(withStatus(s))).toBe(false)
    expect(isRetryableError(withStatus(404, 'statusCode'))).toBe(false)
  })

  test('retryable: a call timeout, no status, 408/409/429, 5xx, a non-finite status', () => {
    expect(isRetryableError(new LLMCallTimeoutError(5, 'a'))).toBe(true)
    expect(isRetryableError(new Error('ECONNRESET'))).toBe(true)
    expect(isRetryableError('a string')).toBe(true)
    expect(isRetryableError(undefined)).toBe(true)
    for (const s of [408, 409, 429, 500, 502, 503, 599]) expect(isRetryableError(withStatus(s))).toBe(true)
    expect(isRetryableError(withStatus(NaN))).toBe(true)
    expect(isRetryableError(withStatus('404'))).toBe(true)
    // `status` wins over `statusCode` when both are set.
    expect(isRetryableError(Object.assign(new Error('x'), { status: 503, statusCode: 404 }))).toBe(true)
  })
})

describe('callTimeoutMs unset or <= 0: nothing changes', () => {
  test.each([undefined, 0, -5])('callTimeoutMs %p: the caller signal is passed by identity, none stays undefined', async (ms) => {
    const { adapter, options } = scripted([() => resp([text('ok')])])
    const controller = new AbortController()
    await runner(adapter, { callTimeoutMs: ms }).run([user('go')], { abortSignal: controller.signal })
    expect(options[0].abortSignal).toBe(controller.signal)
    await runner(adapter, { callTimeoutMs: ms }).run([user('go')])
    expect(options[1].abortSignal).toBeUndefined()
  })

  test('a value AbortSignal.timeout refuses fails the run with Node\'s own error, as upstream', async () => {
    const { adapter } = scripted([() => resp([text('ok')])])
    const r = await agent(adapter, { callTimeoutMs: 1.5 }).run('go')
    expect(r.success).toBe(false)
    let expected = ''
    try {
      AbortSignal.timeout(1.5)
    } catch (e) {
      expected = (e as Error).message
    }
    expect(r.output).toBe(expected)
  })
})

describe('callTimeoutMs on the model calls of a run', () => {
  test('a never-settling JS adapter is ended by the deadline: the run fails with LLMCallTimeoutError', async () => {
    const { adapter, options } = scripted([never])
    const a = agent(adapter, { callTimeoutMs: 50 })
    const t0 = Date.now()
    const r = await a.run('go')
    expect(Date.now() - t0).toBeLessThan(5000)
    // The shape of any adapter failure in this kernel (CONTRACT §4.6).
    expect(r).toEqual(FAILED('Agent "analyst" LLM call exceeded per-call timeout of 50ms'))
    const err = a.getState().error as LLMCallTimeoutError
    expect(err).toBeInstanceOf(LLMCallTimeoutError)
    expect(err.code).toBe('LLM_CALL_TIMEOUT')
    expect(err.timeoutMs).toBe(50)
    expect(err.agent).toBe('analyst')
    expect(isRetryableError(err)).toBe(true)
    // The adapter's signal aborted with the reason AbortSignal.timeout gives.
    const signal = options[0].abortSignal!
    expect(signal.aborted).toBe(true)
    expect((signal.reason as DOMException).name).toBe('TimeoutError')
  })

  test('Agent copies callTimeoutMs into the runner it builds', async () => {
    const reg = registry()
    const a = new Agent({ name: 'w', model: 'm', adapter: scripted([never]).adapter, callTimeoutMs: 40 }, reg, new ToolExecutor(reg))
    const r = await a.run('go')
    expect(r.output).toBe('Agent "w" LLM call exceeded per-call timeout of 40ms')
  })

  test('a bare runner without agentName: the message without an agent; run() rejects', async () => {
    const { adapter } = scripted([never])
    const err = await runner(adapter, { callTimeoutMs: 30 }).run([user('go')]).catch((e) => e)
    expect(err).toBeInstanceOf(LLMCallTimeoutError)
    expect(err.message).toBe('LLM call exceeded per-call timeout of 30ms')
    expect(err.agent).toBeUndefined()
  })

  test('stream(): the timeout is the error event', async () => {
    const { adapter } = scripted([never])
    const events: any[] = []
    for await (const e of runner(adapter, { callTimeoutMs: 30, agentName: 's' }).stream([user('go')])) events.push(e)
    expect(events.map((e) => e.type)).toEqual(['error'])
    expect(events[0].data).toBeInstanceOf(LLMCallTimeoutError)
    expect(events[0].data.message).toBe('Agent "s" LLM call exceeded per-call timeout of 30ms')
  })

  test('an adapter that honours its signal also ends as LLMCallTimeoutError (not its own abort error)', async () => {
    const { adapter } = scripted([(o) => new Promise((_, reject) => {
      o.abortSignal!.addEventListener('abort', () => reject(new Error('adapter saw the abort')))
    })])
    const r = await agent(adapter, { callTimeoutMs: 30 }).run('go')
    expect(r.output).toBe('Agent "analyst" LLM call exceeded per-call timeout of 30ms')
  })

  test('a fresh deadline per call: two slow turns, each within the limit, both succeed', async () => {
    const { adapter, options } = scripted([
      async () => { await sleep(150); return resp([call('c1', 'echo', { v: 'a' })]) },
      async () => { await sleep(150); return resp([text('done')]) },
    ])
    // 250 ms per call: the run as a whole takes longer than one deadline.
    const r = await agent(adapter, { callTimeoutMs: 250 }).run('go')
    expect(r.success).toBe(true)
    expect(r.output).toBe('done')
    expect(options).toHaveLength(2)
    expect(options[0].abortSignal).not.toBe(options[1].abortSignal)
    // Each deadline was cleared when its call settled.
    await sleep(300)
    expect(options[0].abortSignal!.aborted).toBe(false)
    expect(options[1].abortSignal!.aborted).toBe(false)
  })

  test('the merged signal carries the caller\'s abort to the adapter', async () => {
    const controller = new AbortController()
    const { adapter, options } = scripted([(o) => new Promise((_, reject) => {
      o.abortSignal!.addEventListener('abort', () => reject(new Error('caller stopped me')))
      setTimeout(() => controller.abort(), 20)
    })])
    const r = await agent(adapter, { callTimeoutMs: 5000 }).run('go', { abortSignal: controller.signal })
    expect(options[0].abortSignal).not.toBe(controller.signal)
    // The caller's abort wins: the adapter's own error, not a timeout.
    expect(r.success).toBe(false)
    expect(r.output).toBe('caller stopped me')
  })

  test('the caller\'s abort first, then the deadline: the original error is kept', async () => {
    const controller = new AbortController()
    // Honours no signal at all and rejects late: the run gives up on it as on any aborted call.
    const { adapter } = scripted([() => new Promise((_, reject) => {
      setTimeout(() => controller.abort(), 10)
      setTimeout(() => reject(new Error('too late')), 400)
    })])
    const a = agent(adapter, { callTimeoutMs: 40 })
    const r = await a.run('go', { abortSignal: controller.signal })
    expect(r.success).toBe(false)
    expect(r.output).toBe('Request was aborted.')
    expect(a.getState().error).not.toBeInstanceOf(LLMCallTimeoutError)
    await sleep(450)
  })

  test('the summarize strategy\'s model call has its own deadline', async () => {
    const history: LLMMessage[] = [user('goal'), { role: 'assistant', content: [text('x'.repeat(400))] }, user('u1'), { role: 'assistant', content: [text('a1')] }, user('u2')]
    const { adapter, options } = scripted([never])
    const err = await runner(adapter, {
      agentName: 'sum', callTimeoutMs: 40, contextStrategy: { type: 'summarize', maxTokens: 10, summaryModel: 'small' },
    }).run(history).catch((e) => e)
    expect(options).toHaveLength(1)
    expect(options[0].model).toBe('small')
    expect(err).toBeInstanceOf(LLMCallTimeoutError)
    expect(err.message).toBe('Agent "sum" LLM call exceeded per-call timeout of 40ms')
  })

  test('a slow summary within the limit, then the turn: both succeed', async () => {
    const history: LLMMessage[] = [user('goal'), { role: 'assistant', content: [text('x'.repeat(400))] }, user('u1'), { role: 'assistant', content: [text('a1')] }, user('u2')]
    const { adapter, options } = scripted([
      async () => { await sleep(100); return resp([text('bullet')]) },
      async () => { await sleep(100); return resp([text('final')]) },
    ])
    const r = await runner(adapter, { callTimeoutMs: 160, contextStrategy: { type: 'summarize', maxTokens: 10 } }).run(history)
    expect(r.output).toBe('final')
    expect(options[0].abortSignal).not.toBe(options[1].abortSignal)
  })
})

const call = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({ type: 'tool_use', id, name, input })

describe('callTimeoutMs with a native adapter (a real server on 127.0.0.1 that never answers)', () => {
  const server = eachServer()

  function nativeAgent(extra: Partial<AgentConfig> = {}) {
    const reg = registry()
    return new Agent({ name: 'net', model: 'gpt-test', provider: 'openai', apiKey: 'k', baseURL: `${server.url}/v1`, ...extra }, reg, new ToolExecutor(reg))
  }

  test('the request is cancelled by the deadline and the run fails with LLMCallTimeoutError', async () => {
    let closed: Promise<void> = Promise.resolve()
    server.replies.push({ custom: (req) => { closed = new Promise((r) => req.socket.on('close', () => r())) } })
    const a = nativeAgent({ callTimeoutMs: 150 })
    const t0 = Date.now()
    const r = await a.run('go')
    expect(Date.now() - t0).toBeLessThan(5000)
    expect(server.requests).toHaveLength(1)
    expect(r.success).toBe(false)
    expect(r.output).toBe('Agent "net" LLM call exceeded per-call timeout of 150ms')
    expect(a.getState().error).toBeInstanceOf(LLMCallTimeoutError)
    // The client dropped the connection: the request did not live on.
    await closed
  })

  test('streaming deltas: the same', async () => {
    server.replies.push({ hang: true })
    const events: any[] = []
    for await (const e of nativeAgent({ callTimeoutMs: 150 }).stream('go', { streamDeltas: true })) events.push(e)
    expect(events.map((e) => e.type)).toEqual(['error'])
    expect(events[0].data).toBeInstanceOf(LLMCallTimeoutError)
    expect(events[0].data.message).toBe('Agent "net" LLM call exceeded per-call timeout of 150ms')
  })

  test('an answer within the limit: the run succeeds', async () => {
    server.replies.push({ json: { id: 'x', model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1 } } })
    const r = await nativeAgent({ callTimeoutMs: 5000 }).run('go')
    expect(r.success).toBe(true)
    expect(r.output).toBe('hi')
  })

  test('the caller\'s abort first: the native abort text, not a timeout', async () => {
    const controller = new AbortController()
    server.replies.push({ hang: true, onRequest: () => controller.abort() })
    const a = nativeAgent({ callTimeoutMs: 5000 })
    const r = await a.run('go', { abortSignal: controller.signal })
    expect(r.output).toBe('Request was aborted.')
    expect(a.getState().error).not.toBeInstanceOf(LLMCallTimeoutError)
  })
})

describe('no timers left behind', () => {
  test('many calls under a long deadline: every timer is cleared when its call settles', async () => {
    let armed = 0
    const left = await unclearedDeadlines(600_000, async () => {
      const { adapter } = scripted([() => { armed++; return resp([text('ok')]) }])
      const r = runner(adapter, { callTimeoutMs: 600_000 })
      for (let i = 0; i < 200; i++) await r.run([user('go')])
      // Failures too: an adapter that throws, synchronously or not.
      const sync: LLMAdapter = { name: 'sync', chat() { throw new Error('sync') }, async *stream() {} }
      await expect(runner(sync, { callTimeoutMs: 600_000 }).run([user('go')])).rejects.toThrow('sync')
      const { adapter: failing } = scripted([async () => { throw new Error('async') }])
      await expect(runner(failing, { callTimeoutMs: 600_000 }).run([user('go')])).rejects.toThrow('async')
    })
    expect(armed).toBe(200)
    expect(left).toBe(0)
  })

  test('a caller abort clears the deadline at once', async () => {
    const controller = new AbortController()
    const left = await unclearedDeadlines(600_000, async () => {
      const { adapter } = scripted([(o) => new Promise((_, reject) => {
        o.abortSignal!.addEventListener('abort', () => reject(new Error('stopped')))
        setTimeout(() => controller.abort(), 5)
      })])
      await expect(runner(adapter, { callTimeoutMs: 600_000 }).run([user('go')], { abortSignal: controller.signal })).rejects.toThrow('stopped')
    })
    expect(left).toBe(0)
  })

  test('a process whose runs used long deadlines exits as soon as the runs are done', () => {
    const script = `
      const { AgentRunner, ToolRegistry, ToolExecutor } = require(${JSON.stringify(path.join(__dirname, '..', 'index.js'))})
      const reg = new ToolRegistry()
      const adapter = { name: 'a', async chat() { return { id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text: 'ok' }] } } }
      const r = new AgentRunner(adapter, reg, new ToolExecutor(reg), { model: 'm', callTimeoutMs: 600000 })
      ;(async () => { for (let i = 0; i < 50; i++) await r.run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }]); console.log('done') })()
    `
    const t0 = Date.now()
    const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(out.stdout.trim()).toBe('done')
    expect(out.status).toBe(0)
    expect(Date.now() - t0).toBeLessThan(30_000)
  })
})
