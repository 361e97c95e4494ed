'use strict'
// Agent (§4): the driver of the kernel's Agent machine (crates/core/src/kernel/agent.rs). The
// machine decides the sequence of a run, the lifecycle and the shape of every result; this file
// awaits what the user handed over (the hooks, the runner, the Zod schema) and builds the
// user-facing objects (results, state snapshots, history arrays) in the caller's realm.
const native = require('./native.js')
const boundary = require('./generated/boundary.js')
// The messages the Agent adds, in the kernel's shapes (kernel::message::shapes).
const { userMessage, userText, textBlock } = boundary.history
const { AgentRunner, coreOptionsJson, validateOptions, BUDGET_SPENT, abortedWhile, settleOrAbandonOn } = require('./runner.js')
const { newAdapter, assertValidMessages } = require('./llm.js')
const { normalizeEgressPolicy, unsupportedAdapterError } = require('./llm.js')
const { structuredSystemPrompt, validateOutput } = require('./structured.js')
const { emitTrace, generateRunId, defaultWorkspaceDir } = require('./util.js')
const { InvalidMessageError, toError, isError, safeString } = require('./errors.js')
const { timeoutMs: checkToolTimeout } = require('./tool-deadline.js')
const { RunTimeout } = require('./deadline.js')

/** @typedef {import('./util.js').Fields} Fields */
/** @typedef {import('../index.js').AgentConfig} AgentConfig */
/** @typedef {import('../index.js').AgentRunResult} AgentRunResult */
/** @typedef {import('../index.js').AgentState} AgentState */
/** @typedef {import('../index.js').LLMMessage} LLMMessage */
/** @typedef {import('../index.js').RunResult} RunResult */
/** @typedef {import('./runner.js').RunOpts} RunOpts */
/** @typedef {{ -readonly [K in keyof RunOpts]: RunOpts[K] }} MutableRunOpts */
/** @typedef {{ -readonly [K in keyof AgentRunResult]: AgentRunResult[K] }} MutableResult */
/**
 * The run's signal (the caller's, a timeout, or both merged), the timeout's, and what ends it.
 * @typedef {{ signal: AbortSignal | undefined, timeout: AbortSignal | undefined, dispose: () => void }} RunSignals
 */
/**
 * What beforeRun led to: the machine's event, the outgoing messages and where their last user
 * message is, the hook's prompt, and which layout rewrites it (rewriteLastUser).
 * @typedef {{ event: ReturnType<typeof EV.hookReturned>, messages: LLMMessage[], index: number, prompt: string, inPlace: boolean }} Hooked
 */
/** How the run was entered. @typedef {keyof typeof SETUP.encode} Entry */
/**
 * The structured-output retries, and whether `outputSchemaRetries` set them (then checked).
 * @typedef {{ readonly count: number, readonly checked: boolean }} Retries
 */
/** @type {Retries} */
const DEFAULT_RETRIES = Object.freeze({ count: boundary.agent.defaultRetries, checked: false })

// The machine's step, events and setups, read and written only through the code generated from
// their layouts (agent::wire::STEP, EVENT, SETUP).
const { step: STEP, event: EVENT, setup: SETUP, statuses: STATUSES } = boundary.agent
const EV = EVENT.encode
const decode = STEP.decode
// `answer(step, event)`: an event of a kind the step does not take does not type-check (the
// binding refuses it at run time all the same); `respond` takes only what it returns.
const answer = EVENT.answer

/**
 * A decoded step: a union on `op` (the action), with that action's fields.
 * @typedef {ReturnType<typeof decode>} Step
 */
/**
 * The steps of the given actions.
 * @template {Step['op']} K
 * @typedef {Extract<Step, { op: K }>} StepOf
 */
/** An event checked against the step it answers. @typedef {ReturnType<typeof answer>} Answer */

/** @returns {AgentState} */
function idleState() {
  return { status: STATUSES[0], messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } }
}

// The machine is a pure function of its word and the event (agent.rs keeps no state between
// calls), so an answer that carries no text is asked for once and remembered, decoded: the pairs a
// process meets are few (setups × phases × flags), and a run without hooks or schema then
// costs no crossing at all. Bounded all the same.
/** @type {Map<number, Step>} */
const startSteps = new Map()
/** @type {Map<number, Step>} */
const stepSteps = new Map()

/**
 * The first step of a run with `setup`.
 * @param {number} setup
 */
function start(setup) {
  let s = startSteps.get(setup)
  if (s === undefined) {
    s = decode(native.agentStart(setup))
    startSteps.set(setup, s)
  }
  return s
}

/** The machine's answer to `event` (with `text`, the runner's output or a validation error):
 *  the next step, or `[step, text]` for a step that carries a text.
 * @param {Step} step
 * @param {Answer} event
 * @param {string | null} text
 * @returns {Step | [Step, string]}
 */
function respond(step, event, text) {
  const word = step.word
  if (text !== null) return decoded(native.agentStep(word, event, text))
  // Exact: event codes are below eventSpan, words below 2^42.
  const key = word * boundary.agent.eventSpan + event
  let out = stepSteps.get(key)
  if (out === undefined) {
    const w = native.agentStep(word, event, null)
    if (typeof w !== 'number') return decoded(w)
    out = decode(w)
    if (stepSteps.size >= 4096) stepSteps.clear()
    stepSteps.set(key, out)
  }
  return out
}

/**
 * @param {number | [number, string]} next
 * @returns {Step | [Step, string]}
 */
function decoded(next) {
  return typeof next === 'number' ? decode(next) : [decode(next[0]), next[1]]
}

/**
 * `respond` on a path whose steps carry no text (`stream`).
 * @param {Step} step
 * @param {Answer} event
 */
function next(step, event) {
  const out = respond(step, event, null)
  if (Array.isArray(out)) throw new Error(boundary.agent.driverTextOnTextlessPath)
  return out
}

/**
 * The step, if it is `op`'s; else a driver error: the machine asked for something this sequence
 * does not perform.
 * @template {Step['op']} K
 * @param {Step} step
 * @param {K} op
 * @returns {StepOf<K>}
 */
function expectOp(step, op) {
  if (step.op !== op) throw new Error(boundary.agent.driverExpectedAction(STEP.codes[op], step.code))
  return /** @type {StepOf<K>} */ (step)
}

/**
 * `stream`'s step while the runner's events come: the machine waits for the runner's result or
 * error (after `done`, it refuses them: the runner ends with `done`).
 * @param {Step} step
 */
function runnerStep(step) {
  return /** @type {StepOf<'runRunner' | 'passError'>} */ (step)
}

/**
 * `retries`: the agent's structured-output retries, and whether outputSchemaRetries set them.
 * @param {Entry} entry
 * @param {AgentConfig} config
 * @param {unknown} traced
 * @param {Retries} retries
 */
function setupOf(entry, config, traced, retries) {
  return SETUP.encode[entry](!!config.beforeRun, !!config.afterRun, !!config.outputSchema, !!traced, retries.count, retries.checked)
}

// Richer inputs (upstream 1.15). An array given to run()/stream() is the run's whole
// conversation, one given to prompt() the content of its one new user message; both are checked
// with the adapters' own check (§15.1, the same texts as upstream's) and copied, so the run never
// sees what the caller does to them afterwards. Any other value keeps 1.7's meaning (the text of
// one user message, unchecked), where upstream rejects it. Upstream's texts for what §15.1 does
// not cover:
const NOT_CLONEABLE = boundary.agent.messagesNotCloneable
const PROMPT_NOT_STRING = boundary.agent.promptNotString

/** A deep copy of checked messages (structuredClone, as upstream; what it cannot copy, say a
 *  function inside a block, is the caller's InvalidMessageError).
 * @param {readonly LLMMessage[]} messages
 * @returns {LLMMessage[]}
 */
function copyMessages(messages) {
  try {
    return /** @type {LLMMessage[]} */ (structuredClone(messages))
  } catch {
    throw new InvalidMessageError(NOT_CLONEABLE)
  }
}

/**
 * The run's messages for `run(input)` / `stream(input)`; `null` for 1.7's string input.
 * @param {unknown} input
 */
function runInput(input) {
  if (!Array.isArray(input)) return null
  assertValidMessages(input)
  return copyMessages(input)
}

/**
 * The one user message `prompt(input)` appends (1.7's: any other value is its text, unchecked).
 * @param {unknown} input
 * @returns {LLMMessage}
 */
function promptInput(input) {
  if (!Array.isArray(input)) return userText(/** @type {string} */ (input))
  // Checked as upstream checks it: as the content of message 0 of a one-message list.
  const wrapped = [userMessage(input)]
  assertValidMessages(wrapped)
  return copyMessages(/** @type {LLMMessage[]} */ (wrapped))[0]
}

/** @param {readonly LLMMessage[]} messages */
function lastUserIndex(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') return i
  }
  return -1
}

/**
 * The text blocks of the message at `index` (the last user message), joined; `''` without one.
 * @param {readonly LLMMessage[]} messages
 * @param {number} index
 */
function textAt(messages, index) {
  if (index < 0) return ''
  return messages[index].content
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('')
}

/**
 * The outgoing messages with the last user message rewritten as the machine describes it
 * (`Conversation::Outgoing`), in one of two layouts. 1.7's (§4.4), for a string input whose hook
 * kept the messages: the hook's prompt first, then the old non-text blocks. Upstream 1.15's, once
 * the messages are the caller's (a message-list or block input, or messages the hook returned):
 * the first text block becomes the prompt where it stands, the other text blocks go, the non-text
 * blocks keep their places; without a text block the prompt comes first. The two agree on every
 * message a string input makes.
 * @param {LLMMessage[]} messages
 * @param {number} index
 * @param {string} prompt
 * @param {boolean} inPlace
 */
function rewriteLastUser(messages, index, prompt, inPlace) {
  const out = messages.slice()
  const old = out[index].content
  /** @type {import('../index.js').ContentBlock[]} */
  let content
  if (inPlace) {
    content = []
    let placed = false
    for (const b of old) {
      if (b.type !== 'text') {
        content.push(b)
      } else if (!placed) {
        content.push(textBlock(prompt))
        placed = true
      }
    }
    if (!placed) content.unshift(textBlock(prompt))
  } else {
    content = [textBlock(prompt), ...old.filter((b) => b.type !== 'text')]
  }
  out[index] = userMessage(content)
  return out
}

/** Whether `copy` (handed to beforeRun) still holds what `held` (a structured clone taken
 *  before the hook ran) holds: own enumerable keys and primitive values, through arrays and
 *  plain objects. Anything else (a Date, a Map) counts as changed; so does a structure too deep
 *  to walk.
 * @param {unknown} copy
 * @param {unknown} held
 */
function unchanged(copy, held) {
  try {
    return sameData(copy, held)
  } catch {
    return false
  }
}

/**
 * The same objects in the same order.
 * @param {readonly unknown[]} a
 * @param {readonly unknown[]} b
 */
function sameItems(a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * @param {unknown} a
 * @param {unknown} b
 * @returns {boolean}
 */
function sameData(a, b) {
  if (a === null || typeof a !== 'object') return Object.is(a, b)
  if (b === null || typeof b !== 'object') return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false
    return true
  }
  // A plain object of any realm (structuredClone's copies are its own realm's, Jest's sandbox
  // aside): its prototype is the last before null.
  const proto = Object.getPrototypeOf(a)
  if (Array.isArray(b) || (proto !== null && Object.getPrototypeOf(proto) !== null)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  for (const k of keys) {
    if (!Object.prototype.propertyIsEnumerable.call(b, k) || !sameData(/** @type {Fields} */ (a)[k], /** @type {Fields} */ (b)[k])) return false
  }
  return true
}

/**
 * A runner result's flags as the machine's event.
 * @param {RunResult} r
 * @param {AbortSignal | undefined} timeout
 */
function resultEvent(r, timeout) {
  return EV.runnerDone(!!r.budgetExceeded, !!r.loopDetected, !!r.aborted, timeout?.aborted === true)
}

/**
 * The result a step describes (`Shape` in agent.rs), over the runner results of the run's
 * attempts and the feedback messages between them.
 * @param {StepOf<'afterRun' | 'trace' | 'finish'>} step
 * @param {RunResult[]} attempts
 * @param {LLMMessage[]} feedbacks
 * @param {unknown} structured
 * @param {unknown} error
 * @returns {AgentRunResult}
 */
function buildResult(step, attempts, feedbacks, structured, error) {
  if (step.failed) {
    /** @type {MutableResult} */
    const r = {
      success: false,
      output: messageOf(error),
      messages: [],
      tokenUsage: { input_tokens: 0, output_tokens: 0 },
      toolCalls: [],
      structured: undefined,
    }
    if (step.timedOut) {
      r.aborted = true
      r.timedOut = true
    }
    return r
  }
  const success = step.success
  const value = step.structured ? structured : undefined
  /** @type {MutableResult} */
  let r
  if (step.merged) {
    /** @type {LLMMessage[]} */
    const messages = []
    let input = attempts[0].tokenUsage.input_tokens
    let output = attempts[0].tokenUsage.output_tokens
    /** @type {import('../index.js').ToolCallRecord[]} */
    const toolCalls = []
    for (let i = 0; i < attempts.length; i++) {
      const a = attempts[i]
      messages.push(...a.messages)
      if (i < feedbacks.length) messages.push(feedbacks[i])
      toolCalls.push(...a.toolCalls)
      if (i > 0) {
        input = input + a.tokenUsage.input_tokens
        output = output + a.tokenUsage.output_tokens
      }
    }
    const last = attempts[attempts.length - 1]
    r = { success, output: last.output, messages, tokenUsage: { input_tokens: input, output_tokens: output }, toolCalls, structured: value }
  } else {
    const a = attempts[attempts.length - 1]
    r = { success, output: a.output, messages: a.messages, tokenUsage: a.tokenUsage, toolCalls: a.toolCalls, structured: value }
  }
  if (step.loopDetected) r.loopDetected = true
  if (step.budgetExceeded) r.budgetExceeded = true
  if (step.aborted) r.aborted = true
  if (step.timedOut) r.timedOut = true
  return r
}

function noop() {}

// What a run fails with when its signal aborted while a hook it awaits had not settled within
// ABANDON_AFTER_MS (issue 30): the hook is left behind, its outcome still handled. The hooks are
// told of nothing (neither takes a signal), so their time starts with the abort, or with the
// hook itself when the run's signal aborted already.
const beforeRunAborted = abortedWhile('beforeRun')
const afterRunAborted = abortedWhile('afterRun')

/** `config.afterRun(result)` (called as a method, as before), awaited under the run's signal
 *  (see afterRunAborted). The machine asks for it only when there is one.
 * @param {AgentConfig} config
 * @param {AgentRunResult} result
 * @param {AbortSignal | undefined} signal
 */
function callAfterRun(config, result, signal) {
  return settleOrAbandonOn(/** @type {Required<AgentConfig>} */ (config).afterRun(result), signal, afterRunAborted)
}

/** runSignal's answer for a run with neither a signal nor a timeout (most runs): one object. @type {RunSignals} */
const UNTIMED = Object.freeze({ signal: undefined, timeout: undefined, dispose: noop })

/**
 * The run's outgoing messages after beforeRun (`hooked`), for the step that runs them.
 * @param {StepOf<'runRunner'>} step
 * @param {Hooked} hooked
 */
function outgoingOf(step, hooked) {
  if (!step.rewriteLastUser) return hooked.messages
  return rewriteLastUser(hooked.messages, hooked.index, hooked.prompt, hooked.inPlace)
}

/** One signal for the run: the caller's, a run timeout, or both merged (§4.3). `dispose` stops
 *  the timeout and unhooks the merge once the run is over: a caller's long-lived signal would
 *  otherwise keep one listener (and its controller) per run that used it.
 * @param {AbortSignal | undefined} callerSignal
 * @param {number | undefined} timeoutMs
 * @returns {RunSignals}
 */
function runSignal(callerSignal, timeoutMs) {
  // (Unset compares as no timeout.)
  if (!(0 < /** @type {number} */ (timeoutMs))) return callerSignal === undefined ? UNTIMED : { signal: callerSignal, timeout: undefined, dispose: noop }
  const run = new RunTimeout(/** @type {number} */ (timeoutMs))
  const timeout = run.signal
  if (!callerSignal) return { signal: timeout, timeout, dispose: () => run.clear() }
  const ctl = new AbortController()
  if (callerSignal.aborted) {
    ctl.abort()
    run.clear()
    return { signal: ctl.signal, timeout, dispose: noop }
  }
  const fire = () => ctl.abort()
  callerSignal.addEventListener('abort', fire, { once: true })
  timeout.addEventListener('abort', fire, { once: true })
  const dispose = () => {
    callerSignal.removeEventListener('abort', fire)
    timeout.removeEventListener('abort', fire)
    run.clear()
  }
  return { signal: ctl.signal, timeout, dispose }
}

/** @type {{ snap?: unknown, json?: string }} */
const ctorOptionsMemo = {}

class Agent {
  /**
   * @param {AgentConfig} config
   * @param {import('./tools.js').ToolRegistry} toolRegistry
   * @param {import('./tools.js').ToolExecutor} toolExecutor
   */
  constructor(config, toolRegistry, toolExecutor) {
    this.name = config.name
    // An egress policy is checked here and kept as its frozen normalised copy (upstream 1.16).
    this.config = config.egressPolicy === undefined ? config : { ...config, egressPolicy: normalizeEgressPolicy(config.egressPolicy) }
    this.toolRegistry = toolRegistry
    this.toolExecutor = toolExecutor
    /** @type {import('./runner.js').AgentRunner | null} */
    this.runner = null
    /** @type {LLMMessage[]} */
    this.messageHistory = []
    this.state = idleState()
    // Bad configuration is reported here rather than on the first run.
    const err = validateOptions(
      coreOptionsJson(
        {
          maxTurns: config.maxTurns,
          toolPreset: config.toolPreset,
          allowedTools: config.tools,
          disallowedTools: config.disallowedTools,
          loopDetection: config.loopDetection,
        },
        ctorOptionsMemo,
      ),
    )
    if (err) throw new Error(err)
    checkToolTimeout(config.toolTimeoutMs, 'AgentConfig.toolTimeoutMs')
    // Beyond the original (issue 19): checked by the kernel, which hands back its setup bits.
    this._retrySetup = config.outputSchemaRetries === undefined ? DEFAULT_RETRIES : { count: retriesSetup(config.outputSchemaRetries), checked: true }
    // Upstream 1.15: a seeded conversation is checked and copied here, once.
    if (config.history !== undefined) {
      assertValidMessages(config.history)
      this.messageHistory = copyMessages(config.history)
    }
  }

  getState() {
    return { ...this.state, messages: [...this.state.messages] }
  }
  getHistory() {
    return [...this.messageHistory]
  }
  reset() {
    this.messageHistory = []
    this.state = idleState()
  }
  /** @param {import('./tools.js').Tool} tool */
  addTool(tool) {
    this.toolRegistry.register(tool, { runtimeAdded: true })
  }
  /** @param {string} name */
  removeTool(name) {
    this.toolRegistry.deregister(name)
  }
  getTools() {
    return this.toolRegistry.list().map((t) => t.name)
  }
  /**
   * @param {AbortSignal} [abortSignal]
   * @returns {import('../index.js').ToolUseContext}
   */
  buildToolContext(abortSignal) {
    const sp = this.config.systemPrompt
    /** @type {{ -readonly [K in keyof import('../index.js').ToolUseContext]: import('../index.js').ToolUseContext[K] }} */
    const context = {
      agent: { name: this.name, role: sp === undefined ? 'assistant' : sp.slice(0, 60), model: this.config.model },
      abortSignal,
      cwd: this.config.cwd === undefined ? defaultWorkspaceDir() : this.config.cwd,
    }
    // Upstream 1.16: the executor itself (a caller running bash with this context owns its
    // lifecycle; runs lease it, see lib/shell.js).
    if (this.config.shellExecutor !== undefined) context.shellExecutor = this.config.shellExecutor
    return context
  }

  /**
   * @param {unknown} input
   * @param {RunOpts} [runOptions]
   * @returns {Promise<AgentRunResult>}
   */
  run(input, runOptions) {
    // A bad message list rejects here, before the run starts (upstream: outside its try).
    let messages
    try {
      messages = runInput(input)
    } catch (e) {
      return Promise.reject(e)
    }
    // Not an async function: a running agent keeps no frame of run() alive (issue 18's W2).
    // (1.7's string input: any other value is the text of one user message, unchecked.)
    // Run's settles with the result alone (AgentRun.finish).
    return /** @type {Promise<AgentRunResult>} */ (
      messages === null
        ? this._executeRun('run', [userText(/** @type {string} */ (input))], runOptions ?? {}, false)
        : this._executeRun('run', messages, runOptions ?? {}, true)
    )
  }

  /**
   * @param {unknown} input
   * @returns {Promise<AgentRunResult>}
   */
  async prompt(input) {
    const userMessage = promptInput(input)
    const history = this.messageHistory
    history.push(userMessage)
    // A prompt's settles with the result and the history verdict (AgentRun.finish).
    const { result, history: verdict } = /** @type {{ result: AgentRunResult, history: string }} */ (
      await this._executeRun('prompt', [...history], {}, Array.isArray(input))
    )
    if (verdict === 'rollback') {
      restore(history, userMessage)
      return result
    }
    try {
      for (const msg of result.messages) this.messageHistory.push(msg)
    } catch (e) {
      restore(history, userMessage)
      throw e
    }
    return result
  }

  /** A plain method, as upstream's since 1.15: the input is checked and copied at the call (a
   *  bad message list throws there), the run itself starts on the first `next()`.
   * @param {unknown} input
   * @param {RunOpts} [runOptions]
   */
  stream(input, runOptions) {
    const messages = runInput(input)
    return messages === null ? this._stream([userText(/** @type {string} */ (input))], runOptions, false) : this._stream(messages, runOptions, true)
  }

  /**
   * @param {LLMMessage[]} messages
   * @param {RunOpts | undefined} runOptions
   * @param {boolean} callerMessages
   * @returns {AsyncGenerator<import('./runner.js').DriveEvent, void, undefined>}
   */
  async *_stream(messages, runOptions, callerMessages) {
    let step = start(setupOf('stream', this.config, false, this._retrySetup))
    /** @type {Error | undefined} */
    let error
    let dispose = noop
    try {
      this._apply(step, error, 0, 0)
      // stream's sequence is the machine's too, performed in line: the hook (if any), the
      // runner's events passed on, afterRun (if any) on `done`.
      /** @type {Hooked | null} */
      let hooked = null
      if (step.op === 'beforeRun') {
        hooked = await this._beforeRun(messages, callerMessages, runOptions?.abortSignal)
        step = next(step, answer(step, hooked.event))
        this._apply(step, error, 0, 0)
      }
      const first = expectOp(step, 'runRunner')
      const outgoing = hooked === null ? messages : outgoingOf(first, hooked)
      const runner = await (this.runner ?? this._getRunner())
      const { signal, timeout, dispose: unhook } = runSignal(runOptions?.abortSignal, this.config.timeoutMs)
      dispose = unhook
      /** @type {MutableRunOpts} */
      const options = { ...runOptions }
      if (signal !== undefined) options.abortSignal = signal
      for await (const event of runner.stream(outgoing, options)) {
        if (event.type === 'done') {
          const data = /** @type {RunResult} */ (event.data)
          const u = data.tokenUsage
          const usageIn = u.input_tokens
          const usageOut = u.output_tokens
          step = next(step, answer(runnerStep(step), resultEvent(data, timeout)))
          this._apply(step, error, usageIn, usageOut)
          /** @type {AgentRunResult | undefined} */
          let r
          if (step.op === 'afterRun') {
            r = await callAfterRun(this.config, buildResult(step, [data], [], undefined, error), signal)
            step = next(step, answer(step, EV.afterRunReturned()))
            this._apply(step, error, 0, 0)
          }
          const finish = expectOp(step, 'finish')
          if (finish.build) r = buildResult(finish, [data], [], undefined, error)
          yield { type: 'done', data: r }
        } else if (event.type === 'error') {
          error = toError(event.data)
          step = next(step, answer(runnerStep(step), EV.runnerError()))
          this._apply(step, error, 0, 0)
          yield event
        } else {
          yield event
        }
      }
    } catch (err) {
      error = toError(err)
      // The runner's events end with `done`: a throw comes while the machine waits for the hook,
      // the runner, afterRun, or the result being built (the machine refuses any other step).
      step = next(step, answer(/** @type {StepOf<'beforeRun' | 'runRunner' | 'passError' | 'afterRun' | 'finish'>} */ (step), EV.threw(false)))
      this._apply(step, error, 0, 0)
      yield { type: 'error', data: error }
    } finally {
      dispose()
    }
  }

  /** Performs what every step asks for before its action: the status, and the usage of the
   *  runner result just reported (`usageIn`, `usageOut`).
   * @param {Step} step
   * @param {Error | undefined} error
   * @param {number} usageIn
   * @param {number} usageOut
   */
  _apply(step, error, usageIn, usageOut) {
    const status = step.status
    if (status === 'running') {
      const { error: _stale, ...rest } = this.state
      this.state = { ...rest, status }
    } else if (status === 'error') {
      this.state = { ...this.state, status, error }
    } else if (status !== null) {
      this.state = { ...this.state, status }
    }
    if (step.addUsage) {
      const t = this.state.tokenUsage
      this.state.tokenUsage = { input_tokens: t.input_tokens + usageIn, output_tokens: t.output_tokens + usageOut }
    }
  }

  /**
   * Awaits beforeRun (§4.4, upstream 1.15) on the run's messages: the machine's event for its
   * answer, with what the outgoing messages need. The context has a copy of the messages; the
   * hook may return others, which replace them (checked and copied as an input is). A returned
   * copy that is still what it was given replaces nothing, so a 1.7 hook that returns its
   * context keeps 1.7's message objects. A prompt that is not a string is upstream's error once
   * the messages are the caller's (`callerMessages`, or replaced); with a string input and kept
   * messages it is sent as is (1.7, §20.1 #8).
   * @param {LLMMessage[]} messages
   * @param {boolean} callerMessages
   * @param {AbortSignal | undefined} signal
   * @returns {Promise<Hooked>}
   */
  async _beforeRun(messages, callerMessages, signal) {
    // The machine asks for it only when there is one.
    const hook = /** @type {Required<AgentConfig>['beforeRun']} */ (this.config.beforeRun)
    const index = lastUserIndex(messages)
    const text = textAt(messages, index)
    const { beforeRun: _b, afterRun: _a, ...agent } = this.config
    /** @type {LLMMessage[]} */
    let given
    // What `given` holds now, to tell a hook that changed it in place from one that returns its
    // context unchanged (the run's own messages may change meanwhile: they are the caller's).
    /** @type {LLMMessage[] | null} */
    let held
    try {
      given = structuredClone(messages)
      held = structuredClone(given)
    } catch {
      if (callerMessages) throw new InvalidMessageError(NOT_CLONEABLE)
      // A string input over a history structuredClone cannot copy (a JS adapter's block with a
      // function in it) ran in 1.7: its hook gets a new array of the run's own messages instead.
      given = messages.slice()
      held = null
    }
    // Under the caller's signal only: the run's timeoutMs starts after this hook, as upstream's.
    const returned = await settleOrAbandonOn(hook({ prompt: text, messages: given, agent }), signal, beforeRunAborted)
    const prompt = returned.prompt
    const next = returned.messages
    const replaced = next !== undefined && !(next === given && (held === null ? sameItems(given, messages) : unchanged(given, held)))
    if ((callerMessages || replaced) && typeof prompt !== 'string') throw new InvalidMessageError(PROMPT_NOT_STRING)
    let outgoing = messages
    let at = index
    if (replaced) {
      assertValidMessages(next)
      outgoing = copyMessages(/** @type {readonly LLMMessage[]} */ (next))
      at = lastUserIndex(outgoing)
    }
    const event = EV.hookReturned(prompt !== text, at >= 0)
    return { event, messages: outgoing, index: at, prompt, inPlace: callerMessages || replaced }
  }

  /** Creates the runner on the first run (callers use `this.runner` when it is set, and await
   *  either: a bad provider rejects the run). */
  _getRunner() {
    const c = this.config
    let adapter = c.adapter
    if (!adapter) {
      adapter = newAdapter(c.provider ?? boundary.llm.defaultProvider, c.apiKey, c.baseURL, c.region, c.egressPolicy)
    } else if (c.egressPolicy !== undefined) {
      throw unsupportedAdapterError(adapter)
    }
    this.runner = this._newRunner(adapter)
    return this.runner
  }

  /** @param {import('../index.js').LLMAdapter} adapter */
  _newRunner(adapter) {
    const c = this.config
    /** @type {{ -readonly [K in keyof import('../index.js').RunnerOptions]: import('../index.js').RunnerOptions[K] }} */
    const ro = {
      model: c.model,
      systemPrompt: c.outputSchema ? structuredSystemPrompt(c.systemPrompt, c.outputSchema) : c.systemPrompt,
      maxTurns: c.maxTurns,
      maxTokens: c.maxTokens,
      temperature: c.temperature,
      topP: c.topP,
      topK: c.topK,
      minP: c.minP,
      parallelToolCalls: c.parallelToolCalls,
      frequencyPenalty: c.frequencyPenalty,
      presencePenalty: c.presencePenalty,
      extraBody: c.extraBody,
      thinking: c.thinking,
      toolPreset: c.toolPreset,
      allowedTools: c.tools,
      disallowedTools: c.disallowedTools,
      agentName: this.name,
      agentRole: c.systemPrompt === undefined ? boundary.agent.defaultRole : c.systemPrompt.slice(0, boundary.agent.rolePromptLength),
      cwd: c.cwd,
      loopDetection: c.loopDetection,
      maxTokenBudget: c.maxTokenBudget,
      contextStrategy: c.contextStrategy,
      compressToolResults: c.compressToolResults,
      preserveReasoningAsText: c.preserveReasoningAsText,
      compressReasoningText: c.compressReasoningText,
      callTimeoutMs: c.callTimeoutMs,
      toolTimeoutMs: c.toolTimeoutMs,
    }
    // Upstream copies the gate only when defined.
    if (c.onToolCall !== undefined) ro.onToolCall = c.onToolCall
    // Likewise the shell executor (upstream 1.16); it grants nothing: bash must still be granted.
    if (c.shellExecutor !== undefined) ro.shellExecutor = c.shellExecutor
    return new AgentRunner(adapter, this.toolRegistry, this.toolExecutor, ro)
  }

  /** The driver of `run` and `prompt` (§4.3–§4.6): performs each step until `Finish`; returns
   *  the result and the history verdict (for run, the result alone). Never rejects. Only what
   *  it awaits is here; the run's state and its other steps are the AgentRun's.
   * @param {Entry} entry
   * @param {LLMMessage[]} messages
   * @param {RunOpts} callerOptions
   * @param {boolean} callerMessages
   * @returns {Promise<AgentRunResult | { result: AgentRunResult, history: string }>}
   */
  async _executeRun(entry, messages, callerOptions, callerMessages) {
    const r = new AgentRun(this, entry, messages, callerOptions)
    try {
      for (;;) {
        /** @type {Answer} */
        let event
        const s = r.step
        r.text = null
        try {
          this._apply(s, r.error, r.usageIn, r.usageOut)
          switch (s.op) {
            case 'beforeRun':
              r.hooked = await this._beforeRun(messages, callerMessages, callerOptions.abortSignal)
              event = answer(s, r.hooked.event)
              break
            case 'runRunner':
              if (r.runner === null) {
                if (r.hooked !== null) r.outgoing = outgoingOf(s, r.hooked)
                // Always awaited: the model is never called before run() has returned its promise.
                r.begin(await (this.runner ?? this._getRunner()))
              }
              // begin() set the runner and the options.
              event = answer(s, r.ran(s, await /** @type {import('./runner.js').AgentRunner} */ (r.runner).run(r.conversation(s), r.options)))
              break
            case 'validate':
              event = answer(s, r.validate())
              break
            case 'afterRun':
              r.result = await callAfterRun(this.config, r.built(s), r.signals.signal)
              event = answer(s, EV.afterRunReturned())
              break
            case 'trace':
              this._agentTrace(callerOptions, r.built(s), r.startMs)
              event = answer(s, EV.traceEmitted())
              break
            case 'finish':
              return r.finish(s)
            default:
              throw new Error(boundary.agent.driverUnknownAction(s.code))
          }
        } catch (err) {
          const threw = r.threw(err)
          // Validating awaits nothing and catches what it calls: a throw there would be a driver
          // bug, which the machine refuses.
          event = s.op === 'validate' ? /** @type {Answer} */ (/** @type {number} */ (threw)) : answer(s, threw)
        }
        r.answer(event)
      }
    } finally {
      r.signals.dispose()
    }
  }

  /**
   * @param {RunOpts} callerOptions
   * @param {AgentRunResult} r
   * @param {number} startMs
   */
  _agentTrace(callerOptions, r, startMs) {
    if (!callerOptions.onTrace) return
    const endMs = Date.now()
    emitTrace(callerOptions.onTrace, {
      type: 'agent',
      runId: callerOptions.runId ?? '',
      taskId: callerOptions.taskId,
      agent: callerOptions.traceAgent ?? this.name,
      turns: r.messages.filter((m) => m.role === 'assistant').length,
      tokens: r.tokenUsage,
      toolCalls: r.toolCalls.length,
      startMs,
      endMs,
      durationMs: endMs - startMs,
    })
  }
}

/**
 * One run's or prompt's state across the machine's steps, and the steps that await nothing:
 * `Agent._executeRun` keeps only its awaits, so the frame a running agent keeps suspended is
 * small (issue 18's W2).
 */
class AgentRun {
  /**
   * @param {Agent} agent
   * @param {Entry} entry
   * @param {LLMMessage[]} messages
   * @param {RunOpts} callerOptions
   */
  constructor(agent, entry, messages, callerOptions) {
    this.agent = agent
    this.entry = entry
    this.callerOptions = callerOptions
    /** @type {Step} */
    this.step = start(setupOf(entry, agent.config, callerOptions.onTrace, agent._retrySetup))
    this.startMs = Date.now()
    this.outgoing = messages
    /** @type {import('./runner.js').AgentRunner | null} */
    this.runner = null
    /** @type {MutableRunOpts | undefined} */
    this.options = undefined
    /** @type {AbortSignal | undefined} */
    this.timeout = undefined
    this.signals = UNTIMED // runSignal's answer (its dispose ends the merge)
    /** @type {Hooked | null} */
    this.hooked = null
    // Every attempt's runner result and the feedback message each failed one produced.
    /** @type {RunResult[]} */
    this.attempts = []
    /** @type {LLMMessage[]} */
    this.feedbacks = []
    this.usageIn = 0
    this.usageOut = 0
    /** @type {unknown} */
    this.structured = undefined
    /** @type {Error | undefined} */
    this.error = undefined
    /** @type {AgentRunResult | undefined} */
    this.result = undefined
    // The text of the current step: the JSON to validate, or the retry's feedback.
    this.given = ''
    // The text the current step reports with its event (the output, or why it is invalid).
    /** @type {string | null} */
    this.text = null
  }

  /** The run's runner, and the options every attempt runs with: the agent's state follows its
   *  messages, and the caller's signal is merged with the agent's timeout.
   * @param {import('./runner.js').AgentRunner} runner
   */
  begin(runner) {
    const agent = this.agent
    const callerOptions = this.callerOptions
    this.runner = runner
    // The closure is written in the literal, not assigned to a property afterwards: a closure
    // made per run and stored with a property assignment, while V8 runs that code unoptimised,
    // kept every run's objects (reached through its context: the agent, its runner, the
    // conversation) alive through the following scavenges, so a process's first thousands of
    // runs grew the young generation (issue 18's S2: `bench/README.md`). Same properties, same order.
    /** @type {MutableRunOpts} */
    const options = {
      ...callerOptions,
      onMessage: (/** @type {LLMMessage} */ msg) => {
        agent.state.messages.push(msg)
        // What it returns goes to the runner, which drops a promise's rejection (dropRejection).
        return callerOptions.onMessage ? callerOptions.onMessage(msg) : undefined
      },
    }
    this.options = options
    if (callerOptions.onTrace && !callerOptions.runId) options.runId = generateRunId()
    // Kept as the object runSignal returned, for the same reason (its dispose is a closure).
    const merged = runSignal(callerOptions.abortSignal, agent.config.timeoutMs)
    this.timeout = merged.timeout
    this.signals = merged
    if (merged.signal !== undefined) options.abortSignal = merged.signal
  }

  /** The conversation this attempt runs on: a checked retry (outputSchemaRetries set) goes on
   *  after the earlier attempts and their feedback, whose tokens count toward the runner's
   *  maxTokenBudget.
   * @param {StepOf<'runRunner'>} step
   */
  conversation(step) {
    let conversation = this.outgoing
    if (step.countSpent) {
      let spent = 0
      for (let i = 0; i < this.attempts.length; i++) spent += this.attempts[i].tokenUsage.input_tokens + this.attempts[i].tokenUsage.output_tokens
      const options = /** @type {MutableRunOpts} */ (this.options) // begin() set them
      options[BUDGET_SPENT] = spent
    }
    if (step.retry) {
      this.feedbacks.push(userText(this.given))
      conversation = this.outgoing.slice()
      for (let i = 0; i < this.attempts.length; i++) conversation.push(...this.attempts[i].messages, this.feedbacks[i])
    }
    return conversation
  }

  /**
   * An attempt's runner result: its usage, kept; the machine's event for it.
   * @param {StepOf<'runRunner'>} step
   * @param {RunResult} result
   */
  ran(step, result) {
    const u = result.tokenUsage
    this.usageIn = u.input_tokens
    this.usageOut = u.output_tokens
    this.attempts.push(result)
    const event = resultEvent(result, this.timeout)
    if (step.reportOutput) this.text = String(result.output)
    return event
  }

  /** The structured output's check: the event, with why it is invalid as the step's text. */
  validate() {
    try {
      // The machine validates only under an output schema.
      this.structured = validateOutput(/** @type {import('../index.js').ZodLikeSchema} */ (this.agent.config.outputSchema), JSON.parse(this.given))
      return EV.valid()
    } catch (e) {
      this.text = isError(e) ? messageOf(e) : safeString(e)
      return EV.invalid()
    }
  }

  /** The result as the current step describes it (built when the step says so).
   * @param {StepOf<'afterRun' | 'trace' | 'finish'>} step
   */
  built(step) {
    if (step.build) this.result = buildResult(step, this.attempts, this.feedbacks, this.structured, this.error)
    // Every step that reports a result builds it first (the machine's BUILD bit).
    return /** @type {AgentRunResult} */ (this.result)
  }

  /** What the run settles with: run() keeps no history, so its promise is this one's, with the
   *  result alone.
   * @param {StepOf<'finish'>} step
   */
  finish(step) {
    const result = this.built(step)
    return this.entry === 'run' ? result : { result, history: step.history }
  }

  /**
   * A step that threw: the error kept, the machine's event for it.
   * @param {unknown} err
   */
  threw(err) {
    this.error = toError(err)
    this.text = null
    return EV.threw(this.timeout?.aborted === true)
  }

  /**
   * The machine's next step for `event`.
   * @param {Answer} event
   */
  answer(event) {
    const out = respond(this.step, event, this.text)
    if (Array.isArray(out)) {
      this.step = out[0]
      this.given = out[1]
    } else {
      this.step = out
    }
  }
}

/**
 * The retries `outputSchemaRetries: value` asks for, checked by the kernel; a bad value throws
 * its error.
 * @param {unknown} value
 */
function retriesSetup(value) {
  let text
  try {
    text = typeof value === 'number' ? String(value) : JSON.stringify(value)
  } catch {
    text = undefined
  }
  const r = native.agentRetriesSetup(text ?? safeString(value))
  if (typeof r === 'string') throw new Error(r)
  return r
}

/** A failed run's output: the error's message as text, whatever the thrower put there (a
 *  Symbol, a throwing getter); the run's result is returned in every case.
 * @param {unknown} error
 */
function messageOf(error) {
  try {
    const m = /** @type {Fields} */ (error).message // (null or undefined throws: below)
    return typeof m === 'string' ? m : safeString(m)
  } catch {
    return safeString(error)
  }
}

/**
 * @param {LLMMessage[]} history
 * @param {LLMMessage} userMessage
 */
function restore(history, userMessage) {
  const i = history.lastIndexOf(userMessage)
  if (i >= 0) history.splice(i)
}

module.exports = { Agent }
