'use strict'
// The JS driver of the kernel's runner machine (crates/core/src/kernel/runner.rs). The machine decides
// everything; this loop only awaits what the user handed over (adapter, tools, callbacks)
// and keeps the JS mirror of the conversation that the user's adapter receives.
const native = require('./native.js')
const { TokenBudgetExceededError, toError, safeString } = require('./errors.js')
const { attach, dropRejection, promiseThen, emitTrace, defaultWorkspaceDir, onlyKeys, copyInput } = require('./util.js')
const { thrownMessage, ToolExecutor, OWN_INPUT, abortedDuringText } = require('./tools.js')
const llm = require('./llm.js')
const wire = require('./wire.js')
const { ABANDON_AFTER_MS, callDeadline, listenable } = require('./deadline.js')
const { timeoutMs: checkToolTimeout } = require('./tool-deadline.js')
const { RunScopedShellExecutor, releaseUnreported, warnUnreported } = require('./shell.js')
const boundary = require('./generated/boundary.js')
const RUNNER = boundary.runner
// Every message and block the run adds is built by the kernel's own shape (kernel::message::shapes):
// one history, written by the machine and mirrored here, key for key.
const { message, userMessage, assistantMessage, userText, textBlock, toolResultBlock } = boundary.history

const { OP, REJECTED } = wire

/** @typedef {import('./util.js').Fields} Fields */
/** @typedef {import('./wire.js').Action} Action */
/** @typedef {import('../index.js').RunnerOptions} RunnerOptions */
/** @typedef {import('../index.js').LLMMessage} LLMMessage */
/** @typedef {import('../index.js').ToolResult} ToolResult */
/** @typedef {import('../index.js').ToolUseBlock} ToolUseBlock */
/** @typedef {import('../index.js').ToolUseContext} ToolUseContext */
/** @typedef {import('../index.js').LLMChatOptions} LLMChatOptions */
/** @typedef {import('../index.js').LLMResponse} LLMResponse */
/**
 * A run's options: the public ones and the Agent's (BUDGET_SPENT, the only symbol key read; a
 * symbol index because the key's own type does not survive module.exports).
 * @typedef {import('../index.js').RunOptions & { [budgetSpent: symbol]: number | undefined }} RunOpts
 */
/**
 * What the driver yields: stream()'s events, and run()'s `done` / `error`.
 * @typedef {{ type: import('../index.js').StreamEvent['type'] | 'text_delta', data: unknown }} DriveEvent
 */
/**
 * What the run reads of a model's answer.
 * @typedef {Pick<LLMResponse, 'content' | 'usage'>} ModelAnswer
 */
/**
 * The fields every trace event of a run shares.
 * @typedef {{ runId: string, taskId?: string, agent: string }} TraceBase
 */
/**
 * A tool's outcome as `readResult` read it once (`result` as it came: passed on as it is),
 * with its duration once finished.
 * @typedef {{
 *   result: ToolResult, data: unknown, isError: unknown, usage: [number, number] | null, text: string,
 *   gate?: import('../index.js').ToolCallGateMetadata, duration?: number,
 * }} Outcome
 */

/** @type {{ snap?: unknown, json?: string }} */
const runnerOptionsMemo = {}

/** A run option of the Agent's checked structured-output retries (issue 19): tokens of earlier
 *  attempts that count toward this run's maxTokenBudget. A symbol: no caller sets it. */
const BUDGET_SPENT = Symbol('oma-kernel.budgetSpent')

/** The subset of RunnerOptions the kernel reads, as JSON (undefined keys vanish, null stays).
 *  With `memo`, the previous text is reused while that subset is unchanged (agents are often
 *  built per request with the same options).
 * @param {Partial<RunnerOptions>} o
 * @param {{ snap?: unknown, json?: string }} [memo]
 */
function coreOptionsJson(o, memo) {
  const ld = o.loopDetection
  // Every strategy's fields, each read as it is (the kernel checks them).
  const cs = /** @type {Fields | undefined} */ (o.contextStrategy)
  const num = (/** @type {unknown} */ v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)
  const picked = {
    maxTurns: num(o.maxTurns),
    maxTokenBudget: o.maxTokenBudget,
    agentName: o.agentName,
    toolPreset: o.toolPreset,
    allowedTools: o.allowedTools,
    disallowedTools: o.disallowedTools,
    loopDetection: ld
      ? {
          maxRepetitions: ld.maxRepetitions,
          loopDetectionWindow: ld.loopDetectionWindow,
          onLoopDetected: typeof ld.onLoopDetected === 'function' ? undefined : ld.onLoopDetected,
          match: ld.match,
        }
      : undefined,
    loopCallback: ld ? typeof ld.onLoopDetected === 'function' : undefined,
    contextStrategy: cs
      ? {
          type: cs.type,
          maxTurns: cs.maxTurns,
          maxTokens: cs.maxTokens,
          preserveRecentTurns: cs.preserveRecentTurns,
          minToolResultChars: cs.minToolResultChars,
          minTextBlockChars: cs.minTextBlockChars,
          textBlockExcerptChars: cs.textBlockExcerptChars,
        }
      : undefined,
    compressToolResults: o.compressToolResults,
  }
  return memo === undefined ? JSON.stringify(picked) : llm.memoJson(memo, picked)
}

/** The text of a conversation that is exactly what `Agent.run(prompt)` builds, one user message
 *  with one text block (read as JSON.stringify would read it: own enumerable properties, no
 *  toJSON), else undefined. The kernel then takes the text without a JSON round trip.
 * @param {unknown[]} conv
 */
function promptOf(conv) {
  if (conv.length !== 1) return undefined
  const m = /** @type {Fields | null | undefined} */ (conv[0]) // the caller's: any value
  if (m === null || typeof m !== 'object' || typeof m.toJSON === 'function' || !onlyKeys(m, 'role', 'content') || m.role !== 'user') return undefined
  const content = m.content
  if (!Array.isArray(content) || content.length !== 1 || typeof (/** @type {unknown[] & Fields} */ (content).toJSON) === 'function') return undefined
  const b = /** @type {Fields | null | undefined} */ (content[0])
  if (b === null || typeof b !== 'object' || typeof b.toJSON === 'function' || !onlyKeys(b, 'type', 'text')) return undefined
  return b.type === 'text' && typeof b.text === 'string' ? b.text : undefined
}

/**
 * A kernel plan of the conversation (wire.rs): per message, its index in `conv`, or a message
 * whose blocks are indices into message `src`'s content, or new blocks.
 * @typedef {Array<number | { role: 'user' | 'assistant', src: number, content: Array<number | import('../index.js').ContentBlock> }>} Plan
 */

/**
 * Rebuilds the JS conversation from a kernel plan (indices keep the very objects).
 * @param {LLMMessage[]} conv
 * @param {Plan} plan
 * @returns {LLMMessage[]}
 */
function applyPlan(conv, plan) {
  return plan.map((p) =>
    typeof p === 'number'
      ? conv[p]
      : message(
          p.role,
          p.content.map((b) => (typeof b === 'number' ? conv[p.src].content[b] : b)),
        ),
  )
}

/** @param {unknown} response what the adapter returned */
function responseJson(response) {
  if (response === null || typeof response !== 'object') return null
  try {
    return JSON.stringify({ content: /** @type {Fields} */ (response).content, usage: /** @type {Fields} */ (response).usage })
  } catch {
    return null
  }
}

// The kernel's verdict per options text: apps build agents per request with the same few
// configurations, and the verdict of a text never changes (bounded like the kernel's cache).
/** @type {Map<string, string | null>} */
const verdicts = new Map()
/** @param {string} json */
function validateOptions(json) {
  let err = verdicts.get(json)
  if (err === undefined) {
    err = native.validateRunnerOptions(json) ?? null
    if (verdicts.size >= 256) verdicts.clear()
    verdicts.set(json, err)
  }
  return err
}

// The kernel's grant resolution depends only on the options text and the registry list, and
// agents are built per request with the same few of each: kept per pair (bounded), with the
// native start plan runs of that pair start from (freed when the entry is dropped; `plan` -1).
/**
 * A grant resolution: the granted names, the warnings, and the native start plan.
 * @typedef {{ names: string[], warnings: string[], list: string, plan: number }} Resolution
 */
/** @type {Map<string, Map<string, Resolution>>} */
const resolutions = new Map()
/** @param {Map<string, Resolution>} byList */
function dropPlans(byList) {
  for (const r of byList.values()) {
    native.runnerPlanFree(r.plan)
    r.plan = -1
  }
}
/**
 * @param {string} json
 * @param {string} list
 */
function resolution(json, list) {
  let byList = resolutions.get(json)
  if (byList === undefined) {
    if (resolutions.size >= 64) {
      for (const m of resolutions.values()) dropPlans(m)
      resolutions.clear()
    }
    byList = new Map()
    resolutions.set(json, byList)
  }
  let r = byList.get(list)
  if (r === undefined) {
    const plan = native.runnerPlan(json, list)
    r = { names: native.runnerPlanNames(plan), warnings: native.runnerWarnings(), list, plan }
    if (byList.size >= 64) {
      dropPlans(byList)
      byList.clear()
    }
    byList.set(list, r)
  }
  return r
}

/** @type {FinalizationRegistry<number>} */
const runLeases = new FinalizationRegistry((id) => native.runRelease(id))
/** @type {FinalizationRegistry<number>} */
const summaryCaches = new FinalizationRegistry((id) => native.summaryCacheFree(id))
// A stream dropped without return() also ends its run's shell executor lease.
/** @type {FinalizationRegistry<RunScopedShellExecutor>} */
const shellLeases = new FinalizationRegistry((shell) => {
  releaseUnreported(shell)
})
const num = (/** @type {unknown} */ v) => (typeof v === 'number' ? v : 0)

/** The driver's view of one answer: `content` is read once (the mirror keeps that very
 *  value, not a second read of a getter), `copy` is the plain copy the machine was handed
 *  (undefined when the content was not plain: see wire.plainCopy) and `action` is the machine's
 *  next action.
 * @type {{ content: unknown, copy: unknown[] | undefined, action: Action | undefined }}
 */
const answer = { content: undefined, copy: undefined, action: undefined }

/** Hands the model's answer to the machine: content as JSON, usage as numbers (the machine
 *  counts a non-finite one as 0). Plain content goes as the JSON of its copy, which the round's
 *  calls are then taken from. Fills `answer`; throws when the content cannot be written as JSON,
 *  saying why (the machine would only see that it is missing).
 * @param {number} id
 * @param {unknown} response what the adapter returned
 */
function respond(id, response) {
  answer.content = undefined
  answer.copy = undefined
  let action
  if (response === null || typeof response !== 'object') {
    action = wire.respondModel(id, null, 0, 0)
  } else {
    const content = /** @type {Fields} */ (response).content
    const copy = wire.plainCopy(content)
    let json
    try {
      json = JSON.stringify(copy === undefined ? content : copy) ?? null
    } catch (e) {
      throw new Error(RUNNER.malformedContent(unserialisable(e)))
    }
    const u = /** @type {Fields & { usage?: Fields | null }} */ (response).usage
    answer.content = content
    answer.copy = copy
    action = wire.respondModel(id, json, u ? num(u.input_tokens) : 0, u ? num(u.output_tokens) : 0, copy)
  }
  answer.action = action
  return answer
}

/**
 * Why JSON.stringify failed, in words: the engine's texts name neither depth nor the value.
 * @param {unknown} e
 */
function unserialisable(e) {
  const msg = thrownMessage(e)
  if (/Maximum call stack/.test(msg)) return RUNNER.unserialisable.tooDeep
  if (/circular/i.test(msg)) return RUNNER.unserialisable.circular
  if (/BigInt/.test(msg)) return RUNNER.unserialisable.bigint
  return RUNNER.unserialisable.threw(msg.split('\n')[0])
}

/** @param {unknown} input */
function redactInput(input) {
  let json
  try {
    json = JSON.stringify(input)
  } catch {
    return {}
  }
  return json === undefined ? input : JSON.parse(native.traceRedactJson(json))
}

/**
 * A run's watch on its abort signal: one listener for the whole run (an EventTarget listener
 * added and removed per awaited call cost ≈ 12k instructions per LLM call). On abort, the
 * tools still running are answered at once, and the user's adapter or callback the driver is
 * waiting for is given ABANDON_AFTER_MS to settle, then left behind. Whatever is left behind
 * keeps its handlers, so its later outcome can never become an unhandled rejection. A watch
 * over no signal (`null`) stands for a run that is already over (a stream its consumer
 * stopped): each wait on it is given ABANDON_AFTER_MS from its start.
 */
class AbortWatch {
  /** @param {AbortSignal | null} signal */
  constructor(signal) {
    this.signal = signal
    /** @type {Set<() => void>} */
    this.tools = new Set() // per running tool: answers it as aborted
    /** @type {((err: unknown) => void) | null} */
    this.reject = null // the driver's current wait (it awaits one user call at a time)
    /** @type {(() => unknown) | null} */
    this.abandoned = null
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
    // Bound, not an arrow assigned here: see AgentRun.begin on storing per-run closures.
    this.onAbort = this.abortTools.bind(this)
    if (signal !== null) signal.addEventListener('abort', this.onAbort, { once: true })
  }

  /** Whether the run is over for this watch: its signal aborted, or it has none. */
  over() {
    return this.signal === null || this.signal.aborted === true
  }

  /** The abort: every running tool answered, the current wait given its time. */
  abortTools() {
    for (const answer of this.tools) answer()
    this.tools.clear()
    this.arm()
  }

  arm() {
    if (this.timer === null && this.reject !== null) this.timer = setTimeout(() => this.giveUp(), ABANDON_AFTER_MS)
  }

  giveUp() {
    this.timer = null
    const reject = this.reject
    if (reject === null) return
    this.reject = null
    reject(/** @type {() => unknown} */ (this.abandoned)()) // set with `reject` (wait)
  }

  /** `value` (what a user's adapter or callback returned) awaited, unless the run is aborted
   *  and it has not settled ABANDON_AFTER_MS later: then rejects with `abandoned()`.
   * @template T
   * @param {T | PromiseLike<T>} value
   * @param {() => unknown} abandoned
   * @returns {Promise<T>}
   */
  wait(value, abandoned) {
    return new Promise((resolve, reject) => {
      /**
       * @template V
       * @param {(v: V) => void} fn
       * @param {V} v
       */
      const settle = (fn, v) => {
        if (this.reject !== reject) return // abandoned already
        this.reject = null
        if (this.timer !== null) {
          clearTimeout(this.timer)
          this.timer = null
        }
        fn(v)
      }
      this.reject = reject
      this.abandoned = abandoned
      attach(
        value,
        (v) => settle(resolve, v),
        (e) => settle(reject, e),
      )
      if (this.over()) this.arm()
    })
  }

  /**
   * Resolves with an isError result if the run is aborted while the tool is still running.
   * @param {unknown} promise what the executor returned
   * @param {string} name
   * @returns {unknown}
   */
  tool(promise, name) {
    if (this.over()) return promise
    return new Promise((resolve, reject) => {
      const onAbort = () => resolve({ data: abortedDuringText(name), isError: true })
      this.tools.add(onAbort)
      attach(
        promise,
        (v) => {
          this.tools.delete(onAbort)
          resolve(v)
        },
        (e) => {
          this.tools.delete(onAbort)
          reject(e)
        },
      )
    })
  }

  dispose() {
    if (this.signal !== null) this.signal.removeEventListener('abort', this.onAbort)
    this.tools.clear()
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.reject = null
  }
}

// What an aborted run's wait on its shell release gives up with (awaitShellRelease).
const LEFT_BEHIND = Symbol('left behind')
const leftBehind = () => LEFT_BEHIND

/**
 * A run's shell release (`release`, its promise), awaited through the run's abort watch (issue
 * 30: nothing a run waits on at its end may hold it past its abort). A lease is released only
 * once its ShellExecutor's `start` settled, and its last release awaits `dispose`: an aborted
 * run waits ABANDON_AFTER_MS at most for either, then ends without it; the release goes on
 * behind the run, a failure then a process warning (as for a run that already failed).
 * @param {Promise<void>} release
 * @param {AbortWatch | null} watch
 */
async function awaitShellRelease(release, watch) {
  if (watch === null) return release
  try {
    await watch.wait(release, leftBehind)
  } catch (e) {
    if (e !== LEFT_BEHIND) throw e
    attach(release, undefined, warnUnreported)
  }
  return undefined
}

/**
 * `value` awaited through the run's watch, if it has one.
 * @type {<T>(value: T | PromiseLike<T>, watch: AbortWatch | null, abandoned: () => unknown) => T | PromiseLike<T>}
 */
const settleOrAbandon = (value, watch, abandoned) => (watch === null ? value : watch.wait(value, abandoned))

/**
 * `value` (what a user's callback returned) awaited under `signal` with a watch of its own, for
 * a driver that holds no run's watch while it waits (an Agent's beforeRun and afterRun): as
 * `settleOrAbandon`, it rejects with `abandoned()` once the signal aborted and `value` has not
 * settled ABANDON_AFTER_MS later. Without a signal to listen to, `value` itself (awaited as
 * before: no watch, no extra promise).
 * @template T
 * @param {T | PromiseLike<T>} value
 * @param {AbortSignal | null | undefined} signal
 * @param {() => unknown} abandoned
 * @returns {T | PromiseLike<T>}
 */
function settleOrAbandonOn(value, signal, abandoned) {
  if (!listenable(signal)) return value
  const watch = new AbortWatch(signal)
  const waited = watch.wait(value, abandoned)
  const dispose = () => watch.dispose()
  promiseThen.call(waited, dispose, dispose)
  return waited
}

/**
 * A stopped stream's shell release (its consumer called return() at a yield): the run is over,
 * so the release is waited for as an aborted run's is, ABANDON_AFTER_MS at most, then left
 * behind (a failure a process warning): return() never hangs on a ShellExecutor whose start or
 * dispose never settles.
 * @param {RunScopedShellExecutor} shell
 */
function awaitStoppedRelease(shell) {
  const watch = new AbortWatch(null)
  const done = () => watch.dispose()
  return promiseThen.call(awaitShellRelease(releaseUnreported(shell), watch), done, done)
}

// The native adapters' text for an aborted request (CONTRACT §14), so an aborted run reads the
// same whichever kind of adapter it used.
const requestAborted = () => new Error(boundary.llm.abortedMessage)
const abortedWhile = (/** @type {string} */ what) => () => new Error(RUNNER.abortedWhile(what))
const compressAborted = abortedWhile('contextStrategy.compress')
const policyAborted = abortedWhile('loopDetection.onLoopDetected')

/**
 * A tool's outcome read once, field by field (a getter may answer differently on each read or
 * throw; a custom executor may return anything): what onToolResult, the trace, the record, the
 * result block and the machine all see. A result that cannot be read is the tool's fault and
 * answers its call with an isError result, like a throw.
 * @param {string} name
 * @param {unknown} result what the tool (or executor) gave
 * @returns {Outcome}
 */
function readResult(name, result) {
  try {
    if (result === null || typeof result !== 'object') {
      const data = RUNNER.invalidResultNotObject(name, result === null ? 'null' : typeof result)
      return { result: { data, isError: true }, data, isError: true, usage: null, text: data }
    }
    // Any object: each field read once, as it is.
    const r = /** @type {Fields & { metadata?: Fields & { tokenUsage?: Fields, toolCallGate?: import('../index.js').ToolCallGateMetadata } | null }} */ (result)
    const data = r.data
    const isError = r.isError
    const metadata = r.metadata
    const hasMetadata = metadata !== undefined && metadata !== null
    const u = hasMetadata ? metadata.tokenUsage : undefined
    /** @type {[number, number] | null} */
    const usage = u ? [num(u.input_tokens), num(u.output_tokens)] : null
    // An onToolCall gate's verdict (the executor's `metadata.toolCallGate`), for the trace.
    const gate = hasMetadata ? metadata.toolCallGate : undefined
    return { result: /** @type {ToolResult} */ (result), data, isError, usage, text: typeof data === 'string' ? data : safeString(data), gate }
  } catch (err) {
    const data = RUNNER.resultUnreadable(name, thrownMessage(err))
    return { result: { data, isError: true }, data, isError: true, usage: null, text: data }
  }
}

/** The outcome of a call the gate did not grant (the executor is not called).
 * @param {ToolUseBlock} call
 */
const notGranted = (call) => ({ data: native.notGrantedText(call.name), isError: true })

/** The outcome of a call whose executor threw or rejected.
 * @param {unknown} err
 */
const failedResult = (err) => ({ data: thrownMessage(err), isError: true })

/** A round's call as a stream consumer is shown it: the same block with a copy of its input
 *  (the kernel's own input object is the one its tool runs with, issue 30).
 * @param {ToolUseBlock} call
 */
function shownCall(call) {
  /** @type {{ -readonly [K in keyof ToolUseBlock]: ToolUseBlock[K] }} */
  const shown = { type: 'tool_use', id: call.id, name: call.name, input: copyInput(call.input) }
  if (call.signature !== undefined) shown.signature = call.signature
  return shown
}

/** A block's own tool context: the round's fields and its tool_use id, written as a literal.
 *  An object spread per block cost ≈ 1.5 µs per tool call (W1 16×10: 13.4× instead of 19× the
 *  ai SDK's time, session 8).
 * @param {ToolUseContext} c
 * @param {string} id
 */
function blockContext(c, id) {
  /** @type {MutableContext} */
  const b = { agent: c.agent, abortSignal: c.abortSignal, cwd: c.cwd }
  if (c.team !== undefined) b.team = c.team
  if (c.shellExecutor !== undefined) b.shellExecutor = c.shellExecutor
  if (c.runId !== undefined) b.runId = c.runId
  if (c.taskId !== undefined) b.taskId = c.taskId
  b.toolCallId = id
  return b
}

/**
 * One run's state and the driver's steps that neither await nor yield: `_drive` keeps only
 * those. A generator's locals are slots of its frame, which each running agent keeps alive
 * across its awaits (issue 18's W2), and a large generator is one TurboFan takes long to
 * optimise: 196 ms for the 5.7 KB of bytecode `_drive` had when it held all of this, compiled
 * while W2 ran, on a background thread whose malloc arena kept the compiler's memory.
 */
/**
 * A tool context as the runner builds it, field by field.
 * @typedef {{ -readonly [K in keyof ToolUseContext]: ToolUseContext[K] }} MutableContext
 */

class Drive {
  /**
   * @param {AgentRunner} runner
   * @param {LLMMessage[]} initialMessages
   * @param {RunOpts} options
   * @param {boolean} streaming
   */
  constructor(runner, initialMessages, options, streaming) {
    const ro = runner.options
    this.runner = runner
    this.options = options
    this.streaming = streaming
    this.conv = initialMessages.slice()
    const toolDefs = runner.resolveTools()
    const signal = options.abortSignal ?? ro.abortSignal
    this.signal = signal
    // The copier's fields are LLMChatOptions' own (oma_llm::CHAT_OPTION_FIELDS, checked in Rust).
    this.chatOptions = /** @type {LLMChatOptions} */ (boundary.llm.copyChatOptions(ro, toolDefs.length > 0 ? toolDefs : undefined, signal))
    // Grants what resolveTools() just resolved: its plan, or one made for this start from the
    // same texts if the cache dropped it meanwhile (say, another runner inside a console.warn spy).
    const resolved = /** @type {Resolution} */ (runner._resolved) // resolveTools() just set it
    const plan = resolved.plan >= 0 ? resolved.plan : native.runnerPlan(runner._json, resolved.list)
    const prompt = promptOf(this.conv)
    // The run's one abort listener (disposed when the run ends, whichever way).
    this.watch = listenable(signal) ? new AbortWatch(signal) : null
    // Read once per run: unset (the default) leaves every model call exactly as without it.
    this.callTimeoutMs = ro.callTimeoutMs
    // A configured shell executor, as this run's tools see it: leased by the run's first command
    // and released when the run ends, whichever way (lib/shell.js). Unset: nothing is made.
    this.shell = ro.shellExecutor === undefined || ro.shellExecutor === null ? null : new RunScopedShellExecutor(ro.shellExecutor)
    this.shellReleased = false
    try {
      // run() shows no events: the machine then skips the actions that only emit one.
      const onWarning = typeof options.onWarning === 'function'
      const spent = options[BUDGET_SPENT]
      this.id =
        prompt === undefined
          ? native.runnerStart(plan, runner._summaryCache, JSON.stringify(this.conv), onWarning, streaming, spent)
          : native.runnerStartPrompt(plan, runner._summaryCache, prompt, onWarning, streaming, spent)
    } catch (e) {
      if (this.watch !== null) this.watch.dispose()
      throw e
    } finally {
      if (plan !== resolved.plan) native.runnerPlanFree(plan)
    }
    // A generator dropped without return() never reaches `finally`: free its run on GC.
    const lease = streaming ? {} : null
    if (lease) runLeases.register(lease, this.id, lease)
    if (lease && this.shell !== null) shellLeases.register(lease, this.shell, lease)
    this.lease = lease
    // A native adapter whose chat is not replaced (spied or wrapped) takes the native path.
    const nh = runner.adapter ? /** @type {{ [llm.NATIVE_ADAPTER]?: import('../binding').NativeLlmAdapter }} */ (runner.adapter)[llm.NATIVE_ADAPTER] : undefined
    this.nativeAdapter = nh && runner.adapter.chat === llm.NativeAdapter.prototype.chat ? nh : undefined
    this.nativeOptions = undefined
    /** @type {LLMMessage[] | null} */
    this.checked = null // the conversation array last checked for the native path
    // The native call in flight (see nativeRequest).
    /** @type {ReturnType<typeof callDeadline>} */
    this.deadline = null
    /** @type {ReturnType<typeof llm.linkSignal> | null} */
    this.link = null // linkSignal's pair [cancel handle, unlink]: kept whole (see AgentRun.begin on storing closures)
    // RunResult.messages and .toolCalls as the caller gets them: the very objects the run made
    // (its messages, the adapter's content, the input each tool ran with, the tool's `data`). The
    // machine holds both as data (Machine::added_messages, Machine::tool_calls_made), which a
    // restored run rebuilds them from; they differ only where a JS value is not JSON (a custom
    // executor's non-string `data`, which the history holds as its text).
    /** @type {LLMMessage[]} */
    this.newMessages = []
    /** @type {import('../index.js').ToolCallRecord[]} */
    this.toolCalls = []
    const onTrace = options.onTrace
    this.onTrace = onTrace
    this.trace = onTrace ? { runId: options.runId ?? '', taskId: options.taskId, agent: options.traceAgent ?? ro.agentName ?? 'unknown' } : null
    /** @type {unknown} */
    this.content = undefined // the JS adapter's content, read once (see respond)
    /** @type {unknown[] | undefined} */
    this.copy = undefined // its plain copy, until the round that takes its calls from it
    /** @type {Action | undefined} */
    this.pending = undefined // an action already fetched together with the model's response
    this.released = false
  }

  /** The machine's next action: the one that came with the model's answer, else polled. */
  next() {
    const action = this.pending ?? wire.next(this.id, this.signal?.aborted === true, this.copy)
    this.pending = undefined
    // The round has taken its calls from the copy (they keep what they need of it).
    if (action.op === OP.TOOL_ROUND) this.copy = undefined
    return action
  }

  /**
   * Done's RunResult; handing out Done released the run.
   * @param {Action} action
   */
  finish(action) {
    this.released = true
    if (this.lease) runLeases.unregister(this.lease)
    /** @type {{ -readonly [K in keyof import('../index.js').RunResult]: import('../index.js').RunResult[K] }} */
    const result = {
      messages: this.newMessages,
      output: action.output,
      toolCalls: this.toolCalls,
      tokenUsage: { input_tokens: action.inputTokens, output_tokens: action.outputTokens },
      turns: action.turns,
    }
    if (action.loopDetected) result.loopDetected = true
    if (action.budgetExceeded) result.budgetExceeded = true
    if (action.aborted) result.aborted = true
    return result
  }

  /** The run's shell executor when it is still to be released (from now on it counts as
   *  released), else null. */
  unreleasedShell() {
    if (this.shell === null || this.shellReleased) return null
    this.shellReleased = true
    if (this.lease) shellLeases.unregister(this.lease)
    return this.shell
  }

  /** The end of the run, whichever way: its abort listener, and its machine unless Done freed it. */
  close() {
    if (this.watch !== null) this.watch.dispose()
    if (!this.released) {
      if (this.lease) runLeases.unregister(this.lease)
      native.runRelease(this.id)
    }
  }

  /** A JS adapter's answer to the conversation (a JS adapter may ignore the signal: the run does
   *  not wait for it past an abort). */
  chat() {
    const r = this.runner
    const deadline = this.callTimeoutMs === undefined ? null : callDeadline(this.callTimeoutMs, this.signal, r.options.agentName)
    return settleOrAbandon(
      deadline === null ? r.adapter.chat(this.conv, this.chatOptions) : deadline.chat(r.adapter, this.conv, this.chatOptions),
      this.watch,
      requestAborted,
    )
  }

  /**
   * The JS adapter's answer handed to the machine (see respond).
   * @param {unknown} response
   */
  answered(response) {
    const a = respond(this.id, response)
    this.pending = a.action
    this.content = a.content
    this.copy = a.copy
  }

  /**
   * What a call to our own adapter needs: the request body is built from the machine's history,
   * so the conversation never crosses into or out of JS objects on the way out. Only the
   * caller's (or a strategy's) messages need the §15.1 check: what the run appends is
   * well-formed by construction. The adapter and options go over once per run (runChat keeps
   * them for the next calls). Under a deadline, its signal (the caller's merged with it)
   * cancels the request (`link[0]`). Returns whether this is the run's first call; the caller
   * ends the request with `endRequest`. (Fields, not an object per call: W5 counts them.)
   */
  nativeRequest() {
    if (this.checked !== this.conv) {
      llm.assertValidMessages(this.conv)
      this.checked = this.conv
    }
    let first = false
    if (this.nativeOptions === undefined) {
      this.nativeOptions = llm.runOptionsJson(this.chatOptions)
      first = true
    }
    const deadline = this.callTimeoutMs === undefined ? null : callDeadline(this.callTimeoutMs, this.signal, this.runner.options.agentName)
    const link = llm.linkSignal(deadline === null ? this.signal : deadline.signal)
    this.deadline = deadline
    this.link = link
    return first
  }

  /**
   * A native call's error, as its deadline words it when it has one.
   * @param {unknown} e
   */
  requestError(e) {
    return this.deadline === null ? e : this.deadline.error(e)
  }

  /** The end of a native call, whichever way: its signal unlinked, its deadline cleared. */
  endRequest() {
    const link = /** @type {NonNullable<Drive['link']>} */ (this.link) // nativeRequest set it
    link[1]()
    if (this.deadline !== null) this.deadline.clear()
    this.deadline = null
    this.link = null
  }

  /**
   * runChat's reply: the response, with the machine's next action kept.
   * @param {string} out
   */
  nativeReply(out) {
    const reply = wire.decodeModelReply(out)
    this.pending = reply.action
    return reply.response
  }

  /** After the model's answer: refused (a malformed response) it fails the run and nothing of it
   *  is kept; otherwise its trace, and the assistant message.
   * @param {Action} action
   * @param {ModelAnswer} response
   * @param {number} startMs
   */
  modelAnswered(action, response, startMs) {
    // The model's answer came with the machine's next action (answered, nativeReply).
    const pending = /** @type {Action} */ (this.pending)
    if (pending.op === REJECTED) throw new Error(pending.message)
    if (this.onTrace) {
      const endMs = Date.now()
      emitTrace(this.onTrace, {
        type: 'llm_call',
        .../** @type {TraceBase} */ (this.trace),
        model: this.runner.options.model,
        phase: 'turn',
        turn: action.turn,
        tokens: response.usage,
        startMs,
        endMs,
        durationMs: endMs - startMs,
      })
    }
    // (A JS adapter's content as it gave it: the machine accepted it.)
    this.append(assistantMessage(/** @type {import('../index.js').ContentBlock[]} */ (this.nativeAdapter ? response.content : this.content)))
    this.content = undefined
  }

  /**
   * A message the run adds: to the conversation, to the run's new messages, then onMessage.
   * @param {LLMMessage} msg
   */
  append(msg) {
    this.conv.push(msg)
    this.newMessages.push(msg)
    if (this.options.onMessage) dropRejection(this.options.onMessage(msg))
  }

  /** The tool context a round's calls share. */
  roundContext() {
    const ro = this.runner.options
    const options = this.options
    /** @type {MutableContext} */
    const context = {
      agent: { name: ro.agentName ?? 'runner', role: ro.agentRole ?? 'assistant', model: ro.model },
      abortSignal: this.signal,
      cwd: ro.cwd === undefined ? defaultWorkspaceDir() : ro.cwd,
    }
    if (options.team !== undefined) context.team = options.team
    if (this.shell !== null) context.shellExecutor = this.shell
    // What an onToolCall gate is told (upstream's ToolUseContext fields).
    if (options.runId !== undefined) context.runId = options.runId
    if (options.taskId !== undefined) context.taskId = options.taskId
    return context
  }

  /** A settled round (the machine has taken each outcome as it settled: wire.respondToolResult): its
   *  records, appended to `toolCalls` in call order; its tool_result blocks, in an array of their
   *  number (each is kept in the conversation: one grown by push would keep room for 17).
   * @param {ToolUseBlock[]} calls
   * @param {Outcome[]} done
   */
  roundSettled(calls, done) {
    /** @type {Array<import('../index.js').ContentBlock>} */
    const resultBlocks = new Array(calls.length)
    for (let i = 0; i < calls.length; i++) {
      const d = done[i]
      // The record and the block keep what the tool gave (`data`, `isError`) as it is.
      this.toolCalls.push({
        toolName: calls[i].name,
        input: calls[i].input,
        output: /** @type {string} */ (d.data),
        duration: /** @type {number} */ (d.duration),
      })
      // The block holds what the machine holds: a non-string `data` (which only a custom
      // executor, or a getter changing its answer after validation, can produce) as text,
      // so that the history stays writable as JSON. (`isError` as the tool gave it: the machine
      // reads a non-boolean one as absent.)
      resultBlocks[i] = toolResultBlock(calls[i].id, typeof d.data === 'string' ? d.data : d.text, /** @type {boolean | undefined} */ (d.isError))
    }
    return resultBlocks
  }

  /**
   * The round's user message (with the machine's trailing warning, if any).
   * @param {Action} action
   * @param {Array<import('../index.js').ContentBlock>} resultBlocks
   */
  roundAnswered(action, resultBlocks) {
    if (action.trailingWarning !== null) resultBlocks.push(textBlock(action.trailingWarning))
    this.append(userMessage(resultBlocks))
  }
}

/** The per-execution options of a runner without a gate or a tool timeout (no object per call);
 *  NO_GATE_OWN for this package's execute (see _executionOptions). */
const NO_GATE = Object.freeze({ onToolCall: undefined, toolTimeoutMs: undefined })
const NO_GATE_OWN = Object.freeze({ onToolCall: undefined, toolTimeoutMs: undefined, [OWN_INPUT]: true })
// The executor method `_execute` may bypass (an instance or subclass replacing it is called).
const EXECUTE = ToolExecutor.prototype.execute

class AgentRunner {
  /**
   * @param {import('../index.js').LLMAdapter} adapter
   * @param {import('./tools.js').ToolRegistry} toolRegistry
   * @param {import('./tools.js').ToolExecutor} toolExecutor
   * @param {RunnerOptions} options
   */
  constructor(adapter, toolRegistry, toolExecutor, options) {
    this.adapter = adapter
    this.toolRegistry = toolRegistry
    this.toolExecutor = toolExecutor
    /** @type {RunnerOptions} */
    this.options = options ?? {}
    this.maxTurns = this.options.maxTurns ?? RUNNER.defaultMaxTurns
    // The kernel reads this text per run (parsed configurations are shared by text), so a
    // runner has no native object unless its strategy keeps a summary across runs (§5.6.2).
    this._json = coreOptionsJson(this.options, runnerOptionsMemo)
    const err = validateOptions(this._json)
    if (err) throw new Error(err)
    // Passed per execution (the executor times the calls): checked here, not at the first call.
    checkToolTimeout(this.options.toolTimeoutMs, 'RunnerOptions.toolTimeoutMs')
    /** @type {number | undefined} */
    this._summaryCache = undefined
    if (this.options.contextStrategy?.type === 'summarize') {
      this._summaryCache = native.summaryCacheNew()
      summaryCaches.register(this, this._summaryCache)
    }
    /** @type {Resolution | undefined} */
    this._resolved = undefined // what the last resolveTools() resolved (resolution())
  }

  resolveTools() {
    const r = resolution(this._json, this.toolRegistry._toolList())
    this._resolved = r
    for (const w of r.warnings) console.warn(w)
    // (Granted names are the registry's.)
    return r.names.map((n) => this.toolRegistry._toolDef(/** @type {import('./tools.js').Tool} */ (this.toolRegistry.get(n))))
  }

  /**
   * @param {LLMMessage[]} messages
   * @param {RunOpts} [options]
   * @returns {Promise<import('../index.js').RunResult>}
   */
  run(messages, options = {}) {
    // Driven to completion here: no GC lease, and no per-turn events (nobody observes them).
    // As a `for await` over the driver would, without an async frame of its own that every
    // running agent keeps alive (issue 18's W2): `error` closes the driver, then rejects.
    const drive = this._drive(messages, options, false)
    /** @type {import('../index.js').RunResult | undefined} */
    let result
    /**
     * @param {IteratorResult<DriveEvent, void>} r
     * @returns {unknown}
     */
    const step = (r) => {
      if (r.done) return result
      const event = r.value
      if (event.type === 'error') {
        const fail = () => {
          throw event.data
        }
        return promiseThen.call(drive.return(), fail, fail)
      }
      if (event.type === 'done') result = /** @type {import('../index.js').RunResult} */ (event.data)
      return promiseThen.call(drive.next(), step)
    }
    // Settles with the result (step's last value) or the run's error.
    return /** @type {Promise<import('../index.js').RunResult>} */ (promiseThen.call(drive.next(), step))
  }

  /**
   * @param {LLMMessage[]} initialMessages
   * @param {RunOpts} [options]
   */
  stream(initialMessages, options = {}) {
    return this._drive(initialMessages, options, true)
  }

  /** The driver. `streaming`: a stream() consumer sees every event and may drop the generator
   * without return(), so its run is also freed when the generator is collected. run() only
   * reads `done` / `error`: the per-turn events are not built (each yield of an async
   * generator costs several promise hops, measured ≈ 0.5 µs, a tenth of a tool turn).
   * Only what awaits or yields is here; the run's state and every other step are the Drive's.
   * @param {LLMMessage[]} initialMessages
   * @param {RunOpts} options
   * @param {boolean} streaming
   * @returns {AsyncGenerator<DriveEvent, void, undefined>}
   */
  async *_drive(initialMessages, options, streaming) {
    const d = new Drive(this, initialMessages, options, streaming)
    try {
      for (;;) {
        const action = d.next()
        switch (action.op) {
          case OP.DONE: {
            const result = d.finish(action)
            // Before the result: a dispose that fails makes the run fail (the error below).
            const shell = d.unreleasedShell()
            if (shell !== null) await awaitShellRelease(shell.release(), d.watch)
            yield { type: 'done', data: result }
            return
          }
          case OP.APPLY_PLAN:
            d.conv = applyPlan(d.conv, /** @type {Plan} */ (action.plan))
            break
          case OP.CUSTOM_COMPRESS:
            d.conv = await this._compress(d.id, d.conv, action.estimatedTokens, d.watch)
            break
          case OP.SUMMARIZE:
            await this._summarize(d.id, action, d.chatOptions, d.callTimeoutMs, d.signal, d.watch, d.onTrace, d.trace)
            break
          case OP.CALL_MODEL: {
            // Timestamps feed only the trace.
            const startMs = d.onTrace ? Date.now() : 0
            /** @type {ModelAnswer | undefined} */
            let response
            if (d.nativeAdapter) {
              const first = d.nativeRequest()
              try {
                if (options.streamDeltas === true) response = yield* this._nativeStream(d)
                else {
                  // The machine has taken the response by the time this resolves (no second
                  // parse) and has moved on: the reply carries its next action.
                  let out
                  try {
                    out = await native.runChat(
                      d.id,
                      first ? d.nativeAdapter : null,
                      first ? d.nativeOptions : null,
                      /** @type {NonNullable<Drive['link']>} */ (d.link)[0],
                    )
                  } catch (e) {
                    throw llm.fromNative(e)
                  }
                  response = d.nativeReply(out)
                }
              } catch (e) {
                throw d.requestError(e)
              } finally {
                d.endRequest()
              }
            } else {
              response = await d.chat()
              d.answered(response)
            }
            // (A JS adapter's answer as it came: the machine refuses a malformed one.)
            d.modelAnswered(action, /** @type {ModelAnswer} */ (response), startMs)
            // Not kept across the next awaits (a frame's slot outlives its block): the
            // conversation holds what is needed of it.
            response = undefined
            break
          }
          case OP.TEXT:
            // Produced only for a stream() (see runnerStart).
            yield { type: 'text', data: action.text }
            break
          case OP.BUDGET_EXCEEDED:
            // (Only a run with a budget exceeds it.)
            yield {
              type: 'budget_exceeded',
              data: new TokenBudgetExceededError(this.options.agentName ?? 'unknown', action.totalTokens, /** @type {number} */ (this.options.maxTokenBudget)),
            }
            break
          case OP.LOOP_DETECTED: {
            const info = action.info
            if (streaming) yield { type: 'loop_detected', data: info }
            if (options.onWarning) dropRejection(options.onWarning(info.detail))
            if (action.awaitsPolicy) {
              // The machine awaits a policy only when onLoopDetected is a function.
              const policy = /** @type {(info: import('../index.js').LoopDetectionInfo) => unknown} */ (
                /** @type {import('../index.js').LoopDetectionConfig} */ (this.options.loopDetection).onLoopDetected
              )
              wire.respondLoopAction(d.id, String(await settleOrAbandon(policy(info), d.watch, policyAborted)))
            }
            break
          }
          case OP.INJECT_WARNING:
            d.append(userText(action.text))
            break
          case OP.FIRST_TURN_WARNING:
            if (options.onWarning) dropRejection(options.onWarning(action.text))
            break
          case OP.LOOP_STOP_RESULTS:
            // Answers the calls the machine saw (its ids), not a second read of the live blocks.
            d.append(userMessage(action.ids.map((callId) => toolResultBlock(callId, action.result, true))))
            break
          case OP.TOOL_ROUND: {
            // What runs, is recorded and is answered is the machine's copy of the calls, the one
            // its gate judged (read once): never a second read of the adapter's live blocks,
            // whose toJSON or getters may tell another story.
            const calls = action.calls
            // (Indexed loops: a for-of keeps its iterator's state in the frame's slots.)
            // A consumer is shown copies (shownCall): what it does with them is not what runs.
            if (streaming) for (let k = 0; k < calls.length; k++) yield { type: 'tool_use', data: shownCall(calls[k]) }
            const context = d.roundContext()
            const done = new Array(calls.length)
            if (calls.length === 1) {
              // The common case, awaited directly: no Promise.all and no .then() layer. A throw
              // here leaves nothing behind: onToolCall throws before the tool starts, and
              // onToolResult after it settled.
              // The round's one call owns the round's context: no copy.
              context.toolCallId = calls[0].id
              const startMs = this._beginBlock(calls[0], options)
              let result
              if (!action.granted[0]) result = notGranted(calls[0])
              else {
                // Whatever the executor returned (awaited, never trusted for a `then` method);
                // a synchronous throw is its rejection.
                let pending
                try {
                  pending = this._execute(calls[0], context, d.watch, null, null)
                } catch (err) {
                  pending = Promise.reject(err)
                }
                try {
                  result = await pending
                } catch (err) {
                  result = failedResult(err)
                }
              }
              done[0] = this._finishBlock(calls[0], startMs, result, options, d.onTrace, d.trace)
              wire.respondToolResult(d.id, 0, done[0])
            } else {
              await this._runBlocks(d, calls, action.granted, context, options, done)
            }
            const resultBlocks = d.roundSettled(calls, done)
            if (streaming) for (let k = 0; k < resultBlocks.length; k++) yield { type: 'tool_result', data: resultBlocks[k] }
            d.roundAnswered(action, resultBlocks)
            break
          }
          default:
            throw new Error(boundary.wire.unknownOperation)
        }
      }
    } catch (err) {
      // The run fails with its own error; the executor is disposed before that is reported.
      const shell = d.unreleasedShell()
      if (shell !== null) await awaitShellRelease(releaseUnreported(shell), d.watch)
      yield { type: 'error', data: toError(err) }
    } finally {
      d.close()
      // A stream whose consumer stopped early (return() at a yield).
      const shell = d.unreleasedShell()
      if (shell !== null) await awaitStoppedRelease(shell)
    }
  }

  /** A native adapter's streamed answer (`streamDeltas`): its text deltas as events (a stream()
   *  only), and the final response, which the machine has then taken.
   * @param {Drive} d a run on a native adapter, its request begun (nativeRequest)
   * @returns {AsyncGenerator<DriveEvent, LLMResponse, undefined>}
   */
  async *_nativeStream(d) {
    const link = /** @type {NonNullable<Drive['link']>} */ (d.link)
    const s = native.runStream(d.id, /** @type {import('../binding').NativeLlmAdapter} */ (d.nativeAdapter), /** @type {string} */ (d.nativeOptions), link[0])
    /** @type {LLMResponse | null} */
    let final = null
    try {
      while (final === null) {
        let batch
        try {
          batch = JSON.parse(await s.nextBatch())
        } catch (e) {
          throw llm.fromNative(e)
        }
        if (batch.length === 0) throw new Error(boundary.llm.streamEndedEarly)
        for (let k = 0; k < batch.length; k++) {
          const ev = boundary.llm.event(batch[k])
          if (ev.type === 'throw' || ev.type === 'error') throw llm.errorFrom(ev.data)
          if (ev.type === 'text') {
            if (ev.data !== '' && d.streaming) yield { type: 'text_delta', data: ev.data }
          } else if (ev.type === 'done') {
            // The blocks are the kernel's own (crates/llm: the adapters' response).
            final = /** @type {LLMResponse} */ (ev.data)
            break
          }
        }
      }
    } finally {
      s.close()
    }
    // The native stream's final response is well-formed: the machine cannot refuse it.
    const u = /** @type {LLMResponse} */ (final).usage
    d.pending = wire.respondModel(d.id, JSON.stringify(/** @type {LLMResponse} */ (final).content), u.input_tokens, u.output_tokens)
    return /** @type {LLMResponse} */ (final)
  }

  /**
   * A custom strategy's compression (CUSTOM_COMPRESS): the conversation the run goes on with.
   * @param {number} id
   * @param {LLMMessage[]} conv
   * @param {number} estimatedTokens
   * @param {AbortWatch | null} watch
   */
  async _compress(id, conv, estimatedTokens, watch) {
    // The machine asks for it only under a custom strategy.
    const strategy = /** @type {Extract<import('../index.js').ContextStrategy, { type: 'custom' }>} */ (this.options.contextStrategy)
    const out = await settleOrAbandon(strategy.compress(conv, estimatedTokens), watch, compressAborted)
    let json = null
    if (Array.isArray(out)) json = JSON.stringify(out)
    const err = wire.respondConversation(id, json)
    if (err !== undefined) throw new Error(err)
    return out
  }

  /**
   * The summarize strategy's model call (SUMMARIZE), answered to the machine.
   * @param {number} id
   * @param {Action} action
   * @param {LLMChatOptions} chatOptions
   * @param {number | undefined} callTimeoutMs
   * @param {AbortSignal | undefined} signal
   * @param {AbortWatch | null} watch
   * @param {RunOpts['onTrace']} onTrace
   * @param {TraceBase | null} trace
   */
  async _summarize(id, action, chatOptions, callTimeoutMs, signal, watch, onTrace, trace) {
    const ro = this.options
    // The machine asks for it only under the summarize strategy.
    const model = /** @type {Extract<import('../index.js').ContextStrategy, { type: 'summarize' }>} */ (ro.contextStrategy).summaryModel ?? ro.model
    const startMs = Date.now()
    const summaryOptions = { ...chatOptions, model, tools: undefined }
    const deadline = callTimeoutMs === undefined ? null : callDeadline(callTimeoutMs, signal, ro.agentName)
    const summary = await settleOrAbandon(
      deadline === null ? this.adapter.chat(action.messages, summaryOptions) : deadline.chat(this.adapter, action.messages, summaryOptions),
      watch,
      requestAborted,
    )
    const endMs = Date.now()
    const err = wire.respondSummary(id, responseJson(summary))
    if (err !== undefined) throw new Error(err)
    if (onTrace) {
      emitTrace(onTrace, {
        type: 'llm_call',
        .../** @type {TraceBase} */ (trace),
        model,
        phase: 'summary',
        turn: action.turn,
        tokens: summary.usage,
        startMs,
        endMs,
        durationMs: endMs - startMs,
      })
    }
  }

  /**
   * Runs a round of several blocks (§5.5 step 14): each starts in block order without awaiting
   * the previous one, and each block's chain is isolated as the original's per-block async
   * functions are: a callback that throws (onToolCall while starting a block, onToolResult
   * when one settles) ends that block's chain only. The round then waits for every tool it
   * started, whatever threw and in whatever order, and only then fails with the first throw
   * (in time order, as the original's Promise.all reports it): no tool outlives its run
   * unobserved, and nothing it does later can become an unhandled rejection. Each outcome is
   * answered to the machine as it settles (a crossing per call, which W1 16×10 measures).
   * @param {Drive} d
   * @param {ToolUseBlock[]} calls
   * @param {boolean[]} granted
   * @param {ToolUseContext} context
   * @param {RunOpts} options
   * @param {Outcome[]} done
   */
  async _runBlocks(d, calls, granted, context, options, done) {
    const { id, watch, onTrace, trace } = d
    /** @type {{ err: unknown } | null} */
    let failure = null
    const fail = (/** @type {unknown} */ err) => {
      if (failure === null) failure = { err }
    }
    // Blocks not yet finished (+1 while blocks are still being started); the last to finish wakes
    // the round: a count rather than Promise.all over the chains (one promise and one reaction
    // less per call, issue 18's W1).
    let left = 1
    /** @type {((value?: unknown) => void) | null} */
    let wake = null
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]
      let startMs
      try {
        startMs = this._beginBlock(call, options)
      } catch (err) {
        fail(err)
        continue
      }
      left++
      // Called once per started block, possibly before _execute returns.
      const finish = (/** @type {unknown} */ result) => {
        try {
          const out = this._finishBlock(call, startMs, result, options, onTrace, trace)
          done[i] = out
          wire.respondToolResult(id, i, out)
        } catch (err) {
          fail(err)
        }
        if (--left === 0 && wake !== null) wake()
      }
      if (!granted[i]) finish(notGranted(call))
      else {
        const failed = (/** @type {unknown} */ err) => finish(failedResult(err))
        try {
          // Each block's own context, naming its tool_use id (tools of a round run concurrently).
          this._execute(call, blockContext(context, call.id), watch, finish, failed)
        } catch (err) {
          failed(err)
        }
      }
    }
    // Every chain above catches its own throws, so this waits for all of them.
    if (--left !== 0)
      await new Promise((resolve) => {
        wake = resolve
      })
    // (Set by `fail`, which the blocks' chains call.)
    if (failure !== null) throw /** @type {{ err: unknown }} */ (failure).err
  }

  /** A block's start (CONTRACT §5.5 per-block steps 1–2): onToolCall, then its start time.
   *  Synchronous, so block k+1's onToolCall follows block k's start.
   * @param {ToolUseBlock} call
   * @param {RunOpts} options
   */
  _beginBlock(call, options) {
    // The notification is told a copy of the input: the kernel's own is the one that runs.
    if (options.onToolCall) dropRejection(options.onToolCall(call.name, copyInput(call.input)))
    return Date.now()
  }

  /** What the runner passes per execution, as upstream: its gate (an undefined one leaves the
   *  executor's own) and its default tool timeout likewise. `own`: to this package's execute,
   *  which is then told that the input is the runner's own (OWN_INPUT: no user code holds it,
   *  so a gated call copies it once, for its gate, not twice).
   * @param {boolean} own
   * @returns {import('./tools.js').ExecutionOptions}
   */
  _executionOptions(own) {
    const gate = this.options.onToolCall
    const toolTimeoutMs = this.options.toolTimeoutMs
    if (gate === undefined && toolTimeoutMs === undefined) return own ? NO_GATE_OWN : NO_GATE
    return own ? { onToolCall: gate, toolTimeoutMs, [OWN_INPUT]: true } : { onToolCall: gate, toolTimeoutMs }
  }

  /**
   * Step 3, the executor call, for either path: `execute` read once (a getter is asked once, as
   * the method call it stands for would ask it), called as upstream calls it, with
   * `_executionOptions`, and raced against the run's abort watch. With `finish` (a block of a
   * wider round) the outcome goes to `finish` once (a rejection through `failed`), possibly
   * before this returns, and this returns undefined: this package's executor, when unwatched,
   * takes the callbacks directly (`ToolExecutor._run`: no promise per call); another executor,
   * or one whose `execute` was replaced (a spy), is attached to with `attach`. Without (a
   * round's only block, awaited by the driver: no closure per call) it returns whatever the
   * executor returned, to be awaited, never trusted for a `then` method. A synchronous throw
   * goes to the caller either way.
   * @param {ToolUseBlock} call
   * @param {ToolUseContext} context
   * @param {AbortWatch | null} watch
   * @param {((result: unknown) => void) | null} finish
   * @param {((err: unknown) => void) | null} failed
   * @returns {unknown}
   */
  _execute(call, context, watch, finish, failed) {
    const executor = this.toolExecutor
    const execute = executor.execute
    if (finish !== null && watch === null && execute === EXECUTE) {
      executor._run(call.name, call.input, context, this._executionOptions(true), finish, /** @type {(err: unknown) => void} */ (failed))
      return undefined
    }
    // Not a function: the call below throws the engine's own text for it, as before.
    /** @type {unknown} */
    let pending =
      typeof execute === 'function'
        ? execute.call(executor, call.name, call.input, context, this._executionOptions(execute === EXECUTE))
        : executor.execute(call.name, call.input, context, this._executionOptions(false))
    if (watch !== null) pending = watch.tool(pending, call.name)
    if (finish === null) return pending
    attach(pending, finish, /** @type {(err: unknown) => void} */ (failed))
    return undefined
  }

  /** Steps 4–7 once the block's outcome is known: onToolResult, the trace, the record's duration.
   *  Returns the outcome as read once (`readResult`) with its duration.
   * @param {ToolUseBlock} call
   * @param {number} startMs
   * @param {unknown} result
   * @param {RunOpts} options
   * @param {RunOpts['onTrace']} onTrace
   * @param {TraceBase | null} trace
   */
  _finishBlock(call, startMs, result, options, onTrace, trace) {
    const out = readResult(call.name, result)
    const endMs = Date.now()
    if (options.onToolResult) dropRejection(options.onToolResult(call.name, out.result))
    if (onTrace) {
      // (`isError` as the tool gave it.)
      /** @type {{ -readonly [K in keyof import('../index.js').ToolCallTrace]: import('../index.js').ToolCallTrace[K] }} */
      const event = /** @type {import('../index.js').ToolCallTrace} */ ({
        type: 'tool_call',
        .../** @type {TraceBase} */ (trace),
        tool: call.name,
        isError: out.isError ?? false,
        input: redactInput(call.input),
        output: native.traceRedactText(out.text),
        startMs,
        endMs,
        durationMs: endMs - startMs,
      })
      const gate = out.gate
      if (gate !== undefined && gate !== null) {
        event.gated = true
        event.gateAction = gate.action
        if (gate.reason) event.gateReason = native.traceRedactText(gate.reason)
      }
      emitTrace(onTrace, event)
    }
    out.duration = endMs - startMs
    return out
  }
}

module.exports = {
  AgentRunner,
  TOOL_PRESETS: wire.TOOL_PRESETS,
  AGENT_FRAMEWORK_DISALLOWED: wire.AGENT_FRAMEWORK_DISALLOWED,
  coreOptionsJson,
  validateOptions,
  BUDGET_SPENT,
  abortedWhile,
  settleOrAbandonOn,
}
