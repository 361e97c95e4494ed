'use strict'
// The JS end of the runner's wire. The codes and layouts are defined once, in
// crates/core/src/kernel/runner/wire.rs (its module docs list every layout); the binding hands
// the codes over at load (`wireSpec`), and this module is the only one that reads the layouts.
const native = require('./native.js')

const spec = JSON.parse(native.wireSpec())

/** Action kinds by name (`OP.TOOL_ROUND`, …), as the machine numbers them. */
const OP = Object.freeze(spec.ops)
/** What `decode` returns for a response the machine refused (`{ op: REJECTED, message }`). */
const REJECTED = spec.rejected
const KIND_BITS = spec.kindBits
const KIND_MASK = (1 << KIND_BITS) - 1

const TOOL_PRESETS = Object.freeze(Object.fromEntries(
  Object.entries(spec.toolPresets).map(([name, tools]) => [name, Object.freeze(tools)]),
))
const AGENT_FRAMEWORK_DISALLOWED = Object.freeze(spec.agentFrameworkDisallowed)

/** An action as the driver performs it: `op` and the fields of its kind, named as in wire.rs. */
function decode(w) {
  // CallModel, the one action of every LLM call, is a number: no parse.
  if (typeof w === 'number') return { op: w & KIND_MASK, turn: w >>> KIND_BITS }
  const a = typeof w === 'string' ? JSON.parse(w) : w
  switch (a[0]) {
    case OP.DONE:
      return {
        op: OP.DONE, output: a[1], inputTokens: a[2], outputTokens: a[3], turns: a[4],
        budgetExceeded: a[5], loopDetected: a[6], aborted: a[7],
      }
    case OP.APPLY_PLAN:
      return { op: OP.APPLY_PLAN, plan: a[1] }
    case OP.CUSTOM_COMPRESS:
      return { op: OP.CUSTOM_COMPRESS, estimatedTokens: a[1] }
    case OP.SUMMARIZE:
      return { op: OP.SUMMARIZE, turn: a[1], messages: a[2] }
    case OP.TEXT:
    case OP.INJECT_WARNING:
    case OP.FIRST_TURN_WARNING:
      return { op: a[0], text: a[1] }
    case OP.BUDGET_EXCEEDED:
      return { op: OP.BUDGET_EXCEEDED, totalTokens: a[1] }
    case OP.LOOP_DETECTED:
      return { op: OP.LOOP_DETECTED, info: { kind: a[1], repetitions: a[2], detail: a[3] }, awaitsPolicy: a[4] }
    case OP.TOOL_ROUND: {
      // The calls as tool_use blocks (with the provider's signature when the block had one) and
      // the gate's verdict for each: five fields a call.
      const n = (a.length - 2) / 5
      const calls = new Array(n)
      const granted = new Array(n)
      for (let i = 0, p = 2; i < n; i++, p += 5) {
        calls[i] = a[p + 4] === null
          ? { type: 'tool_use', id: a[p], name: a[p + 1], input: a[p + 2] }
          : { type: 'tool_use', id: a[p], name: a[p + 1], input: a[p + 2], signature: a[p + 4] }
        granted[i] = a[p + 3]
      }
      return { op: OP.TOOL_ROUND, trailingWarning: a[1], calls, granted }
    }
    case OP.LOOP_STOP_RESULTS:
      return { op: OP.LOOP_STOP_RESULTS, result: a[1], ids: a.slice(2) }
    case REJECTED:
      return { op: REJECTED, message: a[1] }
    default:
      throw new Error(`oma-kernel: unknown runner action ${a[0]}`)
  }
}

/** Run `id`'s next action. */
function next(id, aborted) {
  return decode(native.runNext(id, aborted))
}

/** The model's answer (content as JSON, or null when there is none) and the next action. */
function respondModel(id, contentJson, inputTokens, outputTokens) {
  return decode(native.runRespond(id, contentJson, inputTokens, outputTokens))
}

/** Answers that return nothing unless refused: the refusal's message, else undefined. */
function refusal(r) {
  return r === null ? undefined : decode(r).message
}
const respondSummary = (id, json) => refusal(native.runRespondSummary(id, json))
const respondConversation = (id, json) => refusal(native.runRespondConversation(id, json))
const respondLoopAction = (id, action) => native.runRespondLoopAction(id, action)

/** Call `index`'s outcome; `isError` true, false or undefined; `usage` `[in, out]` or null. */
function respondToolResult(id, index, content, isError, usage) {
  const e = isError === true ? 1 : isError === false ? 0 : 2
  if (usage === null) native.runToolResult(id, index, content, e)
  else native.runToolResult(id, index, content, e, usage[0], usage[1])
}

/**
 * A round's outcomes (`done[i]` as for `respondToolResult`, calls 0…n-1), handed over in one
 * crossing: `code` (isError as above, +4 when usage follows), content[, usage in, out], ….
 */
function respondToolResults(id, done) {
  const args = [id]
  for (let i = 0; i < done.length; i++) {
    const d = done[i]
    const e = d.isError === true ? 1 : d.isError === false ? 0 : 2
    if (d.usage === null) args.push(e, d.text)
    else args.push(e | 4, d.text, d.usage[0], d.usage[1])
  }
  native.runToolResults(...args)
}

// Replies of the native adapters: fields separated by U+0001 (wire.rs has the layout and the
// instruction counts that keep it over JSON).

/** A string field: as it is, unless written as its JSON string (it held U+0001 or began with `"`). */
const field = (s) => (s.charCodeAt(0) === 34 /* " */ ? JSON.parse(s) : s)

/** The blocks of a split reply, from field `from` on. */
function blocks(p, from) {
  const content = []
  for (let i = from; i < p.length;) {
    switch (p[i]) {
      case 't':
        content.push({ type: 'text', text: field(p[i + 1]) })
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
        throw new Error(`oma-kernel: unknown block tag in a reply: ${p[i]}`)
    }
  }
  return content
}

/** A run's reply (`runChat`): the action the machine moved on to and the response it took. */
function decodeModelReply(reply) {
  const p = reply.split('\u0001')
  const next = p[0].charCodeAt(0) === 91 /* [ */ ? p[0] : +p[0]
  return { action: decode(next), response: { content: blocks(p, 3), usage: { input_tokens: +p[1], output_tokens: +p[2] } } }
}

/** `adapter.chat`'s reply: the LLMResponse. */
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
  respondSummary,
  respondConversation,
  respondLoopAction,
  respondToolResult,
  respondToolResults,
  decodeModelReply,
  decodeChatReply,
}
