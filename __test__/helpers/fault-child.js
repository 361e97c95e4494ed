'use strict'
// The fault corpus (issue 13): misbehaving JS adapters, tools and callbacks, each run through the
// public API. Run as `node --unhandled-rejections=throw fault-child.js <case>…` (no names: all);
// it prints one `FAULT-CASE <json>` line per case, then `FAULT-DONE`. A case that kills the
// process leaves no line for itself and no FAULT-DONE, so the parent (fault-corpus.test.ts)
// sees it. Required instead of run, it only exports the case names.
//
// Every case must end (a watchdog reports a hang), leave a replayable history (every tool_use
// answered by a tool_result in the next message, as a provider would receive it: through JSON),
// and pass its own check.

const path = require('node:path')

const WATCHDOG_MS = 10000

const usage = (i = 1, o = 1) => ({ input_tokens: i, output_tokens: o })
const text = (t) => ({ type: 'text', text: t })
const call = (id, name, input = {}) => ({ type: 'tool_use', id, name, input })
const reply = (content, u = usage()) => ({ id: 'r', model: 'm', stop_reason: 'end_turn', usage: u, content })
const revoked = () => {
  const p = Proxy.revocable({}, {})
  p.revoke()
  return p.proxy
}
const unprintable = () => ({
  toJSON() { throw new Error('no JSON') },
  toString() { throw new Error('no string') },
  valueOf() { throw new Error('no value') },
})
const cyclic = () => {
  const o = { a: 1 }
  o.self = o
  return o
}
const never = () => new Promise(() => {})
/** A native promise rejecting with `err` after `ms`, whose `then` and `catch` properties lie
 *  (no-ops): only the engine's own then can attach a handler to it. */
const lyingRejection = (err, ms = 10) => {
  const p = new Promise((_, reject) => setTimeout(() => reject(err), ms))
  p.then = () => undefined
  p.catch = () => undefined
  return p
}

/** An adapter answering `first` (a value or a function of the call) on the first call and a
 *  plain text afterwards. */
function adapter(first, then = reply([text('final')])) {
  let n = 0
  return {
    name: 'fault',
    calls: () => n,
    chat(messages, options) {
      n += 1
      if (n === 1) return typeof first === 'function' ? first(messages, options) : first
      return Promise.resolve(typeof then === 'function' ? then(messages, options, n) : then)
    },
  }
}
/** A first answer calling `names` (tool_use ids t0, t1, …). */
const calling = (...names) => reply(names.map((n, i) => call(`t${i}`, n, { i })))

function okTool(name = 'ok') {
  return { name, description: name, inputSchema: { type: 'object' }, execute: async () => ({ data: `${name} ran` }) }
}
function tool(name, execute) {
  return { name, description: name, inputSchema: { type: 'object' }, execute }
}

const expectFailed = (o, re) => {
  const f = []
  if (o.result.success !== false) f.push(`expected a failed run, got success=${o.result.success}`)
  if (re && !re.test(String(o.result.output))) f.push(`output ${JSON.stringify(String(o.result.output).slice(0, 200))} does not match ${re}`)
  return f
}
const expectOk = (o, re) => {
  const f = []
  if (o.result.success !== true) f.push(`expected success, got output ${JSON.stringify(String(o.result.output).slice(0, 300))}`)
  if (re && !re.test(JSON.stringify(o.result.messages))) f.push(`messages do not match ${re}`)
  return f
}
/** The first tool result's text of a successful run. */
const firstResult = (o) => {
  for (const m of o.result.messages) {
    for (const b of Array.isArray(m.content) ? m.content : []) if (b && b.type === 'tool_result') return b.content
  }
  return undefined
}
const expectToolResult = (o, re) => {
  const f = expectOk(o)
  const r = firstResult(o)
  if (typeof r !== 'string' || !re.test(r)) f.push(`tool result ${JSON.stringify(r)} does not match ${re}`)
  return f
}

// name → () => { adapter, tools?, config?, runOptions?, method?, check?(outcome) → failures[] }
const CASES = {
  // ---- adapters: what chat throws, rejects with or returns
  'chat throws a string': () => ({ adapter: adapter(() => { throw 'plain string' }), check: (o) => expectFailed(o, /^plain string$/) }),
  'chat throws undefined': () => ({ adapter: adapter(() => { throw undefined }), check: (o) => expectFailed(o, /^undefined$/) }),
  'chat rejects with undefined': () => ({ adapter: adapter(() => Promise.reject(undefined)), check: (o) => expectFailed(o, /^undefined$/) }),
  'chat rejects with null': () => ({ adapter: adapter(() => Promise.reject(null)), check: (o) => expectFailed(o, /^null$/) }),
  'chat rejects with a revoked Proxy': () => ({ adapter: adapter(() => Promise.reject(revoked())), check: (o) => expectFailed(o, /cannot be converted to text/) }),
  'chat rejects with an object whose toJSON and toString throw': () => ({ adapter: adapter(() => Promise.reject(unprintable())), check: (o) => expectFailed(o, /^\[object Object\]$/) }),
  'chat rejects with a Symbol': () => ({ adapter: adapter(() => Promise.reject(Symbol('sym'))), check: (o) => expectFailed(o, /Symbol\(sym\)/) }),
  'chat rejects with a BigInt': () => ({ adapter: adapter(() => Promise.reject(10n)), check: (o) => expectFailed(o, /^10$/) }),
  'chat rejects with an Error whose message is a Symbol': () => ({
    adapter: adapter(() => Promise.reject(Object.assign(new Error('x'), { message: Symbol('m') }))),
    check: (o) => expectFailed(o),
  }),
  'chat returns undefined': () => ({ adapter: adapter(undefined), check: (o) => expectFailed(o, /malformed response/) }),
  'chat returns null': () => ({ adapter: adapter(() => Promise.resolve(null)), check: (o) => expectFailed(o, /malformed response/) }),
  'chat returns a number': () => ({ adapter: adapter(() => Promise.resolve(42)), check: (o) => expectFailed(o, /malformed response/) }),
  'chat returns a revoked Proxy': () => ({ adapter: adapter(() => revoked()), check: (o) => expectFailed(o) }),
  'chat returns a Proxy whose every read throws': () => ({
    adapter: adapter(() => new Proxy({}, { get() { throw new Error('trap') } })),
    check: (o) => expectFailed(o, /trap/),
  }),
  'chat returns a thenable whose then throws': () => ({ adapter: adapter(() => ({ then() { throw new Error('then threw') } })), check: (o) => expectFailed(o, /then threw/) }),
  'chat returns cyclic content': () => ({ adapter: adapter(() => { const c = [text('a')]; c.push(c); return reply(c) }), check: (o) => expectFailed(o, /circular reference/) }),
  'chat returns a BigInt in a tool input': () => ({ adapter: adapter(() => reply([call('t0', 'ok', { n: 1n })])), tools: [okTool()], check: (o) => expectFailed(o, /BigInt/) }),
  'chat returns a Symbol as text': () => ({ adapter: adapter(() => reply([{ type: 'text', text: Symbol('s') }])), check: (o) => expectFailed(o, /malformed response/) }),
  'chat returns a content getter that throws': () => ({
    adapter: adapter(() => ({ usage: usage(), get content() { throw new Error('content getter') } })),
    check: (o) => expectFailed(o, /content getter/),
  }),
  'chat returns a usage getter that throws': () => ({
    adapter: adapter(() => ({ content: [text('x')], get usage() { throw new Error('usage getter') } })),
    check: (o) => expectFailed(o, /usage getter/),
  }),
  'chat returns NaN and Infinity token counts': () => ({
    adapter: adapter(() => reply([call('t0', 'ok')], { input_tokens: NaN, output_tokens: Infinity }), reply([text('x')], { input_tokens: 2, output_tokens: -Infinity })),
    tools: [okTool()],
    config: { maxTokenBudget: 1000 },
    check: (o) => {
      const f = expectOk(o)
      const u = o.result.tokenUsage
      if (u.input_tokens !== 2 || u.output_tokens !== 0) f.push(`totals ${JSON.stringify(u)}, expected 2 / 0`)
      return f
    },
  }),
  'chat returns a null block': () => ({ adapter: adapter(() => reply([null])), check: (o) => expectFailed(o, /malformed response/) }),
  'chat returns a 16 MB text': () => ({
    adapter: adapter(() => reply([text('x'.repeat(16 << 20))])),
    check: (o) => (o.result.output.length === 16 << 20 ? expectOk(o) : ['output was not the 16 MB text']),
  }),
  'chat returns a tool input nested 20000 levels deep': () => {
    let deep = {}
    for (let i = 0; i < 20000; i++) deep = { a: deep }
    return { adapter: adapter(() => reply([call('t0', 'ok', deep)])), tools: [okTool()], check: (o) => expectFailed(o, /nested too deeply/) }
  },
  'chat returns a tool input nested 3000 levels deep (loop detection on)': () => {
    let deep = {}
    for (let i = 0; i < 3000; i++) deep = { a: deep }
    return {
      adapter: adapter(() => reply([call('t0', 'ok', deep)]), (m, o, n) => (n < 4 ? reply([call(`t${n}`, 'ok', deep)]) : reply([text('x')]))),
      tools: [okTool()],
      config: { loopDetection: { maxRepetitions: 2 } },
      check: (o) => (o.result.output === 'x' || o.result.loopDetected ? [] : [`unexpected end: ${o.result.output}`]),
    }
  },
  'chat returns a tool name holding half a surrogate pair': () => ({
    adapter: adapter(() => reply([call('t0', 'ok\ud800')])),
    tools: [okTool()],
    check: (o) => expectFailed(o, /"name" of a "tool_use" block holds half a UTF-16 surrogate pair/),
  }),
  'chat returns a text holding half a surrogate pair': () => ({ adapter: adapter(() => reply([text('cut \ud83d')])), check: (o) => expectOk(o) }),
  'chat throws synchronously (not async)': () => ({ adapter: { name: 'sync', chat() { throw new TypeError('sync throw') } }, check: (o) => expectFailed(o, /sync throw/) }),
  'chat returns 300 tool calls in one turn': () => ({
    adapter: adapter(() => reply(Array.from({ length: 300 }, (_, i) => call(`c${i}`, i % 2 ? 'ok' : 'nope')))),
    tools: [okTool()],
    check: (o) => (o.result.toolCalls.length === 300 ? expectOk(o) : [`${o.result.toolCalls.length} records`]),
  }),

  // ---- the gate sees the JSON, the driver must execute what the gate saw
  'a tool_use name getter that flips after the first read runs nothing ungranted': () => {
    let reads = 0
    const block = { type: 'tool_use', id: 'f', input: {}, get name() { return reads++ === 0 ? 'ok' : 'danger' } }
    return {
      adapter: adapter(() => reply([block])),
      tools: [okTool(), tool('danger', async () => { throw new Error('DANGER RAN') })],
      config: { tools: ['ok'] },
      check: (o) => (JSON.stringify(o.result.toolCalls).includes('danger') || /DANGER/.test(JSON.stringify(o.result.messages)) ? ['the ungranted tool ran'] : expectOk(o)),
    }
  },
  'a tool_use hidden by toJSON is not executed': () => {
    const hidden = { type: 'tool_use', id: 'h', name: 'danger', input: {}, toJSON: () => ({ type: 'text', text: 'nothing' }) }
    return {
      adapter: adapter(() => reply([hidden, call('s', 'ok')])),
      tools: [okTool(), tool('danger', async () => { throw new Error('DANGER RAN') })],
      config: { tools: ['ok'] },
      check: (o) => {
        const f = expectOk(o)
        if (o.result.toolCalls.map((c) => c.toolName).join() !== 'ok') f.push(`records ${JSON.stringify(o.result.toolCalls)}`)
        return f
      },
    }
  },
  'a tool_use input whose toJSON differs from its fields runs the JSON': () => {
    const input = { path: '/etc/shadow', toJSON: () => ({ path: 'safe.txt' }) }
    let seen
    return {
      adapter: adapter(() => reply([call('t0', 'ok', input)])),
      tools: [tool('ok', async (i) => { seen = i; return { data: JSON.stringify(i) } })],
      check: (o) => (seen && seen.path === 'safe.txt' && !('toJSON' in seen) ? expectOk(o) : [`tool saw path ${seen && seen.path}`]),
    }
  },

  // ---- adapters that never settle
  'chat never settles, the caller aborts': () => {
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 50)
    return { adapter: adapter(never), runOptions: { abortSignal: ac.signal }, check: (o) => expectFailed(o, /^Request was aborted\.$/) }
  },
  'chat never settles, timeoutMs fires': () => ({
    adapter: adapter(never),
    config: { timeoutMs: 50 },
    check: (o) => {
      const f = expectFailed(o, /^Request was aborted\.$/)
      if (o.result.timedOut !== true || o.result.aborted !== true) f.push('timedOut / aborted not set')
      return f
    },
  }),
  'chat never settles on the second turn, with prompt()': () => ({
    adapter: adapter(() => calling('ok'), never),
    tools: [okTool()],
    config: { timeoutMs: 100 },
    method: 'prompt',
    check: (o) => {
      const f = expectFailed(o, /^Request was aborted\.$/)
      if (o.history.length !== 0) f.push(`history kept ${o.history.length} messages`)
      return f
    },
  }),
  'the summary call never settles, timeoutMs fires': () => ({
    adapter: { name: 'sum', chat: never },
    config: { timeoutMs: 50, contextStrategy: { type: 'summarize', maxTokens: 1 } },
    method: 'prompt',
    history: [
      { role: 'user', content: [text('a'.repeat(400))] }, { role: 'assistant', content: [text('b'.repeat(400))] },
      { role: 'user', content: [text('c'.repeat(400))] }, { role: 'assistant', content: [text('d'.repeat(400))] },
    ],
    check: (o) => expectFailed(o, /^Request was aborted\.$/),
  }),

  // ---- tools: what execute throws, rejects with or returns
  'tool throws a string': () => ({ adapter: adapter(calling('t')), tools: [tool('t', () => { throw 'str' })], check: (o) => expectToolResult(o, /^Tool "t" threw an error: str$/) }),
  'tool throws undefined': () => ({ adapter: adapter(calling('t')), tools: [tool('t', () => { throw undefined })], check: (o) => expectToolResult(o, /^Tool "t" threw an error: undefined$/) }),
  'tool rejects with undefined': () => ({ adapter: adapter(calling('t')), tools: [tool('t', () => Promise.reject(undefined))], check: (o) => expectToolResult(o, /threw an error: undefined$/) }),
  'tool throws a revoked Proxy': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => { throw revoked() })], check: (o) => expectToolResult(o, /threw an error: \[object that cannot be converted to text\]$/) }),
  'tool throws an object whose toJSON and toString throw': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => { throw unprintable() })], check: (o) => expectToolResult(o, /threw an error: \[object Object\]$/) }),
  'tool throws a cyclic object': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => { throw cyclic() })], check: (o) => expectToolResult(o, /threw an error: \[object Object\]$/) }),
  'tool throws a BigInt': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => { throw 7n })], check: (o) => expectToolResult(o, /threw an error: 7$/) }),
  'tool throws a Symbol': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => { throw Symbol('s') })], // CONTRACT §9.2 step 8: JSON serialisation, and a Symbol serialises to undefined.
    check: (o) => expectToolResult(o, /^Tool "t" threw an error: undefined$/) }),
  'tool throws an Error whose message getter throws': () => ({
    adapter: adapter(calling('t')),
    tools: [tool('t', async () => { const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw new Error('getter') } }); throw e })],
    check: (o) => expectToolResult(o, /^Tool "t" threw an error: /),
  }),
  'tool returns undefined': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => undefined)], check: (o) => expectToolResult(o, /Cannot read properties of undefined/) }),
  'tool returns a revoked Proxy': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => revoked())], check: (o) => expectToolResult(o, /^Tool "t" threw an error: .*revoked/) }),
  'tool returns data through a throwing getter': () => ({
    adapter: adapter(calling('t')),
    tools: [tool('t', async () => ({ get data() { throw new Error('data getter') } }))],
    check: (o) => expectToolResult(o, /data getter/),
  }),
  'tool returns a data getter that changes type after validation': () => {
    let reads = 0
    return {
      adapter: adapter(calling('t')),
      tools: [tool('t', async () => ({ get data() { return reads++ === 0 ? 'fine' : unprintable() } }))],
      check: (o) => expectOk(o),
    }
  },
  'tool returns BigInt data': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => ({ data: 5n }))], check: (o) => expectToolResult(o, /"data" must be a string, got bigint/) }),
  'tool returns Symbol data': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => ({ data: Symbol('d') }))], check: (o) => expectToolResult(o, /"data" must be a string, got symbol/) }),
  'tool returns a 32 MB string': () => ({
    adapter: adapter(calling('t')),
    tools: [tool('t', async () => ({ data: 'y'.repeat(32 << 20) }))],
    check: (o) => (firstResult(o)?.length === 32 << 20 ? expectOk(o) : ['the result was not kept whole']),
  }),
  'tool returns a thenable whose then throws': () => ({ adapter: adapter(calling('t')), tools: [tool('t', async () => ({ then() { throw new Error('bad then') } }))], check: (o) => expectToolResult(o, /bad then/) }),
  'tool returns NaN tokenUsage and a throwing isError getter': () => ({
    adapter: adapter(calling('t', 'u')),
    tools: [
      tool('t', async () => ({ data: 'x', metadata: { tokenUsage: { input_tokens: NaN, output_tokens: Infinity } } })),
      tool('u', async () => ({ data: 'y', get isError() { throw new Error('isError getter') } })),
    ],
    check: (o) => {
      const f = expectOk(o)
      if (!Number.isFinite(o.result.tokenUsage.input_tokens) || !Number.isFinite(o.result.tokenUsage.output_tokens)) f.push('totals not finite')
      return f
    },
  }),
  'tool execute is a sync function that throws': () => ({ adapter: adapter(calling('t')), tools: [tool('t', () => { throw new RangeError('sync') })], check: (o) => expectToolResult(o, /threw an error: sync$/) }),
  'tool never settles, the caller aborts': () => {
    const ac = new AbortController()
    return {
      adapter: adapter(calling('t', 'ok')),
      tools: [tool('t', () => { setTimeout(() => ac.abort(), 20); return never() }), okTool()],
      runOptions: { abortSignal: ac.signal },
      check: (o) => {
        const f = expectOk(o)
        if (!/was aborted during execution/.test(JSON.stringify(o.result.messages))) f.push('no aborted tool result')
        if (o.result.aborted !== true) f.push('aborted not set')
        return f
      },
    }
  },
  'tool schema safeParse throws a revoked Proxy': () => ({
    adapter: adapter(calling('t')),
    tools: [{ name: 't', description: 't', inputSchema: { safeParse() { throw revoked() }, _def: { typeName: 'ZodAny' } }, execute: async () => ({ data: 'no' }) }],
    check: (o) => expectToolResult(o, /cannot be converted to text/),
  }),

  // ---- callbacks
  'onToolCall throws on the second block while the first block\'s onToolResult throws': () => {
    let n = 0
    return {
      adapter: adapter(calling('slow', 'nope', 'ok')),
      tools: [tool('slow', () => new Promise((_, rej) => setTimeout(() => rej(new Error('slow failed')), 30))), okTool()],
      runOptions: {
        onToolCall: () => { n += 1; if (n === 2) throw new Error('onToolCall boom') },
        onToolResult: (name) => { throw new Error(`onToolResult boom ${name}`) },
      },
      check: (o) => expectFailed(o, /^onToolCall boom$/),
    }
  },
  'onToolResult throws a string for every block, tools settle in reverse order': () => ({
    adapter: adapter(calling('a', 'b', 'c')),
    tools: ['a', 'b', 'c'].map((nm, i) => tool(nm, () => new Promise((res) => setTimeout(() => res({ data: nm }), 40 - i * 15)))),
    runOptions: { onToolResult: (name) => { throw `onToolResult ${name}` } },
    check: (o) => expectFailed(o, /^onToolResult c$/),
  }),
  'onToolCall throws a revoked Proxy': () => ({ adapter: adapter(calling('ok', 'ok')), tools: [okTool()], runOptions: { onToolCall: () => { throw revoked() } }, check: (o) => expectFailed(o, /cannot be converted to text/) }),
  'onMessage throws undefined': () => ({ adapter: adapter(calling('ok')), tools: [okTool()], runOptions: { onMessage: () => { throw undefined } }, check: (o) => expectFailed(o, /^undefined$/) }),
  'onWarning throws an object whose toString throws': () => ({
    adapter: adapter(reply([text('no tools')])),
    tools: [okTool()],
    runOptions: { onWarning: () => { throw unprintable() } },
    check: (o) => expectFailed(o, /^\[object Object\]$/),
  }),
  'onTrace throws and rejects (isolated)': () => {
    let k = 0
    return {
      adapter: adapter(calling('ok')),
      tools: [okTool()],
      runOptions: { onTrace: () => { k += 1; if (k % 2) throw revoked(); return Promise.reject(undefined) } },
      check: (o) => expectOk(o),
    }
  },
  'onTrace returns a never-settling promise': () => ({ adapter: adapter(calling('ok')), tools: [okTool()], runOptions: { onTrace: never }, check: (o) => expectOk(o) }),
  'onLoopDetected throws a Symbol': () => ({
    adapter: adapter(calling('ok'), () => calling('ok')),
    tools: [okTool()],
    config: { loopDetection: { maxRepetitions: 2, onLoopDetected: () => { throw Symbol('loop') } } },
    check: (o) => expectFailed(o, /Symbol\(loop\)/),
  }),
  'onLoopDetected never settles, timeoutMs fires': () => ({
    adapter: adapter(calling('ok'), () => calling('ok')),
    tools: [okTool()],
    config: { timeoutMs: 100, loopDetection: { maxRepetitions: 2, onLoopDetected: never } },
    check: (o) => expectFailed(o, /aborted while loopDetection\.onLoopDetected had not settled/),
  }),
  'contextStrategy.compress throws a number': () => ({
    adapter: adapter(calling('ok')),
    tools: [okTool()],
    config: { contextStrategy: { type: 'custom', compress: () => { throw 404 } } },
    check: (o) => expectFailed(o, /^404$/),
  }),
  'contextStrategy.compress never settles, the caller aborts': () => {
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 30)
    return {
      adapter: adapter(calling('ok')),
      tools: [okTool()],
      config: { contextStrategy: { type: 'custom', compress: never } },
      runOptions: { abortSignal: ac.signal },
      check: (o) => expectFailed(o, /aborted while contextStrategy\.compress had not settled/),
    }
  },
  'contextStrategy.compress returns a cyclic array': () => ({
    adapter: adapter(calling('ok')),
    tools: [okTool()],
    config: { contextStrategy: { type: 'custom', compress: () => { const a = [{ role: 'user', content: [text('x')] }]; a.push(a); return a } } },
    check: (o) => expectFailed(o),
  }),
  'beforeRun throws a revoked Proxy': () => ({ adapter: adapter(reply([text('x')])), config: { beforeRun: () => { throw revoked() } }, method: 'prompt', check: (o) => expectFailed(o, /cannot be converted to text/) }),
  'afterRun rejects with undefined': () => ({ adapter: adapter(reply([text('x')])), config: { afterRun: () => Promise.reject(undefined) }, method: 'prompt', check: (o) => expectFailed(o, /^undefined$/) }),
  // Issue 30: a hook that never settles is left behind after the run's abort, its late outcome
  // still handled; a notification's rejected promise is no unhandled rejection.
  'beforeRun never settles, the caller\'s signal aborts': () => ({
    adapter: adapter(reply([text('x')])),
    config: { beforeRun: never },
    runOptions: { abortSignal: AbortSignal.timeout(20) },
    check: (o) => expectFailed(o, /^The run was aborted while beforeRun had not settled$/),
  }),
  'afterRun rejects long after timeoutMs fired, through a lying then': () => ({
    adapter: adapter(reply([text('x')])),
    config: { timeoutMs: 20, afterRun: () => lyingRejection(new Error('late afterRun'), 200) },
    method: 'prompt',
    check: (o) => [...expectFailed(o, /^The run was aborted while afterRun had not settled$/), ...(o.result.timedOut === true ? [] : ['timedOut not set'])],
  }),
  'stream(): afterRun never settles, timeoutMs fires': () => ({
    adapter: adapter(reply([text('x')])),
    config: { timeoutMs: 20, afterRun: never },
    method: 'stream',
    check: (o) => expectFailed(o, /^The run was aborted while afterRun had not settled$/),
  }),
  'onMessage, onToolCall, onToolResult and onWarning return lying rejections': () => ({
    adapter: adapter(calling('ok'), reply([text('final')])),
    tools: [okTool()],
    runOptions: {
      onMessage: () => lyingRejection(new Error('onMessage')),
      onToolCall: () => lyingRejection(new Error('onToolCall')),
      onToolResult: () => lyingRejection(new Error('onToolResult')),
      onWarning: () => lyingRejection(new Error('onWarning')),
    },
    check: (o) => expectOk(o),
  }),
  'stream(): onWarning and onMessage reject (async functions)': () => ({
    adapter: adapter(reply([text('no tools')])),
    tools: [okTool()],
    method: 'stream',
    runOptions: { onWarning: async () => { throw new Error('onWarning') }, onMessage: async () => { throw new Error('onMessage') } },
    check: (o) => expectOk(o),
  }),
  'stream(): the consumer throws at the first tool_use event': () => ({ adapter: adapter(calling('ok', 'ok')), tools: [okTool()], method: 'stream-throw' }),
  'stream(): chat never settles, timeoutMs fires': () => ({
    adapter: adapter(never),
    config: { timeoutMs: 50 },
    method: 'stream',
    check: (o) => expectFailed(o, /^Request was aborted\.$/),
  }),
  'stream(): onToolResult throws in a round of slow tools': () => ({
    adapter: adapter(calling('slow', 'slow', 'ok')),
    tools: [tool('slow', () => new Promise((r) => setTimeout(() => r({ data: 'late' }), 30))), okTool()],
    runOptions: { onToolResult: (name) => { if (name === 'ok') throw Object.create(null) } },
    method: 'stream',
    check: (o) => expectFailed(o, /^\[object Object\]$|^\[object that cannot be converted to text\]$/),
  }),

  // ---- native promises whose then / catch properties lie
  'chat returns a rejecting promise whose then and catch lie (with a signal)': () => ({
    adapter: adapter(() => lyingRejection(new Error('lying chat'))),
    runOptions: { abortSignal: new AbortController().signal },
    check: (o) => expectFailed(o, /^lying chat$/),
  }),
  'onTrace returns a rejecting promise whose then and catch lie': () => ({
    adapter: adapter(calling('ok')),
    tools: [okTool()],
    runOptions: { onTrace: () => lyingRejection(new Error('lying trace')) },
    check: (o) => expectOk(o),
  }),
  'a custom executor returns rejecting promises whose then and catch lie (several blocks, a signal)': () => ({
    adapter: adapter(calling('ok', 'ok', 'ok')),
    tools: [okTool()],
    executor: () => ({ execute: () => lyingRejection(new Error('lying executor')) }),
    runOptions: { abortSignal: new AbortController().signal },
    check: (o) => expectToolResult(o, /^lying executor$/),
  }),
  'a custom executor returns a rejecting promise whose then and catch lie (one block)': () => ({
    adapter: adapter(calling('ok')),
    tools: [okTool()],
    executor: () => ({ execute: () => lyingRejection(new Error('lying executor')) }),
    check: (o) => expectToolResult(o, /^lying executor$/),
  }),
  'a custom executor returns a plain object synchronously (several blocks)': () => ({
    adapter: adapter(calling('ok', 'ok')),
    tools: [okTool()],
    executor: () => ({ execute: () => ({ data: 'sync result' }) }),
    check: (o) => expectToolResult(o, /^sync result$/),
  }),
  'a custom executor throws synchronously a revoked Proxy': () => ({
    adapter: adapter(calling('ok', 'ok')),
    tools: [okTool()],
    executor: () => ({ execute: () => { throw revoked() } }),
    check: (o) => expectToolResult(o, /cannot be converted to text/),
  }),

  // ---- the executor called directly
  'ToolExecutor.execute with a tool throwing a revoked Proxy resolves': () => ({ method: 'executor', tools: [tool('t', async () => { throw revoked() })] }),
  'ToolExecutor.executeBatch with a call whose name getter throws': () => ({ method: 'batch', tools: [tool('t', () => new Promise((r) => setTimeout(() => r({ data: 'late' }), 30)))] }),

  // ---- issue 30: slots held by user code that never settles; inputs changed behind the gate
  'a never-settling tool on a maxConcurrency 1 executor, its run aborted: the next run runs, the late rejection is handled': () => ({
    method: 'custom',
    custom: async ({ Agent, ToolRegistry, ToolExecutor }) => {
      let started
      const running = new Promise((r) => { started = r })
      let rejectLate
      const registry = new ToolRegistry()
      registry.register(tool('hang', () => new Promise((_resolve, reject) => { rejectLate = reject; started() })))
      registry.register(okTool())
      const executor = new ToolExecutor(registry, { maxConcurrency: 1 })
      const ac = new AbortController()
      const first = new Agent({ name: 'h', model: 'm', tools: ['hang'], adapter: adapter(calling('hang')) }, registry, executor).run('go', { abortSignal: ac.signal })
      await running
      ac.abort()
      const r1 = await first
      const r2 = await new Agent({ name: 'n', model: 'm', tools: ['ok'], adapter: adapter(calling('ok')) }, registry, executor).run('go')
      rejectLate(new Error('late rejection'))
      const f = []
      if (firstResult({ result: r1 }) !== 'Tool "hang" was aborted during execution.') f.push(`aborted run's tool result ${JSON.stringify(firstResult({ result: r1 }))}`)
      if (firstResult({ result: r2 }) !== 'ok ran') f.push(`next run's tool result ${JSON.stringify(firstResult({ result: r2 }))}`)
      return f
    },
  }),
  'ToolExecutor.execute: a gate that never settles and a call parked behind it, both aborted': () => ({
    method: 'custom',
    custom: async ({ ToolRegistry, ToolExecutor }) => {
      const registry = new ToolRegistry()
      registry.register(okTool())
      const executor = new ToolExecutor(registry, { maxConcurrency: 1, onToolCall: never })
      const ac = new AbortController()
      const c = { agent: { name: 'a', role: 'r', model: 'm' }, abortSignal: ac.signal }
      const calls = [executor.execute('ok', {}, c), executor.execute('ok', {}, c)]
      ac.abort()
      const rs = await Promise.all(calls)
      const want = [{ data: 'Tool "ok" was aborted during execution.', isError: true }, { data: 'Tool "ok" was aborted before execution began.', isError: true }]
      return JSON.stringify(rs) === JSON.stringify(want) ? [] : [`results ${JSON.stringify(rs)}`]
    },
  }),
  'a stream consumer and an audit hook change a tool_use input while the gate decides': () => ({
    method: 'custom',
    custom: async ({ Agent, ToolRegistry, ToolExecutor }) => {
      let changed
      const meanwhile = new Promise((r) => { changed = r })
      const ran = []
      const registry = new ToolRegistry()
      registry.register({ name: 'sh', description: 'sh', inputSchema: { type: 'object' }, execute: async (input) => { ran.push(input.cmd); return { data: `ran ${input.cmd}` } } })
      const gate = async (c) => {
        const ok = c.input.cmd === 'ls'
        queueMicrotask(() => { c.input.cmd = 'audit changed it' })
        await meanwhile
        return { action: ok ? 'allow' : 'deny' }
      }
      const agent = new Agent({ name: 's', model: 'm', tools: ['sh'], onToolCall: gate, adapter: adapter(reply([call('t0', 'sh', { cmd: 'ls' })])) }, registry, new ToolExecutor(registry))
      for await (const ev of agent.stream('go')) {
        if (ev.type === 'tool_use') setImmediate(() => { ev.data.input.cmd = 'rm -rf /'; changed() })
      }
      return ran.length === 1 && ran[0] === 'ls' ? [] : [`the tool ran ${JSON.stringify(ran)}`]
    },
  }),
}

/** Whether a provider could take `messages` as history: every tool_use answered by a
 *  tool_result in the next (user) message. Read through JSON, as an adapter sends it. */
function replayable(messages) {
  let msgs
  try {
    msgs = JSON.parse(JSON.stringify(messages))
  } catch (e) {
    return `history cannot be written as JSON: ${e && e.message}`
  }
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]
    if (!m || m.role !== 'assistant' || !Array.isArray(m.content)) continue
    const ids = m.content.filter((b) => b && b.type === 'tool_use').map((b) => b.id)
    if (ids.length === 0) continue
    const next = msgs[i + 1]
    const answered = new Set((next && next.role === 'user' && Array.isArray(next.content) ? next.content : [])
      .filter((b) => b && b.type === 'tool_result').map((b) => b.tool_use_id))
    const missing = ids.filter((id) => !answered.has(id))
    if (missing.length > 0) return `tool_use ${JSON.stringify(missing)} at message ${i} has no tool_result`
  }
  return true
}

async function runCase(api, name) {
  const { Agent, ToolRegistry, ToolExecutor } = api
  const def = CASES[name]()
  const registry = new ToolRegistry()
  for (const t of def.tools ?? []) registry.register(t)
  const executor = def.executor ? def.executor(registry) : new ToolExecutor(registry)
  const out = { name, ended: false, replayable: true, failures: [] }

  if (def.method === 'executor') {
    const r = await executor.execute('t', {}, { agent: { name: 'a', role: 'r', model: 'm' } })
    out.ended = true
    if (!r || r.isError !== true || typeof r.data !== 'string') out.failures.push(`execute resolved with ${JSON.stringify(r)}`)
    return out
  }
  if (def.method === 'custom') {
    out.failures.push(...await def.custom(api))
    out.ended = true
    return out
  }
  if (def.method === 'batch') {
    const calls = [{ id: 'a', name: 't', input: {} }, { id: 'b', get name() { throw new Error('bad call') }, input: {} }]
    const outcome = await executor.executeBatch(calls, {}).then(() => 'resolved', (e) => `rejected: ${e.message}`)
    out.ended = true
    if (outcome !== 'rejected: bad call') out.failures.push(`executeBatch ${outcome}`)
    return out
  }

  const tools = (def.config && def.config.tools) ?? (def.tools ?? []).map((t) => t.name)
  const agent = new Agent({ name: 'fault', model: 'm', ...def.config, tools, adapter: def.adapter }, registry, executor)
  if (def.history) agent.messageHistory.push(...def.history)
  const before = agent.getHistory().length

  if (def.method === 'stream-throw') {
    let threw = false
    try {
      for await (const ev of agent.stream('go', def.runOptions)) {
        if (ev.type === 'tool_use') throw new Error('consumer threw')
      }
    } catch (e) {
      threw = e.message === 'consumer threw'
    }
    out.ended = true
    if (!threw) out.failures.push('the consumer error did not propagate')
    return out
  }

  let result
  if (def.method === 'stream') {
    // The stream's last event is the run's outcome: `done` (its result) or `error`.
    const events = []
    for await (const ev of agent.stream('go', def.runOptions)) events.push(ev)
    const last = events[events.length - 1]
    if (events.filter((e) => e.type === 'done' || e.type === 'error').length !== 1) out.failures.push(`events ${events.map((e) => e.type)}`)
    const uses = events.filter((e) => e.type === 'tool_use').map((e) => e.data.id)
    const answered = events.filter((e) => e.type === 'tool_result').map((e) => e.data.tool_use_id)
    if (last.type === 'done' && uses.some((id) => !answered.includes(id))) out.failures.push('a tool_use event has no tool_result event')
    result = last.type === 'done' ? last.data : { success: false, output: last.data.message, messages: [], toolCalls: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } }
  } else {
    result = def.method === 'prompt' ? await agent.prompt('go') : await agent.run('go', def.runOptions)
  }
  out.ended = true
  const history = agent.getHistory().slice(before)
  out.summary = { success: result.success, output: String(result.output).slice(0, 160), messages: result.messages.length, aborted: result.aborted, timedOut: result.timedOut }
  const r1 = replayable(result.messages)
  const r2 = replayable(agent.getHistory())
  if (r1 !== true) out.failures.push(`result.messages: ${r1}`)
  if (r2 !== true) out.failures.push(`agent history: ${r2}`)
  out.replayable = r1 === true && r2 === true
  if (typeof result.output !== 'string') out.failures.push(`output is ${typeof result.output}`)
  if (def.check) out.failures.push(...def.check({ result, history, adapter: def.adapter }))
  return out
}

async function main(names) {
  const api = require(path.resolve(__dirname, '..', '..', 'index.js'))
  // A never-settling adapter holds no handle: keep the loop alive so that a pending run is
  // reported by the watchdog rather than by a silent exit.
  const keepAlive = setInterval(() => {}, 1000)
  for (const name of names) {
    process.stdout.write(`FAULT-START ${JSON.stringify(name)}\n`)
    let timer
    const watchdog = new Promise((resolve) => { timer = setTimeout(() => resolve({ name, ended: false, hung: true, replayable: false, failures: ['did not end within the watchdog'] }), WATCHDOG_MS) })
    let out
    try {
      out = await Promise.race([runCase(api, name), watchdog])
    } catch (e) {
      out = { name, ended: true, replayable: false, failures: [`the harness caught: ${e && e.stack}`] }
    }
    clearTimeout(timer)
    process.stdout.write(`FAULT-CASE ${JSON.stringify(out)}\n`)
  }
  // Late rejections of anything a case left behind surface here (the process dies on them).
  await new Promise((r) => setTimeout(r, 300))
  clearInterval(keepAlive)
  process.stdout.write('FAULT-DONE\n')
}

module.exports = { CASE_NAMES: Object.keys(CASES) }

if (require.main === module) {
  const names = process.argv.slice(2)
  main(names.length > 0 ? names : Object.keys(CASES))
}
