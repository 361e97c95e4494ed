'use strict'
// JS face of the native LLM adapters (CONTRACT §14–§16). The HTTP work, message conversion,
// retries and SSE parsing are Rust; this file only validates the JS input (§15.1), moves
// JSON strings, links the AbortSignal, and builds Errors in the caller's realm.

const native = require('./native.js')
const wire = require('./wire.js')
const { InvalidMessageError, EgressPolicyError, toError } = require('./errors.js')
const { isOwnEnumerable, onlyKeys } = require('./util.js')
const boundary = require('./generated/boundary.js')
const MESSAGE_TEXTS = boundary.runner.messageValidation
const PICK_CHAT_OPTIONS = boundary.llm.pickChatOptions
const DECODE_ERROR = boundary.llm.error
const DECODE_EVENT = boundary.llm.event
const LONG_STRING = boundary.llm.longString

/** @typedef {import('./util.js').Fields} Fields */
/** @typedef {import('./util.js').UncheckedValue} UncheckedValue */
/** @typedef {import('../index.js').LLMMessage} LLMMessage */
/** @typedef {import('../index.js').LLMChatOptions} LLMChatOptions */

/** Where the native handle of an adapter object lives (for the kernel's fast path). */
const NATIVE_ADAPTER = Symbol.for('oma-kernel.native-adapter')
/** provider → the variables its adapter reads, per combination of arguments given (an argument
 *  takes precedence over its variable, which is then not read: each read of `process.env` is a
 *  call into Node and a scan of the environment). Bounded: providers may be any string.
 * @type {Map<string, Array<string[] | undefined>>} */
const envVarsByProvider = new Map()

// process.env is read at call time; Jest's sandbox has its own copy, so snapshot it here.
/**
 * @param {string} provider
 * @param {string | undefined} apiKey
 * @param {string | undefined} baseURL
 * @param {string | undefined} region
 */
function envSnapshot(provider, apiKey, baseURL, region) {
  const given = (apiKey != null ? 1 : 0) | (baseURL != null ? 2 : 0) | (region != null ? 4 : 0)
  let lists = envVarsByProvider.get(provider)
  if (lists === undefined) {
    if (envVarsByProvider.size >= 64) envVarsByProvider.clear()
    lists = new Array(8)
    envVarsByProvider.set(provider, lists)
  }
  let vars = lists[given]
  if (vars === undefined) {
    vars = native.llmEnvVars(provider, (given & 1) !== 0, (given & 2) !== 0, (given & 4) !== 0)
    lists[given] = vars
  }
  /** @type {Record<string, string>} */
  const out = {}
  for (const k of vars) {
    const v = process.env[k]
    if (v !== undefined) out[k] = v
  }
  return out
}

/** @param {unknown} v */
function typeName(v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  return typeof v
}

/**
 * `assertValidMessages(messages)` (§15.1); messages before `from` are known to be valid.
 * @param {unknown} messages
 * @param {number} [from]
 * @returns {asserts messages is LLMMessage[]}
 */
function assertValidMessages(messages, from = 0) {
  if (!Array.isArray(messages)) {
    throw new InvalidMessageError(MESSAGE_TEXTS.notAnArray(typeName(messages)))
  }
  for (let i = from; i < messages.length; i++) {
    const m = messages[i]
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw new InvalidMessageError(MESSAGE_TEXTS.messageNotAnObject(i, typeName(m)))
    }
    const content = m.content
    if (!Array.isArray(content)) {
      throw new InvalidMessageError(MESSAGE_TEXTS.contentNotAnArray(i, typeName(content)))
    }
    for (let j = 0; j < content.length; j++) {
      const b = content[j]
      if (b === null || typeof b !== 'object' || typeof b.type !== 'string') {
        throw new InvalidMessageError(MESSAGE_TEXTS.blockWithoutType(i, j))
      }
    }
  }
}

/**
 * An error as the kernel encodes it: its record (oma_llm::ERROR_RECORD), decoded.
 * @typedef {ReturnType<typeof DECODE_ERROR>} NativeErrorData
 */

/** @param {NativeErrorData} data */
function errorFrom(data) {
  if (data.kind === 'egress') return new EgressPolicyError(data.reason, data.message, data.provider, data.origin)
  /** @type {Error & { status?: number }} */
  const e = data.kind === 'invalid_message' ? new InvalidMessageError(data.message) : new Error(data.message)
  if (data.status !== undefined) e.status = data.status
  return e
}

/** The Error of an error record's JSON text.
 * @param {string} record */
const errorOfRecord = (record) => errorFrom(DECODE_ERROR(JSON.parse(record)))

/**
 * A rejection from the addon: the Rust side's errors carry their record as the message.
 * @param {unknown} err
 */
function fromNative(err) {
  const msg = err && /** @type {{ message?: unknown }} */ (err).message
  if (typeof msg === 'string' && msg.charCodeAt(0) === 91 /* [ */) {
    try {
      return errorOfRecord(msg)
    } catch {
      // not ours after all
    }
  }
  return toError(err)
}

function noop() {}

/**
 * A CancelHandle tripped by `signal` (and the function that unhooks it).
 * @param {AbortSignal | null | undefined} signal
 * @returns {[import('../binding').CancelHandle | undefined, () => void]}
 */
function linkSignal(signal) {
  if (!signal) return [undefined, noop]
  const handle = new native.CancelHandle()
  if (signal.aborted) {
    handle.cancel()
    return [handle, noop]
  }
  const onAbort = () => handle.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  return [handle, () => signal.removeEventListener('abort', onAbort)]
}

// Only the LLMChatOptions fields cross: callers may pass richer objects (a runner's options with
// callbacks or schemas) that JSON.stringify would choke on or copy for nothing.

/** The LLMChatOptions fields of `options` (read once each, in the kernel's order: the generated
 *  picker, named reads rather than a loop over key names, so each read site stays monomorphic),
 *  tools reduced to what crosses.
 * @param {LLMChatOptions} o
 */
function pickOptions(o) {
  // The picker's fields are LLMChatOptions' own (oma_llm::CHAT_OPTION_FIELDS, checked in Rust).
  const picked = /** @type {{ -readonly [K in keyof LLMChatOptions]?: LLMChatOptions[K] }} */ (PICK_CHAT_OPTIONS(o))
  if (picked.tools) {
    picked.tools = picked.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))
  }
  return picked
}

// ---------------------------------------------------------------------------------------
// What an adapter object sent last, so that a caller's growing history crosses once: the
// messages (the very objects) and a snapshot of what `JSON.stringify` read from each. A message
// counts as already sent only if it is the same object and what JSON would read from it is
// unchanged, compared value by value (strings and numbers by ===, arrays item by item, objects
// key by key in order), so a message edited in place, replaced or reordered is sent again. A
// value with a `toJSON` method never counts as unchanged. The same comparison lets option JSON
// be reused (equal values give equal JSON, whatever the objects).

const UNCACHEABLE = Object.freeze({})

/**
 * What `snapshot` records: a value that is not an object as it is, UNCACHEABLE, an array's
 * items, an object's keys and values (in order).
 * @typedef {{ items: unknown[], keys?: undefined, values?: undefined } | { items?: undefined, keys: string[], values: unknown[] }} Recorded
 */

/**
 * @param {unknown} v
 * @returns {unknown} `v` itself, UNCACHEABLE or a Recorded
 */
function snapshot(v) {
  if (v === null || typeof v !== 'object') return v
  if (typeof (/** @type {Fields} */ (v).toJSON) === 'function') return UNCACHEABLE
  if (Array.isArray(v)) {
    const items = new Array(v.length)
    for (let i = 0; i < v.length; i++) items[i] = snapshot(v[i])
    return { items }
  }
  const keys = Object.keys(v)
  const values = new Array(keys.length)
  for (let i = 0; i < keys.length; i++) values[i] = snapshot(/** @type {Fields} */ (v)[keys[i]])
  return { keys, values }
}

/**
 * @param {unknown} v
 * @param {Recorded | UncheckedValue} s what `snapshot` gave
 * @returns {boolean}
 */
function unchanged(v, s) {
  if (v === null || typeof v !== 'object') return v === s
  if (s === null || typeof s !== 'object' || s === UNCACHEABLE || typeof (/** @type {Fields} */ (v).toJSON) === 'function') return false
  if (s.items !== undefined) {
    if (!Array.isArray(v) || v.length !== s.items.length) return false
    for (let i = 0; i < v.length; i++) if (!unchanged(v[i], /** @type {Recorded} */ (s.items[i]))) return false
    return true
  }
  if (Array.isArray(v)) return false
  const keys = Object.keys(v)
  if (keys.length !== s.keys.length) return false
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== s.keys[i] || !unchanged(/** @type {Fields} */ (v)[keys[i]], /** @type {Recorded} */ (s.values[i]))) return false
  }
  return true
}

// Long strings of a tail (tool results, text blocks) cross beside its JSON (oma_llm::tail):
// V8's JSON.stringify checks every character of a string for escapes, napi copies it at memory
// speed. The JSON carries "" in their place (in shallow copies of the message and block; key
// order is kept), and each crosses as a record of where it goes (the generated encoders).
const LONG_STRING_LENGTH = 512

/**
 * A long string's record (oma_llm::tail::LONG_STRING_RECORD).
 * @typedef {[number, number, number, string]} LongString
 */

/** `[JSON.stringify(tail) with long strings as "", long]`. The usual messages (a role and
 *  text / tool_use / tool_result blocks, exactly those keys, no toJSON) are written here from
 *  their fields, read in JSON.stringify's order (V8's generic walk costs more than the strings);
 *  a tail with anything else goes through `tailWireGeneric`.
 * @param {LLMMessage[]} tail
 * @returns {[string, LongString[] | null, unknown[]?]}
 */
function tailWire(tail) {
  /** @type {WireState} */
  const st = { long: null, snaps: [] }
  let out = '['
  for (let i = 0; i < tail.length; i++) {
    let s
    try {
      s = messageWire(/** @type {Fields} */ (/** @type {unknown} */ (tail[i])), i, st)
    } catch {
      s = undefined // JSON.stringify's own error, if any, comes from the generic path
    }
    if (s === undefined) return tailWireGeneric(tail)
    out += i === 0 ? s : `,${s}`
  }
  return [`${out}]`, st.long, st.snaps]
}

const q = JSON.stringify

/**
 * Where `tailWire` collects the long strings and the snapshots.
 * @typedef {{ long: LongString[] | null, snaps: MessageSnap[] }} WireState
 */

/**
 * @param {string} s
 * @param {number} i
 * @param {number} j
 * @param {WireState} st
 * @param {(message: number, block: number, text: string) => LongString} record the string's encoder
 */
function longOrQuoted(s, i, j, st, record) {
  if (s.length < LONG_STRING_LENGTH) return q(s)
  if (st.long === null) st.long = []
  st.long.push(record(i, j, s))
  return '""'
}

/**
 * @param {Fields | UncheckedValue} m any value: checked here
 * @param {number} i
 * @param {WireState} st
 * @returns {string | undefined}
 */
function messageWire(m, i, st) {
  if (m === null || typeof m !== 'object' || typeof m.toJSON === 'function') return undefined
  if (!onlyKeys(m, 'role', 'content')) return undefined
  const role = m.role
  const content = m.content
  if (typeof role !== 'string' || !Array.isArray(content) || typeof (/** @type {unknown[] & Fields} */ (content).toJSON) === 'function') return undefined
  let out = `{"role":${q(role)},"content":[`
  /** @type {BlockSnap[]} */
  const blocks = new Array(content.length)
  for (let j = 0; j < content.length; j++) {
    const s = blockWire(/** @type {Fields} */ (content[j]), i, j, st, blocks)
    if (s === undefined) return undefined
    out += j === 0 ? s : `,${s}`
  }
  st.snaps.push(new MessageSnap(role, blocks))
  return `${out}]}`
}

/**
 * @param {Fields | UncheckedValue} b any value: checked here
 * @param {number} i
 * @param {number} j
 * @param {WireState} st
 * @param {BlockSnap[]} snaps
 * @returns {string | undefined}
 */
function blockWire(b, i, j, st, snaps) {
  if (b === null || typeof b !== 'object' || typeof b.toJSON === 'function') return undefined
  const k = Object.keys(b)
  if (k[0] !== 'type') return undefined
  const type = b.type
  if (type === 'text' && k.length === 2 && k[1] === 'text') {
    const text = b.text
    if (typeof text !== 'string') return undefined
    snaps[j] = new TextSnap(text)
    return `{"type":"text","text":${longOrQuoted(text, i, j, st, LONG_STRING.text)}}`
  }
  if (type === 'tool_use' && k.length === 4 && k[1] === 'id' && k[2] === 'name' && k[3] === 'input') {
    const id = b.id
    const name = b.name
    if (typeof id !== 'string' || typeof name !== 'string') return undefined
    const v = b.input
    const input = q(v)
    if (input === undefined) return undefined
    snaps[j] = new ToolUseSnap(id, name, snapshot(v))
    return `{"type":"tool_use","id":${q(id)},"name":${q(name)},"input":${input}}`
  }
  if (type === 'tool_result' && (k.length === 3 || (k.length === 4 && k[3] === 'is_error')) && k[1] === 'tool_use_id' && k[2] === 'content') {
    const id = b.tool_use_id
    const content = b.content
    if (typeof id !== 'string' || typeof content !== 'string') return undefined
    let out = `{"type":"tool_result","tool_use_id":${q(id)},"content":${longOrQuoted(content, i, j, st, LONG_STRING.toolResult)}`
    let e
    if (k.length === 4) {
      e = b.is_error
      if (e === true || e === false) out += e ? ',"is_error":true' : ',"is_error":false'
      else if (e !== undefined) return undefined
    }
    snaps[j] = new ToolResultSnap(id, content, k.length === 4, e)
    return `${out}}`
  }
  return undefined
}

// Snapshots of the messages `messageWire` wrote (what `snapshot` would record, by shape): their
// checks read the fields by name, cheaper than `unchanged`'s walk over keys.

/** @typedef {TextSnap | ToolUseSnap | ToolResultSnap} BlockSnap */

class MessageSnap {
  /**
   * @param {string} role
   * @param {BlockSnap[]} blocks
   */
  constructor(role, blocks) {
    this.role = role
    this.blocks = blocks
  }

  /** @param {Fields | UncheckedValue} m any value: checked here */
  same(m) {
    if (m === null || typeof m !== 'object' || typeof m.toJSON === 'function') return false
    if (!onlyKeys(m, 'role', 'content') || m.role !== this.role) return false
    const c = m.content
    const blocks = this.blocks
    if (!Array.isArray(c) || typeof (/** @type {unknown[] & Fields} */ (c).toJSON) === 'function' || c.length !== blocks.length) return false
    for (let j = 0; j < blocks.length; j++) {
      const b = c[j]
      if (b === null || typeof b !== 'object' || typeof b.toJSON === 'function' || !blocks[j].same(b, Object.keys(b))) return false
    }
    return true
  }
}

class TextSnap {
  /** @param {string} text */
  constructor(text) {
    this.text = text
  }

  /**
   * @param {Fields} b
   * @param {string[]} k its keys
   */
  same(b, k) {
    return k.length === 2 && k[0] === 'type' && k[1] === 'text' && b.type === 'text' && b.text === this.text
  }
}

class ToolUseSnap {
  /**
   * @param {string} id
   * @param {string} name
   * @param {unknown} input what `snapshot` recorded of it
   */
  constructor(id, name, input) {
    this.id = id
    this.name = name
    this.input = input
  }

  /**
   * @param {Fields} b
   * @param {string[]} k its keys
   */
  same(b, k) {
    return (
      k.length === 4 &&
      k[0] === 'type' &&
      k[1] === 'id' &&
      k[2] === 'name' &&
      k[3] === 'input' &&
      b.type === 'tool_use' &&
      b.id === this.id &&
      b.name === this.name &&
      unchanged(b.input, /** @type {Recorded} */ (this.input))
    )
  }
}

class ToolResultSnap {
  /**
   * @param {string} id
   * @param {string} content
   * @param {boolean} withError
   * @param {unknown} isError
   */
  constructor(id, content, withError, isError) {
    this.id = id
    this.content = content
    this.withError = withError
    this.isError = isError
  }

  /**
   * @param {Fields} b
   * @param {string[]} k its keys
   */
  same(b, k) {
    if (k.length !== (this.withError ? 4 : 3) || k[0] !== 'type' || k[1] !== 'tool_use_id' || k[2] !== 'content') return false
    if (this.withError && (k[3] !== 'is_error' || b.is_error !== this.isError)) return false
    return b.type === 'tool_result' && b.tool_use_id === this.id && b.content === this.content
  }
}

/**
 * @param {LLMMessage[]} tail
 * @returns {[string, LongString[] | null]}
 */
function tailWireGeneric(tail) {
  /** @type {Fields[] | null} */
  let copy = null
  /** @type {LongString[] | null} */
  let long = null
  for (let i = 0; i < tail.length; i++) {
    // Any value (only an array was checked): read as JSON.stringify reads it.
    const m = /** @type {Fields & { content: Array<Fields> & Fields }} */ (/** @type {unknown} */ (tail[i]))
    const content = m.content
    // What a toJSON returns is what JSON.stringify sends: such messages go as they are.
    // (Only own enumerable properties are serialised, and only those are copied.)
    if (typeof m.toJSON === 'function' || typeof content.toJSON === 'function' || !isOwnEnumerable.call(m, 'content')) continue
    for (let j = 0; j < content.length; j++) {
      const b = content[j]
      const field = b.type === 'tool_result' ? 'content' : b.type === 'text' ? 'text' : null
      if (field === null) continue
      const s = b[field]
      if (typeof s !== 'string' || s.length < LONG_STRING_LENGTH || typeof b.toJSON === 'function' || !isOwnEnumerable.call(b, field)) continue
      if (copy === null || long === null) {
        copy = /** @type {Fields[]} */ (/** @type {unknown[]} */ (tail.slice()))
        long = []
      }
      if (copy[i] === m) copy[i] = { ...m, content: content.slice() }
      const blocks = /** @type {Fields[]} */ (copy[i].content) // the copy made just above
      blocks[j] = { ...b, [field]: '' }
      long.push(field === 'content' ? LONG_STRING.toolResult(i, j, s) : LONG_STRING.text(i, j, s))
    }
  }
  return [JSON.stringify(copy ?? tail), long]
}

/**
 * Whether message `m` is as it was sent (`s`: a `MessageSnap`, or `snapshot`'s record).
 * @param {unknown} m
 * @param {unknown} s
 */
function sameAsSent(m, s) {
  return s instanceof MessageSnap ? s.same(/** @type {Fields} */ (m)) : unchanged(m, /** @type {Recorded} */ (s))
}

/**
 * adapter object → { history: its native ChatHistory, sent: message objects, snaps }
 * @type {WeakMap<NativeAdapter, { history: import('../binding').ChatHistory, sent: unknown[], snaps: unknown[], options: JsonMemo, optionsSent?: string }>}
 */
const lastSent = new WeakMap()

/**
 * A JSON text and the snapshot of the value it was made from.
 * @typedef {{ snap?: unknown, json?: string }} JsonMemo
 */

/** `JSON.stringify(value)`, reused from `memo` while `value` is unchanged (see `unchanged`):
 *  option objects are rebuilt per call or per run with the same values.
 * @param {JsonMemo} memo
 * @param {unknown} value
 * @returns {string}
 */
function memoJson(memo, value) {
  if (memo.snap !== undefined && unchanged(value, /** @type {Recorded} */ (memo.snap))) return /** @type {string} */ (memo.json) // set with snap
  const json = JSON.stringify(value)
  memo.snap = snapshot(value)
  memo.json = json
  return json
}

/** The options' JSON for the native side (only LLMChatOptions fields cross: callers may pass
 *  richer objects, callbacks and cycles included).
 * @param {JsonMemo | undefined} memo
 * @param {LLMChatOptions | undefined} options
 */
function optionsJson(memo, options) {
  if (!options) return '{}'
  return memo === undefined ? JSON.stringify(pickOptions(options)) : memoJson(memo, pickOptions(options))
}

class NativeAdapter {
  /**
   * @param {import('../binding').NativeLlmAdapter} handle
   * @param {string} [name]
   * @param {string} [echoesReasoning]
   */
  constructor(handle, name = handle.name, echoesReasoning = handle.echoesReasoning) {
    this.name = name
    this.capabilities = { echoesReasoning }
    // A symbol key: invisible to Object.keys and JSON. (Object.defineProperty per adapter cost
    // ≈ 2k instructions, and agents create their adapter per run.)
    this[NATIVE_ADAPTER] = handle
  }

  /**
   * @param {LLMMessage[]} messages
   * @param {LLMChatOptions} options
   */
  async chat(messages, options) {
    if (!Array.isArray(messages)) assertValidMessages(messages)
    let last = lastSent.get(this)
    if (last === undefined) {
      last = { history: this[NATIVE_ADAPTER].newHistory(), sent: [], snaps: [], options: {} }
      lastSent.set(this, last)
    }
    const { sent, snaps } = last
    let keep = 0
    const n = Math.min(sent.length, messages.length)
    while (keep < n && messages[keep] === sent[keep] && sameAsSent(messages[keep], snaps[keep])) keep++
    // The kept messages passed this check when they were sent and have not changed since.
    assertValidMessages(messages, keep)
    const tail = keep === 0 ? messages : messages.slice(keep)
    const [cancel, unlink] = linkSignal(options?.abortSignal)
    let json
    try {
      const [tailJson, long, tailSnaps] = tailWire(tail)
      // Everything that can throw (a snapshot recurses per level of a message) runs before the
      // request starts: a started request is always awaited, so its rejection is never unhandled.
      let tailRecords = tailSnaps
      if (tailRecords === undefined) {
        tailRecords = new Array(tail.length)
        for (let i = 0; i < tail.length; i++) tailRecords[i] = snapshot(tail[i])
      }
      // The options' text crosses only when it differs from what the native side holds
      // (unknown while a call is being handed over: one that throws sends them again).
      const oj = optionsJson(last.options, options)
      const held = last.optionsSent
      last.optionsSent = undefined
      const pending = last.history.chat(keep, tailJson, long, oj === held ? null : oj, cancel)
      last.optionsSent = oj
      // The native side has taken the tail: record it the same way.
      sent.length = keep
      snaps.length = keep
      for (let i = 0; i < tail.length; i++) {
        sent.push(tail[i])
        snaps.push(tailRecords[i])
      }
      json = await pending
    } catch (e) {
      throw fromNative(e)
    } finally {
      unlink()
    }
    return wire.decodeChatReply(json)
  }

  /**
   * @param {LLMMessage[]} messages
   * @param {LLMChatOptions} options
   */
  async *stream(messages, options) {
    assertValidMessages(messages)
    // Serialised before the abort listener is added: a throw here leaves no listener behind.
    const body = JSON.stringify(messages)
    const opts = optionsJson(undefined, options)
    const [cancel, unlink] = linkSignal(options?.abortSignal)
    let s
    try {
      s = this[NATIVE_ADAPTER].stream(body, opts, cancel)
    } catch (e) {
      unlink()
      throw e
    }
    try {
      for (;;) {
        let batch
        try {
          batch = JSON.parse(await s.nextBatch())
        } catch (e) {
          throw fromNative(e)
        }
        if (batch.length === 0) return
        for (let k = 0; k < batch.length; k++) {
          const ev = DECODE_EVENT(batch[k])
          if (ev.type === 'throw') throw errorFrom(ev.data)
          if (ev.type === 'error') {
            yield { type: 'error', data: errorFrom(ev.data) }
            return
          }
          yield ev
          if (ev.type === 'done') return
        }
      }
    } finally {
      s.close()
      unlink()
    }
  }
}

/** `createAdapter(provider, apiKey?, baseURL?, region?, egressPolicy?)` (§14; the policy is
 *  upstream 1.16's).
 * @param {string} provider
 * @param {string} [apiKey]
 * @param {string} [baseURL]
 * @param {string} [region]
 * @param {unknown} [egressPolicy]
 */
async function createAdapter(provider, apiKey, baseURL, region, egressPolicy) {
  return newAdapter(provider, apiKey, baseURL, region, egressPolicy)
}

/**
 * Through the JS global console: callers spy on it (CONTRACT §18.4).
 * @param {string} provider
 * @param {string | undefined} baseURL
 */
function warnIgnoredBaseURL(provider, baseURL) {
  if (provider === 'bedrock' && baseURL) {
    console.warn(boundary.llm.bedrockBaseUrlIgnored)
  }
  if (provider === 'copilot' && baseURL) {
    console.warn(boundary.llm.copilotBaseUrlIgnored)
  }
}

/** `createAdapter`'s work, synchronously (an Agent's first run calls it without the extra
 *  promise hops).
 * @param {string} provider
 * @param {string} [apiKey]
 * @param {string} [baseURL]
 * @param {string} [region]
 * @param {unknown} [egressPolicy]
 * @returns {NativeAdapter}
 */
function newAdapter(provider, apiKey, baseURL, region, egressPolicy) {
  if (egressPolicy !== undefined) return policyAdapter(provider, apiKey, baseURL, region, egressPolicy)
  warnIgnoredBaseURL(provider, baseURL)
  const name = String(provider)
  const env = envSnapshot(name, apiKey, baseURL, region)
  // The last configuration first: agents built per request repeat the same one.
  const last = lastHandle
  if (last !== null && last.name === name && last.apiKey === apiKey && last.baseURL === baseURL && last.region === region && sameEnv(last.env, env)) {
    return new NativeAdapter(last.h.handle, last.h.name, last.h.echoes)
  }
  const key = JSON.stringify([name, apiKey ?? null, baseURL ?? null, region ?? null, env])
  let h = handles.get(key)
  if (h === undefined) {
    try {
      const handle = native.NativeLlmAdapter.create(name, apiKey ?? null, baseURL ?? null, region ?? null, JSON.stringify(env))
      h = { handle, name: handle.name, echoes: handle.echoesReasoning }
    } catch (e) {
      throw fromNative(e)
    }
    if (handles.size >= 64) handles.clear()
    handles.set(key, h)
  }
  // Only primitive arguments compare by `===` as their JSON compares.
  const plain = (/** @type {unknown} */ v) => v == null || typeof v === 'string'
  lastHandle = plain(apiKey) && plain(baseURL) && plain(region) ? { name, apiKey, baseURL, region, env, h } : null
  // A new adapter object every time (callers may wrap or spy on its methods).
  return new NativeAdapter(h.handle, h.name, h.echoes)
}

/**
 * `newAdapter`'s last configuration and handle (see there).
 * @type {{ name: string, apiKey?: string, baseURL?: string, region?: string, env: Record<string, string>, h: Handle } | null}
 */
let lastHandle = null

/** `newAdapter` under an egress policy: the kernel checks the provider's targets before the
 *  adapter exists (a refusal makes no I/O), then every request the adapter sends. The policy's
 *  verdict comes first, as upstream, so a refused configuration warns of nothing.
 * @param {string} provider
 * @param {string | undefined} apiKey
 * @param {string | undefined} baseURL
 * @param {string | undefined} region
 * @param {unknown} egressPolicy
 */
function policyAdapter(provider, apiKey, baseURL, region, egressPolicy) {
  // Not undefined, so normalised (or thrown).
  const policy = nativePolicy(/** @type {EgressPolicy} */ (normalizeEgressPolicy(egressPolicy)))
  const name = String(provider)
  const env = envSnapshot(name, apiKey, baseURL, region)
  const key = JSON.stringify([name, apiKey ?? null, baseURL ?? null, region ?? null, env, policy.mode, policy.allowedOrigins])
  let h = handles.get(key)
  if (h === undefined) {
    try {
      const handle = native.NativeLlmAdapter.create(name, apiKey ?? null, baseURL ?? null, region ?? null, JSON.stringify(env), policy)
      h = { handle, name: handle.name, echoes: handle.echoesReasoning }
    } catch (e) {
      const err = fromNative(e)
      if (!(err instanceof EgressPolicyError)) warnIgnoredBaseURL(provider, baseURL)
      throw err
    }
    if (handles.size >= 64) handles.clear()
    handles.set(key, h)
  }
  warnIgnoredBaseURL(provider, baseURL)
  return new NativeAdapter(h.handle, h.name, h.echoes)
}

/**
 * A normalised egress policy (frozen).
 * @typedef {import('../index.js').EgressPolicy} EgressPolicy
 */

/**
 * Normalised policy object → its native policy (`normalizeEgressPolicy` made both).
 * @type {WeakMap<object, import('../binding').NativeEgressPolicy>}
 */
const nativePolicies = new WeakMap()

/**
 * @param {EgressPolicy} normalized what `normalizeEgressPolicy` returned
 * @returns {import('../binding').NativeEgressPolicy}
 */
function nativePolicy(normalized) {
  return /** @type {import('../binding').NativeEgressPolicy} */ (nativePolicies.get(normalized))
}

/**
 * Upstream's `normalizeEgressPolicy`: `undefined` stays undefined; otherwise a frozen copy
 * (`{ mode: 'offline' }`, or `{ mode: 'allowlist', allowedOrigins }` with the origins in
 * `URL.origin` form, de-duplicated and sorted), or an `EgressPolicyError` (`invalid-policy`).
 * The checks and texts are the kernel's: this reads what they look at and nothing else (the
 * value's kind, `mode`, its own enumerable keys, `allowedOrigins` and its entries). A policy
 * this returned is returned as it is.
 * @param {unknown} policy
 * @returns {EgressPolicy | undefined}
 */
function normalizeEgressPolicy(policy) {
  if (policy === undefined) return undefined
  if (nativePolicies.has(/** @type {object} */ (policy))) return /** @type {EgressPolicy} */ (policy)
  const isObject = policy !== null && typeof policy === 'object' && !Array.isArray(policy)
  /** @type {string | null} */
  let mode = null
  /** @type {string[]} */
  let keys = []
  /** @type {Array<string | null> | null} */
  let origins = null
  if (isObject) {
    const m = /** @type {Fields} */ (policy).mode
    if (typeof m === 'string') mode = m
    keys = Object.keys(policy)
    const list = /** @type {Fields} */ (policy).allowedOrigins
    if (Array.isArray(list)) {
      origins = new Array(list.length)
      for (let i = 0; i < list.length; i++) {
        const v = list[i]
        origins[i] = typeof v === 'string' ? v : null
      }
    }
  }
  let p
  try {
    p = native.NativeEgressPolicy.normalize(isObject, mode, keys, origins)
  } catch (e) {
    throw fromNative(e)
  }
  const out = p.mode === 'offline' ? Object.freeze({ mode: 'offline' }) : Object.freeze({ mode: 'allowlist', allowedOrigins: Object.freeze(p.allowedOrigins) })
  nativePolicies.set(out, p)
  return out
}

/** The `EgressPolicyError` a request by `provider` to `url` gets under a normalised `policy`, or
 *  null when the policy allows it (the kernel's check; the transport checks every request too).
 * @param {EgressPolicy} policy
 * @param {string} url
 * @param {string} provider
 */
function egressRefusal(policy, url, provider) {
  const r = nativePolicy(policy).refusal(String(url), provider)
  return r === null ? null : errorOfRecord(r)
}

/** Upstream's refusal of a user's own adapter (`AgentConfig.adapter`) under a policy: its
 *  requests are not the kernel's to check.
 * @param {{ name: unknown }} adapter
 */
function unsupportedAdapterError(adapter) {
  return errorOfRecord(native.egressAdapterUnsupported(String(adapter.name)))
}

/**
 * Whether two environment snapshots (`envSnapshot`) hold the same variables and values.
 * @param {Record<string, string>} a
 * @param {Record<string, string>} b
 */
function sameEnv(a, b) {
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || a[ka[i]] !== b[kb[i]]) return false
  }
  return true
}

/** A native adapter is immutable once created: one per distinct configuration (agents are
 *  often created per request, each calling createAdapter), keyed by the arguments and the
 *  environment it read. Bounded; failures are not kept.
 * @type {Map<string, Handle>}
 */
const handles = new Map()

/**
 * A native adapter handle and what is read from it once.
 * @typedef {{ handle: import('../binding').NativeLlmAdapter, name: string, echoes: string }} Handle
 */

/**
 * `extractToolCallsFromText(text, knownToolNames)` (§16.1, with the §21 tokenizer fix).
 * @param {string} text
 * @param {string[]} knownToolNames
 * @returns {import('../index.js').ToolUseBlock[]}
 */
function extractToolCallsFromText(text, knownToolNames) {
  if (typeof text !== 'string' || text === '') return []
  return JSON.parse(native.extractToolCallsFromTextJson(text, (knownToolNames || []).map(String)))
}

/**
 * `repairToolArgs(raw)` (§16.2).
 * @param {string} raw
 * @returns {Record<string, unknown> | null}
 */
function repairToolArgs(raw) {
  const out = native.repairToolArgsJson(String(raw))
  return out === null ? null : JSON.parse(out)
}

/** The runner's options JSON per run: agents are often created per request with the same
 *  options, and the JSON carries the tools' schemas. */
/** @type {JsonMemo} */
const runOptionsMemo = {}
const runOptionsJson = (/** @type {LLMChatOptions} */ options) => optionsJson(runOptionsMemo, options)

module.exports = {
  createAdapter,
  newAdapter,
  normalizeEgressPolicy,
  egressRefusal,
  unsupportedAdapterError,
  memoJson,
  // Pinned against each other by the tests.
  tailWire,
  tailWireGeneric,
  messageWire,
  // For the runner's native path (lib/runner.js).
  runOptionsJson,
  linkSignal,
  fromNative,
  errorFrom,
  extractToolCallsFromText,
  repairToolArgs,
  assertValidMessages,
  NativeAdapter,
  NATIVE_ADAPTER,
}
