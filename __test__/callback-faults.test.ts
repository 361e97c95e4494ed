// Issue 13, points 2, 4, 11, 12 and 13: user callbacks and JS adapters that throw, lie or never
// settle. Scenarios that could kill the process run in a child `node` (default
// --unhandled-rejections=throw) and are judged by its exit code and output.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import {
  Agent, AgentRunner, ToolExecutor, ToolRegistry, defineTool,
  ContentBlock, LLMAdapter, LLMMessage, LLMResponse, StreamEvent, ToolDefinition,
} from '../index'
import { z } from 'zod'

const INDEX = path.resolve(__dirname, '..', 'index.js')

/** Runs `body` (JS, with `api` = the package) in a child node; a bound only ends a hang. */
function child(body: string) {
  const script = `const api = require(${JSON.stringify(INDEX)});\n(async () => {\n${body}\n})().catch((e) => { console.log('HARNESS-FAILED', e && e.stack); process.exitCode = 3 })`
  const r = spawnSync(process.execPath, ['--unhandled-rejections=throw', '-e', script], { encoding: 'utf8', timeout: 20000 })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

/**
 * Runs `body` in a child node, then waits 200 ms for a late rejection: the process must still be
 * alive, exit 0 and write nothing to stderr. The child's stdout, for the scenario's own lines.
 */
function survives(body: string) {
  const r = child(`${body}
      await new Promise((r) => setTimeout(r, 200))
      console.log('ALIVE')`)
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  expect(r.stdout).toContain('ALIVE')
  return r.stdout
}

const usage = { input_tokens: 1, output_tokens: 1 }
const reply = (content: ContentBlock[], u = usage): LLMResponse => ({ id: 'r', model: 'm', stop_reason: 'end_turn', usage: u, content })
const text = (t: string): ContentBlock => ({ type: 'text', text: t })
const call = (id: string, name: string, input: Record<string, unknown> = {}): ContentBlock => ({ type: 'tool_use', id, name, input })

/** An adapter answering `first` once, then `then` (default: a final text). */
function scripted(first: (messages: LLMMessage[], options: any) => any, then: (n: number) => any = () => reply([text('final')])): LLMAdapter & { calls: number } {
  const a = {
    name: 'scripted',
    calls: 0,
    chat(messages: LLMMessage[], options: any) {
      a.calls += 1
      return a.calls === 1 ? first(messages, options) : Promise.resolve(then(a.calls))
    },
  }
  return a as any
}

function jsonTool(name: string, execute: (input: any) => any): ToolDefinition<any, any> {
  return { name, description: name, inputSchema: { type: 'object' }, execute } as any
}

function setup(adapter: LLMAdapter, tools: ToolDefinition<any, any>[], config: Record<string, unknown> = {}) {
  const registry = new ToolRegistry()
  for (const t of tools) registry.register(t)
  const executor = new ToolExecutor(registry)
  const agent = new Agent({ name: 'a', model: 'm', adapter, tools: tools.map((t) => t.name), ...config } as any, registry, executor)
  return { agent, registry, executor }
}

async function collect(gen: AsyncGenerator<StreamEvent>) {
  const events: StreamEvent[] = []
  for await (const e of gen) events.push(e)
  return events
}

const never = () => new Promise<never>(() => {})
const revoked = () => {
  const p = Proxy.revocable({}, {})
  p.revoke()
  return p.proxy
}

// ---------------------------------------------------------------------------------------------
describe('point 2: every tool a round started is awaited, whatever callback throws', () => {
  test('the issue scenario: onToolCall throws on a later block while an earlier onToolResult throws; the process survives', () => {
    const stdout = survives(`
      const reg = new api.ToolRegistry()
      const settled = []
      reg.register({ name: 'slow', description: 's', inputSchema: { type: 'object' }, execute: () => new Promise((_, rej) => setTimeout(() => { settled.push('slow'); rej(new Error('slow failed')) }, 50)) })
      reg.register({ name: 'fast', description: 'f', inputSchema: { type: 'object' }, execute: async () => { settled.push('fast'); return { data: 'ok' } } })
      let n = 0
      const adapter = { name: 'x', async chat() { n++; return n === 1
        ? { content: [{ type: 'tool_use', id: 'a', name: 'slow', input: {} }, { type: 'tool_use', id: 'b', name: 'nope', input: {} }, { type: 'tool_use', id: 'c', name: 'fast', input: {} }], usage: { input_tokens: 1, output_tokens: 1 } }
        : { content: [{ type: 'text', text: 'end' }], usage: { input_tokens: 1, output_tokens: 1 } } } }
      const runner = new api.AgentRunner(adapter, reg, new api.ToolExecutor(reg), { model: 'm', allowedTools: ['slow', 'fast'] })
      let calls = 0
      const outcome = await runner.run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }], {
        onToolCall: () => { calls++; if (calls === 3) throw new Error('onToolCall boom') },
        onToolResult: (name) => { throw new Error('onToolResult boom ' + name) },
      }).then(() => 'resolved', (e) => 'rejected: ' + e.message)
      console.log('OUTCOME', outcome, 'SETTLED-BEFORE-RETURN', settled.join(','))
    `)
    // The ungranted block's onToolResult threw first (synchronously, while starting), as the
    // original's Promise.all would report it; the third block's onToolCall threw before its tool
    // started; the slow tool had settled before the run failed.
    expect(stdout).toContain('OUTCOME rejected: onToolResult boom nope SETTLED-BEFORE-RETURN slow')
  })

  test('onToolResult throwing for every block, tools settling in reverse order: the first throw in time fails the run, after every tool settled', () => {
    const stdout = survives(`
      const reg = new api.ToolRegistry()
      const settled = []
      for (const [name, ms] of [['a', 60], ['b', 30], ['c', 5]]) {
        reg.register({ name, description: name, inputSchema: { type: 'object' }, execute: () => new Promise((res) => setTimeout(() => { settled.push(name); res({ data: name }) }, ms)) })
      }
      let n = 0
      const adapter = { name: 'x', async chat() { n++; return n === 1
        ? { content: ['a', 'b', 'c'].map((name, i) => ({ type: 'tool_use', id: 'i' + i, name, input: {} })), usage: { input_tokens: 1, output_tokens: 1 } }
        : { content: [{ type: 'text', text: 'end' }], usage: { input_tokens: 1, output_tokens: 1 } } } }
      const agent = new api.Agent({ name: 'a', model: 'm', adapter, tools: ['a', 'b', 'c'] }, reg, new api.ToolExecutor(reg))
      const res = await agent.run('go', { onToolResult: (name) => { throw 'thrown by ' + name } })
      console.log('RESULT', JSON.stringify({ success: res.success, output: res.output }), 'SETTLED', settled.join(','))
    `)
    expect(stdout).toContain('RESULT {"success":false,"output":"thrown by c"} SETTLED c,b,a')
  })

  test('a block whose onToolCall threw does not stop the later blocks from starting (as in the original), and the run waits for them', async () => {
    const ran: string[] = []
    const adapter = scripted(() => reply([call('1', 'a'), call('2', 'b'), call('3', 'c')]))
    const tools = ['a', 'b', 'c'].map((n) => jsonTool(n, async () => { await new Promise((r) => setTimeout(r, 10)); ran.push(n); return { data: n } }))
    const { agent } = setup(adapter, tools)
    const seen: string[] = []
    const res = await agent.run('go', { onToolCall: (name) => { seen.push(name); if (name === 'b') throw new Error('veto b') } })
    expect(res.success).toBe(false)
    expect(res.output).toBe('veto b')
    expect(seen).toEqual(['a', 'b', 'c'])
    expect(ran.sort()).toEqual(['a', 'c'])
  })

  test('executeBatch awaits every started call before rejecting', async () => {
    const registry = new ToolRegistry()
    let done = false
    registry.register(jsonTool('slow', () => new Promise((r) => setTimeout(() => { done = true; r({ data: 'late' }) }, 30))))
    const executor = new ToolExecutor(registry)
    const calls: any[] = [{ id: '1', name: 'slow', input: {} }, { id: '2', get name() { throw new Error('bad call') }, input: {} }]
    await expect(executor.executeBatch(calls, {} as any)).rejects.toThrow('bad call')
    expect(done).toBe(true)
  })
})

// ---------------------------------------------------------------------------------------------
describe('point 4: the driver executes the calls the gate judged, read once from the kernel', () => {
  function gated() {
    const ran: Array<[string, unknown]> = []
    const tools = [
      jsonTool('safe', async (i) => { ran.push(['safe', i]); return { data: 'safe ran' } }),
      jsonTool('danger', async (i) => { ran.push(['danger', i]); return { data: 'DANGER' } }),
    ]
    return { ran, tools }
  }

  test('a name getter answering differently on each read runs the granted name only, everywhere', async () => {
    const { ran, tools } = gated()
    let reads = 0
    const block = { type: 'tool_use', id: 'f', input: { q: 1 }, get name() { return reads++ === 0 ? 'safe' : 'danger' } }
    const registry = new ToolRegistry()
    for (const t of tools) registry.register(t)
    const runner = new AgentRunner(scripted(() => reply([block as any])), registry, new ToolExecutor(registry), { model: 'm', allowedTools: ['safe'] })
    const onToolCall: string[] = []
    const events = await collect(runner.stream([{ role: 'user', content: [text('go')] }], { onToolCall: (n) => onToolCall.push(n) }))
    expect(ran).toEqual([['safe', { q: 1 }]])
    expect(onToolCall).toEqual(['safe'])
    expect(events.filter((e) => e.type === 'tool_use').map((e) => e.data)).toEqual([{ type: 'tool_use', id: 'f', name: 'safe', input: { q: 1 } }])
    const done: any = events[events.length - 1].data
    expect(done.toolCalls).toEqual([{ toolName: 'safe', input: { q: 1 }, output: 'safe ran', duration: expect.any(Number) }])
  })

  test('for ordinary blocks the tool_use events equal the response\'s own blocks, a signature included', async () => {
    const blocks: any[] = [{ type: 'tool_use', id: 'g1', name: 'safe', input: { a: [1, { b: 'c' }] }, signature: 'sig' }, call('g2', 'safe', { '2': 1, z: 0 })]
    const registry = new ToolRegistry()
    registry.register(jsonTool('safe', async () => ({ data: 'ok' })))
    const runner = new AgentRunner(scripted(() => reply(blocks)), registry, new ToolExecutor(registry), { model: 'm', allowedTools: ['safe'] })
    const events = await collect(runner.stream([{ role: 'user', content: [text('go')] }]))
    expect(events.filter((e) => e.type === 'tool_use').map((e) => e.data)).toStrictEqual(blocks)
  })

  test('a tool_use whose toJSON hides it is neither executed nor answered; the visible one is', async () => {
    const { ran, tools } = gated()
    const hidden = { type: 'tool_use', id: 'h', name: 'danger', input: {}, toJSON: () => ({ type: 'text', text: 'nothing to see' }) }
    const { agent } = setup(scripted(() => reply([hidden as any, call('s', 'safe', { v: 2 })])), tools, { tools: ['safe'] })
    const res = await agent.run('go')
    expect(res.success).toBe(true)
    expect(ran).toEqual([['safe', { v: 2 }]])
    expect(res.messages[1].content).toEqual([{ type: 'tool_result', tool_use_id: 's', content: 'safe ran', is_error: undefined }])
  })

  test('an onMessage that rewrites the block after the gate decided cannot redirect the call', async () => {
    const { ran, tools } = gated()
    const { agent } = setup(scripted(() => reply([call('m', 'safe', { a: 1 })])), tools, { tools: ['safe'] })
    const res = await agent.run('go', {
      onMessage: (m) => {
        if (m.role !== 'assistant') return
        const b: any = m.content[0]
        if (b.type === 'tool_use') { b.name = 'danger'; b.input = { a: 'rewritten' } }
      },
    })
    expect(res.success).toBe(true)
    expect(ran).toEqual([['safe', { a: 1 }]])
  })

  test('an input whose toJSON differs from its fields: the tool receives what the kernel judged (the JSON)', async () => {
    let seen: any
    const input = { path: '/etc/shadow', toJSON: () => ({ path: 'notes.txt' }) }
    const { agent } = setup(scripted(() => reply([call('i', 't', input as any)])), [jsonTool('t', async (i) => { seen = i; return { data: 'ok' } })])
    const res = await agent.run('go')
    expect(res.success).toBe(true)
    expect(seen).toEqual({ path: 'notes.txt' })
    expect(res.toolCalls[0].input).toEqual({ path: 'notes.txt' })
  })

  test('a loop-detection stop answers the ids the kernel saw, not a second read', async () => {
    let reads = 0
    const block = { type: 'tool_use', name: 't', input: {}, get id() { return reads++ === 0 ? 'seen' : 'other' } }
    const adapter = scripted(() => reply([call('x', 't')]), () => reply([block as any]))
    const { agent } = setup(adapter, [jsonTool('t', async () => ({ data: 'ok' }))], { loopDetection: { maxRepetitions: 2, onLoopDetected: 'terminate' } })
    const res = await agent.run('go')
    expect(res.loopDetected).toBe(true)
    expect(res.messages[res.messages.length - 1].content).toEqual([
      { type: 'tool_result', tool_use_id: 'seen', content: 'Tool call not executed: the run was stopped by loop detection.', is_error: true },
    ])
  })
})

// ---------------------------------------------------------------------------------------------
describe('point 11: a JS adapter that never settles does not hold an aborted or timed-out run', () => {
  test('caller abort: the failed result of an interrupted LLM call (CONTRACT §4.3)', async () => {
    const ac = new AbortController()
    const adapter = scripted(() => { setTimeout(() => ac.abort(), 10); return never() })
    const { agent } = setup(adapter, [])
    const res = await agent.run('go', { abortSignal: ac.signal })
    expect(res).toEqual({ success: false, output: 'Request was aborted.', messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 }, toolCalls: [], structured: undefined })
    expect(agent.getState().status).toBe('error')
  })

  test('timeoutMs: failed, aborted and timedOut; prompt() keeps the history replayable (restored)', async () => {
    const adapter = scripted(() => reply([call('t1', 't')]), () => never())
    const { agent } = setup(adapter, [jsonTool('t', async () => ({ data: 'ok' }))], { timeoutMs: 60 })
    const res = await agent.prompt('go')
    expect(res).toMatchObject({ success: false, output: 'Request was aborted.', messages: [], aborted: true, timedOut: true })
    expect(agent.getHistory()).toEqual([])
    expect(adapter.calls).toBe(2)
  })

  test('stream(): the run ends with an error event', async () => {
    const ac = new AbortController()
    const registry = new ToolRegistry()
    const runner = new AgentRunner(scripted(() => { queueMicrotask(() => ac.abort()); return never() }), registry, new ToolExecutor(registry), { model: 'm' })
    const events = await collect(runner.stream([{ role: 'user', content: [text('go')] }], { abortSignal: ac.signal }))
    expect(events.map((e) => e.type)).toEqual(['error'])
    expect((events[0].data as Error).message).toBe('Request was aborted.')
  })

  test('an adapter that honours the signal keeps its own error', async () => {
    const ac = new AbortController()
    const adapter = scripted((_m, options) => new Promise((_, reject) => {
      options.abortSignal.addEventListener('abort', () => setTimeout(() => reject(new Error('my adapter saw the abort')), 5))
      setTimeout(() => ac.abort(), 10)
    }))
    const { agent } = setup(adapter, [])
    const res = await agent.run('go', { abortSignal: ac.signal })
    expect(res.output).toBe('my adapter saw the abort')
  })

  test('a never-settling summary call, compress or onLoopDetected is abandoned too', async () => {
    const history: LLMMessage[] = []
    for (let i = 0; i < 4; i++) history.push({ role: i % 2 ? 'assistant' : 'user', content: [text('x'.repeat(400))] })
    const summarize = setup({ name: 's', chat: never } as any, [], { contextStrategy: { type: 'summarize', maxTokens: 1 } })
    const ac1 = new AbortController()
    setTimeout(() => ac1.abort(), 10)
    const registry = new ToolRegistry()
    const r1 = new AgentRunner({ name: 's', chat: never } as any, registry, new ToolExecutor(registry), { model: 'm', contextStrategy: { type: 'summarize', maxTokens: 1 } })
    await expect(r1.run(history, { abortSignal: ac1.signal })).rejects.toThrow('Request was aborted.')
    void summarize

    const ac2 = new AbortController()
    setTimeout(() => ac2.abort(), 10)
    const r2 = new AgentRunner(scripted(() => reply([text('x')])), registry, new ToolExecutor(registry), { model: 'm', contextStrategy: { type: 'custom', compress: never } as any })
    await expect(r2.run(history, { abortSignal: ac2.signal })).rejects.toThrow('The run was aborted while contextStrategy.compress had not settled')

    const ac3 = new AbortController()
    registry.register(jsonTool('t', async () => ({ data: 'ok' })))
    const r3 = new AgentRunner(scripted(() => reply([call('1', 't')]), () => reply([call('2', 't')])), registry, new ToolExecutor(registry), {
      model: 'm', allowedTools: ['t'], loopDetection: { maxRepetitions: 2, onLoopDetected: () => { setTimeout(() => ac3.abort(), 5); return never() } },
    })
    await expect(r3.run(history, { abortSignal: ac3.signal })).rejects.toThrow('The run was aborted while loopDetection.onLoopDetected had not settled')
  })
})

// ---------------------------------------------------------------------------------------------
describe('point 12: ToolExecutor.execute never rejects for a tool fault', () => {
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' } } as any
  async function thrown(value: () => unknown, extra: Partial<ToolDefinition<any, any>> = {}) {
    const registry = new ToolRegistry()
    registry.register({ ...jsonTool('t', async () => { throw value() }), ...extra })
    return new ToolExecutor(registry).execute('t', {}, ctx)
  }

  test.each([
    ['a revoked Proxy', revoked, 'Tool "t" threw an error: [object that cannot be converted to text]'],
    ['an object whose toJSON and toString throw', () => ({ toJSON() { throw new Error('j') }, toString() { throw new Error('s') } }), 'Tool "t" threw an error: [object Object]'],
    ['an Error whose message getter throws', () => { const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw new Error('g') } }); return e }, 'Tool "t" threw an error: [object Error]'],
    ['an Error whose message is a Symbol', () => Object.assign(new Error('x'), { message: Symbol('m') }), 'Tool "t" threw an error: Symbol(m)'],
    ['a cyclic object', () => { const o: any = {}; o.o = o; return o }, 'Tool "t" threw an error: [object Object]'],
    ['a BigInt', () => 12n, 'Tool "t" threw an error: 12'],
  ])('throwing %s resolves with an isError result', async (_name, value, data) => {
    await expect(thrown(value)).resolves.toEqual({ data, isError: true })
  })

  test('a tool whose maxOutputChars getter throws still gets its error text', async () => {
    const registry = new ToolRegistry()
    const t: any = jsonTool('t', async () => { throw new Error('boom') })
    Object.defineProperty(t, 'maxOutputChars', { get() { throw new Error('getter') } })
    registry.register(t)
    await expect(new ToolExecutor(registry).execute('t', {}, ctx)).resolves.toEqual({ data: 'Tool "t" threw an error: boom', isError: true })
  })

  test('in a run, a result whose fields throw or change on each read answers the call instead of failing the run', async () => {
    let reads = 0
    const tools = [
      jsonTool('throws', async () => ({ get data(): string { throw new Error('data getter') } })),
      jsonTool('flips', async () => ({ get data() { return reads++ === 0 ? 'checked' : { toString() { throw new Error('no') } } } })),
    ]
    const { agent } = setup(scripted(() => reply([call('1', 'throws'), call('2', 'flips')])), tools)
    const res = await agent.run('go')
    expect(res.success).toBe(true)
    const results: any[] = res.messages[1].content
    expect(results[0]).toEqual({ type: 'tool_result', tool_use_id: '1', content: 'Tool "throws" threw an error: data getter', is_error: true })
    expect(results[1].tool_use_id).toBe('2')
    expect(typeof results[1].content).toBe('string')
    expect(() => JSON.stringify(res.messages)).not.toThrow()
  })
})

// ---------------------------------------------------------------------------------------------
describe('point 13: clear errors for deep inputs and half surrogate pairs; non-finite usage is 0', () => {
  test('a tool input nested too deeply to write as JSON names the cause', async () => {
    let deep: any = {}
    for (let i = 0; i < 20000; i++) deep = { a: deep }
    const { agent } = setup(scripted(() => reply([call('d', 't', deep)])), [jsonTool('t', async () => ({ data: 'ran' }))])
    const res = await agent.run('go')
    expect(res.success).toBe(false)
    expect(res.output).toBe('LLM adapter returned a malformed response: "content" cannot be written as JSON (it is nested too deeply: Maximum call stack size exceeded)')
  })

  test('cyclic content and BigInts are named too', async () => {
    const cyc: any[] = [text('a')]
    cyc.push(cyc)
    const a = setup(scripted(() => reply(cyc as any)), [])
    expect((await a.agent.run('go')).output).toBe('LLM adapter returned a malformed response: "content" cannot be written as JSON (it holds a circular reference)')
    const b = setup(scripted(() => reply([call('b', 't', { n: 1n as any })])), [jsonTool('t', async () => ({ data: 'x' }))])
    expect((await b.agent.run('go')).output).toBe('LLM adapter returned a malformed response: "content" cannot be written as JSON (it holds a BigInt)')
  })

  test('an input a few thousand levels deep still runs, with loop detection on, in a child process', () => {
    const r = child(`
      const reg = new api.ToolRegistry()
      // A Zod-like schema that takes anything (a JSON Schema validator stops at 128 levels).
      reg.register({ name: 't', description: 't', inputSchema: { safeParse: (x) => ({ success: true, data: x }), _def: { typeName: 'ZodAny' } }, execute: async () => ({ data: 'ran' }) })
      let deep = {}
      for (let i = 0; i < 3000; i++) deep = { a: deep }
      let n = 0
      const adapter = { name: 'x', async chat() { n++; return n < 4
        ? { content: [{ type: 'tool_use', id: 'i' + n, name: 't', input: deep }], usage: { input_tokens: 1, output_tokens: 1 } }
        : { content: [{ type: 'text', text: 'end' }], usage: { input_tokens: 1, output_tokens: 1 } } } }
      const agent = new api.Agent({ name: 'a', model: 'm', adapter, tools: ['t'], loopDetection: { maxRepetitions: 2, onLoopDetected: 'terminate' } }, reg, new api.ToolExecutor(reg))
      const res = await agent.run('go')
      console.log('RESULT', JSON.stringify({ success: res.success, loopDetected: res.loopDetected, first: res.messages[1].content[0].content }))
    `)
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('RESULT {"success":true,"loopDetected":true,"first":"ran"}')
  })

  test('a model output nested tens of thousands deep goes through extractJSON in a worker with a small stack', () => {
    const r = child(`
      const { Worker } = require('node:worker_threads')
      const code = 'const { extractJSON } = require(' + JSON.stringify(${JSON.stringify(INDEX)}) + '); const d = 50000; const v = extractJSON("[".repeat(d) + "]".repeat(d)); let n = 0; for (let x = v; Array.isArray(x) && x.length; x = x[0]) n++; require("node:worker_threads").parentPort.postMessage(n)'
      const w = new Worker(code, { eval: true, resourceLimits: { stackSizeMb: 1 } })
      const depth = await new Promise((resolve, reject) => { w.on('message', resolve); w.on('error', reject) })
      console.log('DEPTH', depth)
    `)
    expect(r.stderr).toBe('')
    expect(r.signal).toBeNull()
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('DEPTH 49999')
  })

  test.each(['name', 'id'])('a tool_use %s holding half a surrogate pair fails with that reason', async (field) => {
    const block: any = call('i', 't')
    block[field] = `${block[field]}\ud800`
    const { agent } = setup(scripted(() => reply([block])), [jsonTool('t', async () => ({ data: 'ran' }))])
    const res = await agent.run('go')
    expect(res.success).toBe(false)
    expect(res.output).toBe(`LLM adapter returned a malformed response: the "${field}" of a "tool_use" block holds half a UTF-16 surrogate pair (a lone \\uD800-\\uDFFF), which is not valid Unicode`)
  })

  test('a text holding half a surrogate pair is text (U+FFFD in the kernel), not a malformed response', async () => {
    const { agent } = setup(scripted(() => reply([text('cut \ud83d')])), [])
    const res = await agent.run('go')
    expect(res.success).toBe(true)
    expect(res.output).toBe('cut \ufffd')
  })

  test('JSON Schema validation takes half a surrogate pair and says when an input is too deep', async () => {
    const registry = new ToolRegistry()
    registry.register({ name: 't', description: 't', inputSchema: { type: 'object', properties: { s: { type: 'string' } } }, execute: async (i: any) => ({ data: `got ${i.s.length}` }) } as any)
    const ex = new ToolExecutor(registry)
    const ctx = { agent: { name: 'a', role: 'r', model: 'm' } } as any
    await expect(ex.execute('t', { s: 'x\udc00' }, ctx)).resolves.toEqual({ data: 'got 2' })
    let deep: any = 1
    for (let i = 0; i < 200; i++) deep = { a: deep }
    await expect(ex.execute('t', { deep }, ctx)).resolves.toEqual({ data: 'Invalid input for tool "t":\n  • : input is nested too deeply to validate (more than 128 levels)', isError: true })
    const cyc: any = {}
    cyc.c = cyc
    const r = await ex.execute('t', cyc, ctx)
    expect(r.isError).toBe(true)
    expect(r.data).toMatch(/^Invalid input for tool "t":\n {2}• : input cannot be written as JSON: Converting circular structure to JSON/)
  })

  test('NaN and Infinity token counts (turns and tools) count as 0', async () => {
    const adapter = scripted(
      () => reply([call('1', 't')], { input_tokens: NaN, output_tokens: Infinity } as any),
      () => reply([text('done')], { input_tokens: 3, output_tokens: -Infinity } as any),
    )
    const tools = [jsonTool('t', async () => ({ data: 'ok', metadata: { tokenUsage: { input_tokens: Infinity, output_tokens: 4 } } }))]
    const { agent } = setup(adapter, tools, { maxTokenBudget: 100 })
    const res = await agent.run('go')
    expect(res.success).toBe(true)
    expect(res.tokenUsage).toEqual({ input_tokens: 3, output_tokens: 4 })
    expect(agent.getState().tokenUsage).toEqual({ input_tokens: 3, output_tokens: 4 })
    expect(res.budgetExceeded).toBeUndefined()
  })
})

test('zod tools keep working through the kernel copy (parsed input, defaults applied)', async () => {
  const seen: unknown[] = []
  const t = defineTool({ name: 'z', description: 'z', inputSchema: z.object({ a: z.number(), b: z.string().default('d') }), execute: async (i) => { seen.push(i); return { data: 'ok' } } })
  const { agent } = setup(scripted(() => reply([call('1', 'z', { a: 1 })])), [t as any])
  const res = await agent.run('go')
  expect(res.success).toBe(true)
  expect(seen).toEqual([{ a: 1, b: 'd' }])
  expect(res.toolCalls[0].input).toEqual({ a: 1 })
})

test('a long-lived caller signal keeps no listener per run once the runs are over (timeoutMs merges it)', async () => {
  const ac = new AbortController()
  let listeners = 0
  const add = ac.signal.addEventListener.bind(ac.signal)
  const remove = ac.signal.removeEventListener.bind(ac.signal)
  ac.signal.addEventListener = ((type: string, fn: any, o?: any) => { listeners += 1; add(type, fn, o) }) as any
  ac.signal.removeEventListener = ((type: string, fn: any, o?: any) => { listeners -= 1; remove(type, fn, o) }) as any
  const { agent } = setup(scripted(() => reply([text('a')]), () => reply([text('b')])), [], { timeoutMs: 60_000 })
  for (let i = 0; i < 3; i++) expect((await agent.run('go', { abortSignal: ac.signal })).success).toBe(true)
  for await (const _ of agent.stream('go', { abortSignal: ac.signal })) { /* drain */ }
  expect(listeners).toBe(0)
})
