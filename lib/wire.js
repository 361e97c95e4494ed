'use strict'
// The JS end of the runner's wire. The codes and layouts are defined once, in
// crates/core/src/kernel/runner/wire.rs (its module docs list every layout); the codes come
// generated (lib/generated/boundary.js), and this module is the only one that reads the layouts.
const native = require('./native.js')

/** @typedef {import('./util.js').Fields} Fields */

const { wire: spec, history } = require('./generated/boundary.js')
// A reply's text blocks, in the kernel's shape (kernel::message::shapes).
const { textBlock } = history

/**
 * An action of the runner machine as the driver performs it. `op` says which of the fields it
 * carries (wire.rs has each kind's layout): only those are present.
 * @typedef {{
 *   op: number,
 *   turn: number,
 *   output: string, inputTokens: number, outputTokens: number, turns: number,
 *   budgetExceeded: boolean, loopDetected: boolean, aborted: boolean,
 *   plan: unknown,
 *   estimatedTokens: number,
 *   messages: import('../index.js').LLMMessage[],
 *   text: string,
 *   totalTokens: number,
 *   info: import('../index.js').LoopDetectionInfo, awaitsPolicy: boolean,
 *   trailingWarning: string | null, calls: import('../index.js').ToolUseBlock[], granted: boolean[],
 *   result: string, ids: string[],
 *   message: string,
 * }} Action
 */

/** Action kinds by name (`OP.TOOL_ROUND`, …), as the machine numbers them. */
const OP = spec.ops
/** What `decode` returns for a response the machine refused (`{ op: REJECTED, message }`). */
const REJECTED = spec.rejected
const KIND_BITS = spec.kindBits
const KIND_MASK = (1 << KIND_BITS) - 1

const TOOL_PRESETS = spec.toolPresets
const AGENT_FRAMEWORK_DISALLOWED = spec.agentFrameworkDisallowed

/** An action as the driver performs it: `op` and the fields of its kind, named as in wire.rs.
 *  `copy`: the driver's copy of the model's last answer (`plainCopy`), which a round of the
 *  verdicts-only layout takes its calls from.
 * @param {import('./native.js').WireAction} w
 * @param {unknown[]} [copy]
 * @returns {Action}
 */
function decode(w, copy) {
  // CallModel, the one action of every LLM call, is a number: no parse. So is a round of the
  // verdicts layout whose calls are all granted, without signatures or a warning (its count).
  if (typeof w === 'number') {
    const op = w & KIND_MASK
    return op === OP.TOOL_ROUND ? copiedRound(null, w >>> KIND_BITS, copy) : /** @type {Action} */ ({ op, turn: w >>> KIND_BITS })
  }
  // The layout of `a[0]`'s kind (wire.rs); each action below is read from it as that layout says.
  /** @type {unknown[]} */
  const a = typeof w === 'string' ? JSON.parse(w) : w
  switch (a[0]) {
    case OP.DONE:
      return /** @type {Action} */ ({
        op: OP.DONE,
        output: a[1],
        inputTokens: a[2],
        outputTokens: a[3],
        turns: a[4],
        budgetExceeded: a[5],
        loopDetected: a[6],
        aborted: a[7],
      })
    case OP.APPLY_PLAN:
      return /** @type {Action} */ ({ op: OP.APPLY_PLAN, plan: a[1] })
    case OP.CUSTOM_COMPRESS:
      return /** @type {Action} */ ({ op: OP.CUSTOM_COMPRESS, estimatedTokens: a[1] })
    case OP.SUMMARIZE:
      return /** @type {Action} */ ({ op: OP.SUMMARIZE, turn: a[1], messages: a[2] })
    case OP.TEXT:
    case OP.INJECT_WARNING:
    case OP.FIRST_TURN_WARNING:
      return /** @type {Action} */ ({ op: a[0], text: a[1] })
    case OP.BUDGET_EXCEEDED:
      return /** @type {Action} */ ({ op: OP.BUDGET_EXCEEDED, totalTokens: a[1] })
    case OP.LOOP_DETECTED:
      return /** @type {Action} */ ({ op: OP.LOOP_DETECTED, info: { kind: a[1], repetitions: a[2], detail: a[3] }, awaitsPolicy: a[4] })
    case OP.TOOL_ROUND: {
      if (typeof a[2] === 'boolean') return copiedRound(a, (a.length - 2) / 2, copy)
      // The calls as tool_use blocks (with the provider's signature when the block had one) and
      // the gate's verdict for each: five fields a call.
      const n = (a.length - 2) / 5
      /** @type {import('../index.js').ToolUseBlock[]} */
      const calls = new Array(n)
      /** @type {boolean[]} */
      const granted = new Array(n)
      for (let i = 0, p = 2; i < n; i++, p += 5) {
        calls[i] = callBlock(a[p], a[p + 1], a[p + 2], a[p + 4])
        granted[i] = /** @type {boolean} */ (a[p + 3])
      }
      return /** @type {Action} */ ({ op: OP.TOOL_ROUND, trailingWarning: a[1], calls, granted })
    }
    case OP.LOOP_STOP_RESULTS:
      return /** @type {Action} */ ({ op: OP.LOOP_STOP_RESULTS, result: a[1], ids: a.slice(2) })
    case REJECTED:
      return /** @type {Action} */ ({ op: REJECTED, message: a[1] })
    default:
      throw new Error(spec.unknownAction(a[0]))
  }
}

/**
 * A round's call as a tool_use block, with the signature when the machine holds one.
 * @type {(id: unknown, name: unknown, input: unknown, signature: unknown) => import('../index.js').ToolUseBlock}
 */
const callBlock = (id, name, input, signature) =>
  /** @type {import('../index.js').ToolUseBlock} */ (
    signature === null ? { type: 'tool_use', id, name, input } : { type: 'tool_use', id, name, input, signature }
  )

/**
 * A round in the verdicts-only layout (wire.rs): the machine's calls are the calls of the
 * driver's copy of the answer (see pushCall: three flat elements, an array of four, or a tool_use
 * object), in order, each with its verdict and the signature as the machine read it (two fields
 * a call of `a`); `a` null: the round that crossed as its count `n`, every call granted, none
 * with a signature, no warning.
 * @param {unknown[] | null} a
 * @param {number} n
 * @param {unknown[] | undefined} copy
 * @returns {Action}
 */
function copiedRound(a, n, copy) {
  /** @type {import('../index.js').ToolUseBlock[]} */
  const calls = new Array(n)
  /** @type {boolean[]} */
  const granted = new Array(n)
  let i = 0
  for (let b = 0; copy !== undefined && b < copy.length && i < n; b++) {
    const block = copy[b]
    /** @type {unknown} */
    let id
    /** @type {unknown} */
    let name
    /** @type {unknown} */
    let input
    if (typeof block === 'string') {
      id = block
      name = copy[b + 1]
      input = copy[b + 2]
      b += 2
    } else if (Array.isArray(block)) {
      id = block[0]
      name = block[1]
      input = block[2]
    } else if (block !== null && typeof block === 'object' && /** @type {Fields} */ (block).type === 'tool_use') {
      const call = /** @type {Fields} */ (block)
      id = call.id
      name = call.name
      input = call.input
    } else continue
    calls[i] = callBlock(id, name, input, a === null ? null : a[3 + 2 * i])
    granted[i] = a === null ? true : /** @type {boolean} */ (a[2 + 2 * i])
    i++
  }
  if (i !== n) throw new Error(spec.roundMismatch)
  return /** @type {Action} */ ({ op: OP.TOOL_ROUND, trailingWarning: a === null ? null : a[1], calls, granted })
}

/**
 * Run `id`'s next action (`copy`: as for `decode`).
 * @param {number} id
 * @param {boolean} aborted
 * @param {unknown[]} [copy]
 */
function next(id, aborted, copy) {
  return decode(native.runNext(id, aborted), copy)
}

/** The model's answer (content as JSON, or null when there is none) and the next action.
 *  `copy`: a `plainCopy` of the content that `contentJson` is the JSON of, or undefined.
 * @param {number} id
 * @param {string | null} contentJson
 * @param {number} inputTokens
 * @param {number} outputTokens
 * @param {unknown[]} [copy]
 */
function respondModel(id, contentJson, inputTokens, outputTokens, copy) {
  return decode(native.runRespond(id, contentJson, inputTokens, outputTokens, copy !== undefined), copy)
}

// What `plainCopy` returns for a value it does not copy, and, inside it, for a member JSON leaves
// out (undefined, a symbol).
const NOT_PLAIN = Symbol('not plain')
const LEFT_OUT = Symbol('left out')
/** How deep `plainCopy` goes, and how long an array it copies: anything beyond takes
 *  JSON.stringify's own path (its errors and texts), as does anything that is not plain. */
const COPY_DEPTH = 64
const COPY_LENGTH = 100000

/**
 * A copy of a JS adapter's answer content made of fresh plain objects, arrays and primitives that
 * `JSON.stringify` writes exactly as they are (`JSON.parse` of the text gives the copy back),
 * or undefined. Each property is read once. A tool_use block is copied as the fields the kernel
 * keeps of a call (`pushCall`, usually three flat elements); any other block whole. What it
 * declines (`toJSON`, class instances, Maps, non-finite numbers, BigInts, functions, `__proto__`
 * keys, more than COPY_DEPTH levels or COPY_LENGTH elements, a throwing getter or proxy, a string
 * or an array as a block) takes the JSON.stringify path instead. Objects of another realm (Jest's
 * test environments) are plain too: an object counts as plain when its prototype has none (that
 * realm's Object.prototype) or it has none itself. With the copy, the machine's round can name
 * its calls by their place in it (`copiedRound`) instead of writing them out again: the tools
 * still run with exactly what the machine judged.
 * @param {unknown} content
 * @returns {unknown[] | undefined}
 */
function plainCopy(content) {
  if (!Array.isArray(content)) return undefined
  try {
    const n = content.length
    if (n > COPY_LENGTH || typeof (/** @type {unknown[] & Fields} */ (content).toJSON) === 'function') return undefined
    // Pushed (a copy's length is not the content's; an array made with its length would also
    // be holey, which JSON writes on its slow path).
    /** @type {unknown[]} */
    const copy = []
    for (let i = 0; i < n; i++) {
      const b = content[i]
      // A string or an array stands for a call in the copy: a block that is one is not copied.
      if (typeof b === 'string' || Array.isArray(b)) return undefined
      if (plainObject(b) && b.type === 'tool_use') {
        if (!pushCall(b, copy)) return undefined
        continue
      }
      const c = copyValue(b, 1)
      if (c === NOT_PLAIN) return undefined
      copy.push(c === LEFT_OUT ? null : c)
    }
    return copy
  } catch {
    return undefined
  }
}

/** Whether `v` is an object plainCopy copies as an object: no toJSON, and its prototype has none
 *  (Object.prototype of any realm) or it has none itself.
 * @param {unknown} v
 * @returns {v is Fields}
 */
function plainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || typeof (/** @type {Fields} */ (v).toJSON) === 'function') return false
  const proto = Object.getPrototypeOf(v)
  return proto === null || Object.getPrototypeOf(proto) === null
}

/**
 * Pushes a tool_use block's copy onto `copy`: the fields the kernel keeps of a call, usually
 * flat as the three elements `id, name, input` (a string where a block would start begins a
 * call), `[id, name, input, signature]` when it has a signature (the kernel reads either as the
 * object it stands for, `parse_copied_content_str`; JSON writes the flat fields of W1's calls in
 * ≈ 45 % of the object's time and a nested array in ≈ 60 %), an object of those fields when
 * one of them is of a kind the kernel refuses (its error then names it). False: not copied.
 * @param {Fields} b
 * @param {unknown[]} copy
 */
function pushCall(b, copy) {
  const id = copyValue(b.id, 1)
  const name = copyValue(b.name, 1)
  const input = copyValue(b.input, 1)
  const signature = copyValue(b.signature, 1)
  // A missing id, name or input (which the kernel refuses) takes the JSON.stringify path.
  if (id === NOT_PLAIN || name === NOT_PLAIN || input === NOT_PLAIN || signature === NOT_PLAIN || id === LEFT_OUT || name === LEFT_OUT || input === LEFT_OUT)
    return false
  if (typeof id === 'string' && typeof name === 'string' && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    if (signature === LEFT_OUT) {
      copy.push(id, name, input)
      return true
    }
    if (typeof signature === 'string') {
      copy.push([id, name, input, signature])
      return true
    }
  }
  copy.push(signature === LEFT_OUT ? { type: 'tool_use', id, name, input } : { type: 'tool_use', id, name, input, signature })
  return true
}

/**
 * @param {unknown} v
 * @param {number} depth
 * @returns {unknown} the copy, NOT_PLAIN or LEFT_OUT
 */
function copyValue(v, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v
    case 'number':
      // JSON writes -0 as 0 and a non-finite number as null: neither is copied as it is.
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : NOT_PLAIN
    case 'undefined':
    case 'symbol':
      return LEFT_OUT
    case 'object':
      break
    default:
      // A function may carry a toJSON that JSON.stringify would call; a BigInt makes it throw.
      return NOT_PLAIN
  }
  if (v === null) return null
  if (depth >= COPY_DEPTH) return NOT_PLAIN
  if (Array.isArray(v)) {
    if (typeof (/** @type {unknown[] & Fields} */ (v).toJSON) === 'function') return NOT_PLAIN
    const n = v.length
    if (n > COPY_LENGTH) return NOT_PLAIN
    // Pushed, so that it is not holey (see plainCopy).
    /** @type {unknown[]} */
    const out = []
    for (let i = 0; i < n; i++) {
      const c = copyValue(v[i], depth + 1)
      if (c === NOT_PLAIN) return NOT_PLAIN
      out.push(c === LEFT_OUT ? null : c)
    }
    return out
  }
  if (!plainObject(v)) return NOT_PLAIN
  const keys = Object.keys(v)
  if (keys.length > COPY_LENGTH) return NOT_PLAIN
  /** @type {Fields} */
  const out = {}
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]
    // An own "__proto__" (JSON.parse makes one) would set the copy's prototype instead.
    if (k === '__proto__') return NOT_PLAIN
    const c = copyValue(v[k], depth + 1)
    if (c === NOT_PLAIN) return NOT_PLAIN
    if (c !== LEFT_OUT) out[k] = c
  }
  return out
}

/**
 * Answers that return nothing unless refused: the refusal's message, else undefined.
 * @param {string | null} r
 */
function refusal(r) {
  return r === null ? undefined : decode(r).message
}
const respondSummary = (/** @type {number} */ id, /** @type {string | null} */ json) => refusal(native.runRespondSummary(id, json))
const respondConversation = (/** @type {number} */ id, /** @type {string | null} */ json) => refusal(native.runRespondConversation(id, json))
const respondLoopAction = (/** @type {number} */ id, /** @type {string} */ action) => native.runRespondLoopAction(id, action)

/**
 * Call `index`'s outcome, answered to the machine as it settles: the machine then holds every
 * settled outcome of a round in flight, with its duration (its record for `RunResult.toolCalls`),
 * whatever happens to the round's other calls. `isError` as the tool's result held it (coded 0
 * false, 1 true, 2 not set: a non-boolean one too); `usage` a delegated run's `[in, out]` or null.
 * @param {number} id
 * @param {number} index
 * @param {{ text: string, isError: unknown, usage: [number, number] | null, duration?: number }} out
 */
function respondToolResult(id, index, out) {
  const e = out.isError === true ? 1 : out.isError === false ? 0 : 2
  const u = out.usage
  native.runToolResult(id, index, out.text, e, u === null ? undefined : u[0], u === null ? undefined : u[1], out.duration)
}

// Replies of the native adapters: fields separated by U+0001 (wire.rs has the layout and the
// instruction counts that keep it over JSON).

/**
 * A string field: as it is, unless written as its JSON string (it held U+0001 or began with `"`).
 * @type {(s: string) => string}
 */
const field = (s) => (s.charCodeAt(0) === 34 /* " */ ? JSON.parse(s) : s)

/**
 * The blocks of a split reply, from field `from` on.
 * @param {string[]} p
 * @param {number} from
 */
function blocks(p, from) {
  /** @type {import('../index.js').ContentBlock[]} */
  const content = []
  for (let i = from; i < p.length; ) {
    switch (p[i]) {
      case 't':
        content.push(textBlock(field(p[i + 1])))
        i += 2
        break
      case 'u':
        content.push({ type: 'tool_use', id: field(p[i + 1]), name: field(p[i + 2]), input: JSON.parse(p[i + 3]) })
        i += 4
        break
      case 's':
        content.push({ type: 'tool_use', id: field(p[i + 1]), name: field(p[i + 2]), input: JSON.parse(p[i + 3]), signature: field(p[i + 4]) })
        i += 5
        break
      case 'j':
        content.push(JSON.parse(p[i + 1]))
        i += 2
        break
      default:
        throw new Error(spec.unknownBlockTag(p[i]))
    }
  }
  return content
}

/**
 * A run's reply (`runChat`): the action the machine moved on to and the response it took.
 * @param {string} reply
 */
function decodeModelReply(reply) {
  const p = reply.split('\u0001')
  const next = p[0].charCodeAt(0) === 91 /* [ */ ? p[0] : +p[0]
  return { action: decode(next), response: { content: blocks(p, 3), usage: { input_tokens: +p[1], output_tokens: +p[2] } } }
}

/**
 * `adapter.chat`'s reply: the LLMResponse.
 * @param {string} reply
 * @returns {import('../index.js').LLMResponse}
 */
function decodeChatReply(reply) {
  const p = reply.split('\u0001')
  return { id: field(p[2]), content: blocks(p, 5), model: field(p[3]), stop_reason: field(p[4]), usage: { input_tokens: +p[0], output_tokens: +p[1] } }
}

module.exports = {
  OP,
  REJECTED,
  TOOL_PRESETS,
  AGENT_FRAMEWORK_DISALLOWED,
  decode,
  next,
  respondModel,
  plainCopy,
  respondSummary,
  respondConversation,
  respondLoopAction,
  respondToolResult,
  decodeModelReply,
  decodeChatReply,
}
