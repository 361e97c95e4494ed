// Issue 18 (W1's wide rounds): a JS adapter's plain answer is handed to the kernel as the JSON of
// the driver's own copy, and the round's calls are taken from that copy (the machine sends back
// only verdicts and signatures). The copy must be exactly what the JSON says, so that a tool still
// runs with what the gate and the loop detector judged; anything the copy declines takes the
// JSON.stringify path, whose round carries every field.
import vm from 'node:vm'
import { isDeepStrictEqual } from 'node:util'
import {
  AgentRunner, ToolExecutor, ToolRegistry, ContentBlock, LLMAdapter, LLMMessage, LLMResponse, StreamEvent, ToolDefinition,
} from '../index'

const { plainCopy } = require('../lib/wire.js')
const native = require('../lib/native.js')

/** Every object and array reachable from `v`. */
function objectsOf(v: unknown, out = new Set<object>()): Set<object> {
  if (v !== null && typeof v === 'object' && !out.has(v)) {
    out.add(v)
    for (const k of Object.keys(v)) objectsOf((v as any)[k], out)
  }
  return out
}

/** The content as plainCopy writes it: a usual tool_use block as its three fields, flat, or
 *  with a signature as an array of four. */
const asCopied = (content: any[]) => content.flatMap((b) => (b !== null && typeof b === 'object' && b.type === 'tool_use'
  ? (b.signature === undefined ? [b.id, b.name, b.input] : [[b.id, b.name, b.input, b.signature]])
  : [b]))

/** What plainCopy promises for a copy it makes of `content`. */
function expectExactCopy(content: unknown[]) {
  const copy = plainCopy(content)
  expect(copy).toBeDefined()
  const json = JSON.stringify(copy)
  // The JSON of the copy is the JSON of the content (calls as their fields), and parsing it gives
  // the copy back.
  expect(json).toBe(JSON.stringify(asCopied(content)))
  expect(isDeepStrictEqual(JSON.parse(json), copy)).toBe(true)
  // Fresh objects only: nothing the adapter can change later is shared.
  const mine = objectsOf(content)
  for (const o of objectsOf(copy)) expect(mine.has(o)).toBe(false)
  return copy
}

describe('plainCopy', () => {
  test('copies plain values exactly as JSON writes them', () => {
    const sym = Symbol('s')
    expectExactCopy([{ type: 'tool_use', id: 'a', name: 'n', input: { a: 1, b: 'x' } }])
    expectExactCopy([{ type: 'text', text: 'hé "quoted" \n \u0001 😀' }, { type: 'tool_use', id: '1', name: 't', input: { nested: [1, [2, { d: null }]], e: true } }])
    // Members JSON leaves out (undefined, a symbol) or writes as null (the same in an array).
    const copy = expectExactCopy([{ type: 'tool_use', id: '1', name: 't', input: { u: undefined, s: sym, keep: 1, arr: [undefined, sym, 2] }, signature: undefined }])
    expect(Object.keys(copy[2])).toEqual(['keep', 'arr'])
    expect(copy[2]).toEqual({ keep: 1, arr: [null, null, 2] })
    expect(expectExactCopy([{ type: 'x', u: undefined, v: 1 }])).toStrictEqual([{ type: 'x', v: 1 }])
    // -0 is written as 0, and copied as 0.
    expect(Object.is(expectExactCopy([{ n: -0 }])[0].n, 0)).toBe(true)
    // Integer-like keys come first, as in JSON's own order; other keys keep theirs.
    expect(Object.keys(expectExactCopy([{ z: 1, 2: 'b', a: 2, 1: 'a' }])[0])).toEqual(['1', '2', 'z', 'a'])
    // Objects without a prototype, and objects of another realm (Jest's test environment is one).
    const bare = Object.assign(Object.create(null), { k: 'v' })
    expectExactCopy([{ type: 'tool_use', id: '1', name: 't', input: bare }])
    expectExactCopy(vm.runInNewContext('[{ type: "tool_use", id: "1", name: "t", input: { a: [1, { b: 2 }] } }]'))
    // Half a surrogate pair stays as it is (the machine keeps an input's text verbatim).
    expectExactCopy([{ type: 'tool_use', id: '1', name: 't', input: { s: 'x\ud800y' } }])
    // Nested to the depth it copies.
    let deep: any = { leaf: true }
    for (let i = 0; i < 60; i++) deep = { d: deep }
    expectExactCopy([deep])
  })

  test('a tool_use block is copied as the fields the kernel keeps of a call; other blocks whole', () => {
    const copy = plainCopy([
      { cache_control: { type: 'ephemeral' }, input: { b: 1, a: 2 }, name: 't', id: '1', type: 'tool_use', signature: 'sig' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' }, extra: [1] },
      // Fields of a kind the kernel refuses: an object, so that the kernel's error names them.
      { type: 'tool_use', id: 5, name: 't', input: {} },
      { type: 'tool_use', id: '2', name: 't', input: [] },
      { type: 'tool_use', id: '3', name: 't', input: {}, signature: { s: 1 } },
      { input: { z: [1] }, id: '4', name: 'u', type: 'tool_use', extra: true },
    ])
    expect(JSON.stringify(copy)).toBe(
      '[["1","t",{"b":1,"a":2},"sig"],' +
      '{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="},"extra":[1]},' +
      '{"type":"tool_use","id":5,"name":"t","input":{}},' +
      '{"type":"tool_use","id":"2","name":"t","input":[]},' +
      '{"type":"tool_use","id":"3","name":"t","input":{},"signature":{"s":1}},' +
      '"4","u",{"z":[1]}]',
    )
    // A string or an array in the content (which the kernel refuses as a block) is not copied: in
    // the copy, a string starts a call and an array is one.
    expect(plainCopy([['1', 't', {}]])).toBeUndefined()
    expect(plainCopy(['1', 't', {}])).toBeUndefined()
    expect(plainCopy([{ type: 'text', text: 'x' }, 'stray'])).toBeUndefined()
  })

  test('random content: copied exactly when the rules say so, declined otherwise', () => {
    // A seeded generator (xorshift), so that a failure repeats.
    let seed = 0x2545f491
    const rnd = (n: number) => {
      seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5
      return (seed >>> 0) % n
    }
    const strings = ['', 'a', 'tool_use', 'type', 'é', '😀', 'x\ud800', '\u0001', '"', '0', '10']
    const odd = [undefined, Symbol('s'), () => 1, NaN, -Infinity, -0, new Date(0), new Map(), BigInt(2)]
    function value(depth: number): unknown {
      switch (rnd(depth > 4 ? 5 : 8)) {
        case 0: return strings[rnd(strings.length)]
        case 1: return rnd(3) === 0 ? rnd(1000) / 7 - 50 : rnd(100)
        case 2: return rnd(2) === 0
        case 3: return null
        case 4: return rnd(12) === 0 ? odd[rnd(odd.length)] : strings[rnd(strings.length)]
        case 5: return Array.from({ length: rnd(4) }, () => value(depth + 1))
        default: {
          const o: Record<string, unknown> = rnd(10) === 0 ? Object.create(null) : {}
          for (let i = rnd(4); i > 0; i--) o[strings[rnd(strings.length)]] = value(depth + 1)
          return o
        }
      }
    }
    function block(): unknown {
      if (rnd(3) !== 0) return value(1)
      const b: Record<string, unknown> = { type: 'tool_use', id: value(3), name: value(3), input: rnd(4) === 0 ? value(2) : { q: value(2) } }
      if (rnd(3) === 0) b.signature = value(3)
      return b
    }
    // The rules, written again from the documentation: a value JSON would write differently
    // (non-finite number), could not write (BigInt) or would ask (functions, Dates, Maps) is
    // declined; so is a string or an array as a block, and a call without an id, a name or an
    // input.
    const leftOut = (v: unknown) => v === undefined || typeof v === 'symbol'
    function declined(v: unknown): boolean {
      if (typeof v === 'number') return !Number.isFinite(v)
      if (typeof v === 'bigint' || typeof v === 'function') return true
      if (v === null || typeof v !== 'object') return false
      if (Array.isArray(v)) return v.some(declined)
      const proto = Object.getPrototypeOf(v)
      if (proto !== null && proto !== Object.prototype) return true
      return Object.keys(v).some((k) => declined((v as any)[k]))
    }
    const declinedBlock = (b: any) => typeof b === 'string' || Array.isArray(b) || declined(b) ||
      (b !== null && typeof b === 'object' && b.type === 'tool_use' && (leftOut(b.id) || leftOut(b.name) || leftOut(b.input)))
    let copied = 0
    for (let n = 0; n < 3000; n++) {
      const content = Array.from({ length: 1 + rnd(4) }, block)
      const copy = plainCopy(content)
      expect([content, copy === undefined]).toEqual([content, content.some(declinedBlock)])
      if (copy === undefined) continue
      copied += 1
      expect(isDeepStrictEqual(JSON.parse(JSON.stringify(copy)), copy)).toBe(true)
    }
    // Many random answers are copied (the generator makes a declined value one time in a dozen
    // and a bare string, declined as a block, about one block in six): 1388 of the 3000.
    expect(copied).toBeGreaterThan(1200)
  })

  test('reads each property once', () => {
    let reads = 0
    const block = { type: 'tool_use', id: '1', name: 't', get input() { reads += 1; return { n: reads } } }
    const copy = plainCopy([block])
    expect(reads).toBe(1)
    expect(copy[2]).toEqual({ n: 1 })
  })

  test('declines what JSON does not write as it is, and what it bounds', () => {
    class Point { constructor(public x: number) {} }
    const proxy = Proxy.revocable({}, {})
    proxy.revoke()
    let deep: any = { leaf: true }
    for (let i = 0; i < 70; i++) deep = { d: deep }
    const declined: Array<[string, unknown]> = [
      ['an own toJSON', { input: { a: 1, toJSON: () => ({ a: 2 }) } }],
      ['a toJSON on the array', Object.assign([1], { toJSON: () => [2] })],
      ['a Date', { at: new Date(0) }],
      ['a Map', { m: new Map([[1, 2]]) }],
      ['a class instance', { p: new Point(1) }],
      ['a boxed string', { s: new String('x') }],
      ['NaN', { n: NaN }],
      ['Infinity', { n: [Infinity] }],
      ['a BigInt', { n: BigInt(1) }],
      ['a function member', { f: () => 1 }],
      ['an own __proto__ key', JSON.parse('{"__proto__":{"a":1}}')],
      ['more levels than it copies', deep],
      ['a longer array than it copies', { a: new Array(100001).fill(0) }],
      ['a revoked proxy', { p: proxy.proxy }],
      ['a throwing getter', { get input() { throw new Error('no') } }],
    ]
    for (const [what, value] of declined) {
      expect([what, plainCopy([value])]).toEqual([what, undefined])
    }
    expect(plainCopy({ not: 'an array' })).toBeUndefined()
    expect(plainCopy(undefined)).toBeUndefined()
  })
})

// ---------------------------------------------------------------------------------------------
const usage = { input_tokens: 1, output_tokens: 1 }
const reply = (content: unknown[]): LLMResponse => ({ id: 'r', model: 'm', stop_reason: 'end_turn', usage, content: content as ContentBlock[] })

function recordingTool(name: string, seen: unknown[]): ToolDefinition<any, any> {
  return { name, description: name, inputSchema: { type: 'object' }, execute: async (input: unknown) => { seen.push(input); return { data: `${name} ran` } } } as any
}

/** A stream() of a runner whose adapter answers `first`, then a final text; its events, the
 *  inputs its tools received and whether the kernel was told the driver holds a copy. */
async function streamOf(first: () => unknown[], allowed = ['a', 'b'], options: Record<string, unknown> = {}) {
  const seen: unknown[] = []
  const registry = new ToolRegistry()
  registry.register(recordingTool('a', seen))
  registry.register(recordingTool('b', seen))
  let calls = 0
  const adapter: LLMAdapter = {
    name: 'scripted',
    async chat(_messages: LLMMessage[]) {
      calls += 1
      return calls === 1 ? reply(first()) : reply([{ type: 'text', text: 'final' }])
    },
  } as any
  const respond = jest.spyOn(native, 'runRespond')
  try {
    const runner = new AgentRunner(adapter, registry, new ToolExecutor(registry), { model: 'm', allowedTools: allowed, loopDetection: { maxRepetitions: 1, onLoopDetected: 'warn' } })
    const events: StreamEvent[] = []
    for await (const e of runner.stream([{ role: 'user', content: [{ type: 'text', text: 'go' }] }], options)) events.push(e)
    return { events, seen, copied: respond.mock.calls.map((c) => c[4]) }
  } finally {
    respond.mockRestore()
  }
}

/** An event as two runs of the same answer both give it: the done result without the assistant
 *  message (the adapter's own objects) and the durations. */
function comparable(e: StreamEvent) {
  if (e.type !== 'done') return e
  const r = e.data as any
  return { ...e, data: { ...r, messages: r.messages.slice(1), toolCalls: r.toolCalls.map((c: any) => ({ ...c, duration: 0 })) } }
}

describe('a round taken from the copy', () => {
  const answer = () => [
    { type: 'text', text: 'calling' },
    { type: 'tool_use', id: 'c1', name: 'a', input: { q: [1, { r: 's' }], skip: undefined } },
    { type: 'tool_use', id: 'c2', name: 'b', input: {}, cache_control: { type: 'ephemeral' } },
    { type: 'tool_use', id: 'c3', name: 'a', input: { n: -0 }, signature: 'sig' },
  ]

  test('runs, records and answers what the other path does (text and loop events before the round)', async () => {
    const copied = await streamOf(answer)
    // The same answer, declined by the copy (a toJSON on the content writing the same blocks).
    const viaJson = await streamOf(() => { const c = answer(); return Object.assign(c.slice(), { toJSON: () => c }) })
    expect(copied.copied).toEqual([true, true])
    expect(viaJson.copied).toEqual([false, true])
    expect(copied.events.map((e) => e.type)).toEqual(['text', 'loop_detected', 'tool_use', 'tool_use', 'tool_use', 'tool_result', 'tool_result', 'tool_result', 'text', 'loop_detected', 'done'])
    expect(copied.events.filter((e) => e.type === 'tool_use').map((e) => e.data)).toStrictEqual([
      { type: 'tool_use', id: 'c1', name: 'a', input: { q: [1, { r: 's' }] } },
      { type: 'tool_use', id: 'c2', name: 'b', input: {} },
      { type: 'tool_use', id: 'c3', name: 'a', input: { n: 0 }, signature: 'sig' },
    ])
    expect(copied.seen).toStrictEqual([{ q: [1, { r: 's' }] }, {}, { n: 0 }])
    // Apart from the assistant message (the adapter's own objects in both), nothing differs.
    expect(copied.events.map(comparable)).toStrictEqual(viaJson.events.map(comparable))
    expect(copied.seen).toStrictEqual(viaJson.seen)
  })

  test('a signature the kernel reads differently is the kernel\'s (dropped when not a string, half a pair replaced)', async () => {
    const { events, copied } = await streamOf(() => [
      { type: 'tool_use', id: 'c1', name: 'a', input: {}, signature: 7 },
      { type: 'tool_use', id: 'c2', name: 'a', input: {}, signature: 'x\ud800' },
    ])
    expect(copied[0]).toBe(true)
    expect(events.filter((e) => e.type === 'tool_use').map((e) => e.data)).toStrictEqual([
      { type: 'tool_use', id: 'c1', name: 'a', input: {} },
      { type: 'tool_use', id: 'c2', name: 'a', input: {}, signature: 'x\ufffd' },
    ])
  })

  test('an answer the kernel refuses fails the run with the same words either way', async () => {
    // [answer, whether it goes as a copy]
    const refused: Array<[unknown[], boolean]> = [
      [[{ type: 'tool_use', id: 'x\ud800', name: 'a', input: {} }], true], // as a call array
      [[{ type: 'tool_use', id: 7, name: 'a', input: {} }], true], // as a tool_use object
      [[{ type: 'tool_use', id: '1', name: 'a', input: [1] }], true],
      [[{ type: 'tool_use', id: '1', name: 'a' }], false],
      [[{ type: 'text', text: 1 }], true],
      // A string or an array where a block belongs: declined by the copy (in it, a string starts
      // a call and an array is one), refused by the kernel on the other path.
      [[{ type: 'text', text: 'x' }, 'c1', 'a', {}], false],
      [[['c1', 'a', {}, 'sig']], false],
    ]
    for (const [answer, asCopy] of refused) {
      const copied = await streamOf(() => answer)
      expect(copied.copied[0]).toBe(asCopy)
      const viaJson = await streamOf(() => Object.assign(answer.slice(), { toJSON: () => answer }))
      const error = (r: typeof copied) => r.events.filter((e) => e.type === 'error').map((e) => String((e.data as Error).message))
      expect(error(copied)).toHaveLength(1)
      expect(error(copied)[0]).toMatch(/^LLM adapter returned a malformed response: /)
      expect(error(copied)).toEqual(error(viaJson))
      expect(copied.seen).toEqual([])
    }
  })

  test('the tools get fresh objects: the adapter changing its blocks afterwards changes nothing', async () => {
    const input = { path: 'notes.txt' }
    const blocks = [{ type: 'tool_use', id: 'c1', name: 'a', input }]
    // After the kernel has taken the answer, before the tool runs.
    const onToolCall = () => { input.path = '/etc/shadow'; blocks[0].name = 'b' }
    const { seen, events, copied } = await streamOf(() => blocks, ['a'], { onToolCall })
    expect(copied[0]).toBe(true)
    expect(seen).toStrictEqual([{ path: 'notes.txt' }])
    expect(seen[0]).not.toBe(input)
    expect(events.filter((e) => e.type === 'tool_use').map((e) => (e.data as any).name)).toEqual(['a'])
  })
})
