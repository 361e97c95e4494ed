'use strict'
// Tool framework glue: the registry holds the user's JS tool objects. ToolExecutor.execute is
// the driver of the kernel's executor machine (crates/core/src/tool/executor.rs), which owns
// the order of the steps and every text: this file performs what each step asks for (look the
// tool up, read the abort signal, call the user's Zod schema or the native JSON Schema
// validator, await `execute`, read the output limit) and answers with what happened.
const native = require('./native.js')
const { zodToJsonSchema, isZodSchema, toolInputSchema, INPUT_CHECKS } = require('./schema.js')
const { isError, safeString } = require('./errors.js')
const { attach, promiseThen, copyInput } = require('./util.js')
const { ToolDeadline, TIMED_OUT, timeoutMs, toolSetting } = require('./tool-deadline.js')
const { ABANDON_AFTER_MS, listenable } = require('./deadline.js')

/** @typedef {import('./util.js').Fields} Fields */
/** @typedef {import('../index.js').ToolUseContext} ToolUseContext */
/** @typedef {import('../index.js').ToolResult} ToolResult */
/** A registered tool: the user's object, with any input. @typedef {import('../index.js').ToolDefinition<unknown, unknown>} Tool */
/**
 * Per-execution options: the public ones, and the runner's mark (OWN_INPUT).
 * @typedef {import('../index.js').ToolExecutorExecutionOptions & { [OWN_INPUT]?: boolean }} ExecutionOptions
 */
/**
 * The record of a call that settles through callbacks (it waited for a slot, or has a signal the
 * abort answers it by, or the runner called): what starts it, and its two ends.
 * @typedef {{
 *   executor: ToolExecutor, sem: Semaphore, toolName: string, input: unknown,
 *   context: ToolUseContext | undefined, options: ExecutionOptions | undefined,
 *   resolve: (result: ToolResult) => void, reject: (err: unknown) => void,
 *   signal: AbortSignal | undefined,
 * }} Parked
 */
/**
 * A record of `execute` before `park` gave it its promise's resolvers.
 * @typedef {Omit<Parked, 'resolve' | 'reject'> & { resolve: Parked['resolve'] | null, reject: Parked['reject'] | null }} Unsettled
 */

/**
 * @param {import('../index.js').DefineToolConfig<unknown, unknown>} config
 * @returns {Tool}
 */
function defineTool(config) {
  /** @type {{ -readonly [K in keyof Tool]?: unknown }} */
  const tool = { name: config.name, description: config.description, inputSchema: config.inputSchema }
  if (config.outputSchema !== undefined) tool.outputSchema = config.outputSchema
  if (config.llmInputSchema !== undefined) tool.llmInputSchema = config.llmInputSchema
  if (config.maxOutputChars !== undefined) tool.maxOutputChars = config.maxOutputChars
  if (config.consequential !== undefined) tool.consequential = config.consequential
  if (config.timeoutMs !== undefined) {
    timeoutMs(config.timeoutMs, toolSetting(config.name))
    tool.timeoutMs = config.timeoutMs
  }
  tool.execute = config.execute
  return /** @type {Tool} */ (tool)
}

class Semaphore {
  /** @param {number} max */
  constructor(max) {
    if (typeof max !== 'number' || Number.isNaN(max) || max < 1) {
      throw new RangeError(EX.semaphoreMaxBelowOne(max))
    }
    if (!Number.isInteger(max) || max > 0xffffffff) {
      throw new RangeError(EX.semaphoreMaxNotInteger(max))
    }
    // The FIFO admission is the kernel's (crates/core/src/kernel/semaphore.rs); waiters' resolvers stay here.
    // Its native slot exists only while there are holders or waiters (-1: none), so a
    // semaphore needs no finalizer: executors are often created per agent.
    this._max = max
    this._id = -1
    // Waiters in the order they parked: the kernel counts them and says when a release hands
    // the slot over, always to the longest waiter, this queue's head (a Map by waiter id cost
    // ≈ 80 B of garbage per parked call, issue 18's W1).
    /** @type {Array<(() => void) | Parked>} */
    this._waiters = []
  }
  get limit() {
    return this._max
  }
  get active() {
    return this._id < 0 ? 0 : native.semStats(this._id)[1]
  }
  get pending() {
    return this._id < 0 ? 0 : native.semStats(this._id)[2]
  }
  /** Takes a slot: 0 = taken now, 1 = the caller parks at the end of `_waiters`. */
  _take() {
    if (this._id >= 0) return native.semAcquire(this._id)
    this._id = native.semOpen(this._max)
    return 0
  }
  /** @returns {Promise<void>} */
  acquire() {
    const w = this._take()
    if (w === 0) return Promise.resolve()
    return new Promise((resolve) => this._waiters.push(/** @type {() => void} */ (resolve)))
  }
  release() {
    if (this._id < 0) return // an extra release (§21: a no-op)
    const w = native.semRelease(this._id)
    if (w < 0) this._id = -1
    else if (w === 1) {
      // The kernel handed the slot over, so there is a waiter.
      const wake = /** @type {(() => void) | Parked} */ (this._waiters.shift())
      // A waiter is a resolver (acquire, run) or a parked tool call (ToolExecutor.execute),
      // which starts one microtask later, as an `await` of a resolver would resume.
      if (typeof wake === 'function') wake()
      else {
        // Its slot is its own now: an abort from here on is the started call's to answer.
        if (wake.signal !== undefined) unwatchAbort(wake.signal, wake)
        promiseThen.call(Promise.resolve(wake), startParked)
      }
    }
  }
  /** A parked record leaves the queue (its call was aborted before its turn): false when it was
   *  handed its slot already.
   * @param {Parked} record */
  _leave(record) {
    const i = this._waiters.indexOf(record)
    if (i < 0) return false
    this._waiters.splice(i, 1)
    native.semLeave(this._id)
    return true
  }
  /**
   * @template T
   * @param {() => T | PromiseLike<T>} fn
   * @returns {Promise<T>}
   */
  async run(fn) {
    // A free slot is taken synchronously: no extra await on the hot path.
    const w = this._take()
    if (w !== 0) await new Promise((resolve) => this._waiters.push(/** @type {() => void} */ (resolve)))
    try {
      return await fn()
    } finally {
      this.release()
    }
  }
}

/** @type {WeakMap<object, import('../binding').JsonSchemaValidator>} */
const validators = new WeakMap()

// The JSON Schema an adapter is handed for an input schema, converted once per schema object:
// every run hands its tools' definitions to the adapter, and agents are built per request, so a
// conversion per tool per run cost time (W1) and kept a copy alive per running agent (W2, issue
// 18). Schemas are immutable values (Zod's methods return new ones), so the text never changes.
/** @type {WeakMap<object, unknown>} */
const llmSchemas = new WeakMap()
/** @param {unknown} schema */
function llmSchemaOf(schema) {
  if (schema === null || (typeof schema !== 'object' && typeof schema !== 'function')) return zodToJsonSchema(schema)
  let json = llmSchemas.get(schema)
  if (json === undefined) {
    json = zodToJsonSchema(schema)
    llmSchemas.set(schema, json)
  }
  return json
}

// The executor machine's protocol (crates/core/src/tool/executor.rs, generated): what each step
// asks for and where each answer leads.
const EX = require('./generated/boundary.js').executor
// Typed arrays: indexing the arrays napi makes cost ≈ 380 more instructions per call (callgrind).
const STEP_ACTION = Uint8Array.from(EX.stepAction)
const NEXT = Int8Array.from(EX.next)
const ANSWERS = Object.keys(EX.answers).length
const S_LOOKUP = EX.steps.Lookup
const S_LIMIT_RESULT = EX.steps.LimitResult
const S_GATED_LOOKUP = EX.steps.GatedLookup
const S_GATED_CHECK_INPUT = EX.steps.GatedCheckInput
const S_ABORT_BEFORE_INPUT = EX.steps.AbortBeforeInput
const A_CALL_GATE = EX.actions.CALL_GATE
const K_DECISION = EX.answers.DECISION
const { OBJECT: D_OBJECT, ACTION_STRING: D_ACTION_STRING, REASON_STRING: D_REASON_STRING, REASON_OTHER: D_REASON_OTHER } = EX.decisionBits
const { LOOKUP: A_LOOKUP, CHECK_ABORT: A_CHECK_ABORT, CHECK_INPUT: A_CHECK_INPUT, EXECUTE: A_EXECUTE } = EX.actions
const { PARSE_OUTPUT: A_PARSE_OUTPUT, READ_LIMIT: A_READ_LIMIT, RETURN_RESULT: A_RETURN_RESULT, RETURN_CUT: A_RETURN_CUT } = EX.actions
const { FOUND: K_FOUND, MISSING: K_MISSING, NOT_ABORTED: K_NOT_ABORTED, ABORTED: K_ABORTED } = EX.answers
const { INPUT_VALID: K_INPUT_VALID, INPUT_INVALID: K_INPUT_INVALID, INPUT_UNREADABLE: K_INPUT_UNREADABLE } = EX.answers
const { INPUT_NOT_JSON: K_INPUT_NOT_JSON, BUILTIN_INPUT: K_BUILTIN_INPUT, RETURNED: K_RETURNED } = EX.answers
const { RETURNED_IS_ERROR: K_RETURNED_IS_ERROR, BAD_RESULT: K_BAD_RESULT, THREW: K_THREW } = EX.answers
const { OUTPUT_VALID: K_OUTPUT_VALID, OUTPUT_INVALID: K_OUTPUT_INVALID, LIMIT_FITS: K_LIMIT_FITS, LIMIT: K_LIMIT } = EX.answers
const { NULLISH: BAD_NULLISH, NOT_OBJECT: BAD_NOT_OBJECT, DATA_NOT_STRING: BAD_DATA_NOT_STRING } = EX.badResults
const K_TIMED_OUT = EX.answers.TIMED_OUT
const EXECUTOR_SETTING = 'ToolExecutorOptions.toolTimeoutMs'
const EXECUTION_SETTING = 'ToolExecutorExecutionOptions.toolTimeoutMs'

/**
 * Marks the per-execution options of the runner (lib/runner.js): the input it passes is its own
 * copy of the kernel's call, which no user code holds (stream consumers and the onToolCall
 * notification are handed copies), so a gated call needs no copy of it for the tool. Not
 * exported from the package: no caller can claim it.
 */
const OWN_INPUT = Symbol('oma-kernel.ownInput')

/** The answer to a call that was running (its gate or its tool awaited) when its abort signal
 *  fired: the runner's answer to an aborted call (AbortWatch.tool, lib/runner.js), one text. */
const abortedDuringText = EX.abortedDuringExecution

// Calls waiting on user code (a gate, a tool) or parked for a slot, per abort signal: one
// listener per signal, added by its first such call, rather than one per call (an EventTarget
// listener added and removed costs ≈ 12k instructions; a run's tool calls share its signal).
// Each call leaves its set when it ends; the signal's abort frees the slots of those still in it
// at once (issue 30: a tool or gate that never settles no longer holds its slot), answers the
// parked ones, and the running ones once their gate or tool had its time to settle.
/** @type {WeakMap<AbortSignal, Set<ToolCall | Parked>>} */
const abortables = new WeakMap()

/**
 * @param {AbortSignal} signal
 * @param {ToolCall | Parked} item
 */
function watchAbort(signal, item) {
  let set = abortables.get(signal)
  if (set === undefined) {
    set = new Set()
    abortables.set(signal, set)
    signal.addEventListener('abort', () => abortWatched(signal, /** @type {Set<ToolCall | Parked>} */ (set)), { once: true })
  }
  set.add(item)
}

/**
 * @param {AbortSignal} signal
 * @param {ToolCall | Parked} item
 */
function unwatchAbort(signal, item) {
  const set = abortables.get(signal)
  if (set !== undefined) set.delete(item)
}

/**
 * @param {AbortSignal} signal
 * @param {Set<ToolCall | Parked>} set
 */
function abortWatched(signal, set) {
  abortables.delete(signal)
  const items = Array.from(set)
  set.clear()
  // Parked calls first: the slots the running ones free then go to calls that can still run.
  for (const item of items) if (!(item instanceof ToolCall)) abortParked(item)
  for (const item of items) if (item instanceof ToolCall) item.aborted()
}

const abandonCall = (/** @type {ToolCall} */ call) => call.abandon()

// ToolCall.flags.
const SLOT_FREED = 1
const ABANDONED = 2

/** A slot that is not held: the end of a call answered without one. */
const NO_SLOT = { release() {} }

/** A parked call whose signal aborted: out of the queue, answered as the machine answers a call
 *  whose signal aborted before it began (what it would have answered at its turn).
 * @param {Parked} record */
function abortParked(record) {
  record.signal = undefined
  if (!record.sem._leave(record)) return // admitted meanwhile: the call checks the signal itself
  const call = new ToolCall(record.executor, record.toolName, record.input, record.context, undefined, record.options, NO_SLOT, record)
  try {
    call.step = S_ABORT_BEFORE_INPUT
    call.answer(K_ABORTED)
    call.close(true, call.end())
  } catch (e) {
    if (!call.ended) call.close(false, e)
  }
}

/**
 * The error `ToolRegistry.register` throws for a refusal (see registry.rs for the kinds).
 * @param {string} kind
 * @param {string} [name]
 * @param {string} [detail]
 */
function refusal(kind, name, detail) {
  const r = native.registryRefusal(kind, name, detail)
  return r.typeError ? new TypeError(r.message) : new Error(r.message)
}

class ToolRegistry {
  /** @param {import('../index.js').ToolRegistryOptions} [options] */
  constructor(options) {
    /** @type {Map<string, Tool>} */
    this._tools = new Map()
    /** @type {Set<string>} */
    this._runtime = new Set()
    // `[[name, runtimeAdded], …]` as the kernel's grant resolution reads it, kept until the
    // registry changes (registries are often built per agent: no native object to free).
    /** @type {string | undefined} */
    this._listJson = undefined
    // `{ disallow }` (beyond the original, whose constructor takes nothing): names no agent is
    // granted (kernel::grants) and the executor refuses; a Set, or undefined without a rail.
    this._rail = options === undefined ? undefined : railOf(options)
  }

  /**
   * @param {Tool} tool
   * @param {{ runtimeAdded?: boolean }} [options]
   */
  register(tool, options) {
    // The checks' order and texts are the kernel's (crates/core/src/tool/registry.rs); this
    // reads the facts off the user's object and asks for the error only when one fails.
    if (tool === null || typeof tool !== 'object') throw refusal('NOT_OBJECT')
    if (typeof tool.name !== 'string' || tool.name === '') throw refusal('NO_NAME')
    if (typeof tool.execute !== 'function') throw refusal('NO_EXECUTE', tool.name)
    // A built-in tool's JSON Schema, not its lazily built Zod view (lib/schema.js).
    const schema = toolInputSchema(tool)
    if (schema === null || typeof schema !== 'object') throw refusal('NO_INPUT_SCHEMA', tool.name)
    if (this._tools.has(tool.name)) throw refusal('DUPLICATE', tool.name)
    if (!isZodSchema(schema) && !INPUT_CHECKS.has(schema) && !validators.has(schema)) {
      // Plain JSON Schema: compiled once, validated natively.
      let v
      try {
        v = new native.JsonSchemaValidator(JSON.stringify(schema))
      } catch (e) {
        throw refusal('INVALID_INPUT_SCHEMA', tool.name, /** @type {Error} */ (e).message)
      }
      validators.set(schema, v)
    }
    // Not one of the registry's refusals but the executor's setting check (tool-deadline.js):
    // a bad per-tool timeout is reported here rather than at the tool's first call.
    timeoutMs(tool.timeoutMs, toolSetting(tool.name))
    this._tools.set(tool.name, tool)
    const runtime = options !== undefined && options !== null && options.runtimeAdded === true
    if (runtime) this._runtime.add(tool.name)
    this._listJson = undefined
  }

  /** The names and runtime flags for the kernel (see the constructor). */
  _toolList() {
    if (this._listJson === undefined) {
      // Written by hand: registries are often built per agent, and this is several times
      // cheaper than JSON.stringify of the pairs.
      let s = '['
      for (const n of this._tools.keys()) {
        s += `${s.length === 1 ? '' : ','}[${JSON.stringify(n)},${this._runtime.has(n)}]`
      }
      this._listJson = this._rail === undefined ? `${s}]` : `{"tools":${s}],"disallow":${JSON.stringify([...this._rail])}}`
    }
    return this._listJson
  }

  /** @param {string} name */
  get(name) {
    return this._tools.get(name)
  }
  list() {
    return Array.from(this._tools.values())
  }
  getAll() {
    return this.list()
  }
  /** @param {string} name */
  has(name) {
    return this._tools.has(name)
  }
  /** @param {string} name */
  unregister(name) {
    if (!this._tools.delete(name)) return
    this._runtime.delete(name)
    this._listJson = undefined
  }
  /** @param {string} name */
  deregister(name) {
    this.unregister(name)
  }

  /**
   * @param {Tool} tool
   * @returns {import('../index.js').LLMToolDef}
   */
  _toolDef(tool) {
    // A registered tool's schema is an object (register checked), and so is its conversion.
    return {
      name: tool.name,
      description: tool.description,
      inputSchema: /** @type {Record<string, unknown>} */ (tool.llmInputSchema ?? llmSchemaOf(toolInputSchema(tool))),
    }
  }
  toToolDefs() {
    return this.list().map((t) => this._toolDef(t))
  }
  toRuntimeToolDefs() {
    return this.list()
      .filter((t) => this._runtime.has(t.name))
      .map((t) => this._toolDef(t))
  }
  toLLMTools() {
    return this.list().map((t) => {
      if (t.llmInputSchema) return { name: t.name, description: t.description, input_schema: { type: 'object', ...t.llmInputSchema } }
      const s = /** @type {Fields} */ (zodToJsonSchema(toolInputSchema(t))) // a registered tool's: an object
      /** @type {{ type: string, properties: unknown, required?: unknown }} */
      const input_schema = { type: 'object', properties: s.properties ?? {} }
      if (s.required !== undefined) input_schema.required = s.required
      return { name: t.name, description: t.description, input_schema }
    })
  }
}

/** The rail of `new ToolRegistry(options)`: the kernel checks the values this describes
 *  (crates/core/src/tool/registry.rs) and words the TypeError.
 * @param {unknown} options
 */
function railOf(options) {
  const kind = (/** @type {unknown} */ v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)
  const optionsKind = kind(options)
  const d = optionsKind === 'object' ? /** @type {Fields} */ (options).disallow : undefined
  const names = Array.isArray(d) ? Array.from(d, (n) => (typeof n === 'string' ? n : null)) : undefined
  const r = native.registryRail(optionsKind, kind(d), names)
  if (r.error != null) throw new TypeError(r.error)
  return /** @type {string[]} */ (r.names).length === 0 ? undefined : new Set(r.names) // set when there is no error
}

/**
 * Zod issues as the machine takes them: `[path, message, …]`, the path joined with `.`.
 * @param {ReadonlyArray<{ path: PropertyKey[], message: string }>} issues
 */
function zodIssues(issues) {
  /** @type {string[]} */
  const out = []
  for (const i of issues) out.push(i.path.join('.'), i.message)
  return out
}

/** The text of what a tool (or an executor) threw (§9.2 step 8): always a string, never throws,
 *  whatever was thrown (the executor must not reject for a tool's fault).
 * @param {unknown} err
 * @returns {string} */
function thrownMessage(err) {
  try {
    if (isError(err)) {
      const m = err.message
      return typeof m === 'string' ? m : safeString(m)
    }
    if (typeof err === 'string') return err
    const s = JSON.stringify(err)
    return s === undefined ? 'undefined' : s
  } catch {
    // Circular or BigInt values, throwing getters or toJSON, revoked Proxies: the original
    // would reject here; we report instead.
    return safeString(err)
  }
}

/**
 * @param {string} data
 * @param {number} maxChars
 */
function truncateToolOutput(data, maxChars) {
  if (data.length <= maxChars) return data
  return native.truncateToolOutput(data, maxChars)
}

/**
 * One call's side of the executor machine (crates/core/src/tool/executor.rs): the machine's
 * state (its step, and the text it holds), the values its steps work on, and the steps
 * themselves. Answers without data move along the machine's table here; the others go to the
 * machine (`executorAnswer`).
 */
class ToolCall {
  /** `gate`: the call's `onToolCall` gate, if any; a gated call starts on the machine's gated
   *  steps, which reach `execute` only through the gate's allow.
   * @param {ToolExecutor} executor
   * @param {string} toolName
   * @param {unknown} input
   * @param {ToolUseContext | undefined} context
   * @param {import('../index.js').ToolCallGate | undefined} gate
   * @param {ExecutionOptions | undefined} options
   * @param {{ release(): void }} sem
   * @param {Parked | null} parked
   */
  constructor(executor, toolName, input, context, gate, options, sem, parked) {
    this.executor = executor
    this.context = context
    this.options = options
    // The slot the call holds, and the record of a call that waited for it (else null).
    this.sem = sem
    this.parked = parked
    /** @type {InstanceType<typeof ToolDeadline> | null} */
    this.deadline = null
    this.ms = 0
    this.ended = false
    this.awaiting = false
    // The input as given; once checked, a gated call's copy for its gate (checkInput).
    this.input = input
    this.name = toolName
    /** @type {Tool | undefined} */
    this.tool = undefined
    this.parsed = input
    /** @type {unknown} what the tool resolved with */
    this.result = undefined
    /** @type {{ describe(input: unknown): Float64Array, accept(description: Float64Array): void } | undefined} */
    this.builtin = undefined
    this.step = gate ? S_GATED_LOOKUP : S_LOOKUP
    /** @type {string | undefined} */
    this.text = undefined
    // `metadata.toolCallGate` once the machine read a valid decision.
    /** @type {import('../index.js').ToolCallGateMetadata | undefined} */
    this.verdict = undefined
    // SLOT_FREED | ABANDONED (see aborted, abandon): a small integer, and `abort` null unless
    // the call waits on user code under a signal, so that an ungated call without a signal
    // allocates no more than it did (W1 counts the garbage of every call).
    this.flags = 0
    // `{ signal, grace }` while the call is in its signal's set (watchAbort): `grace` is the
    // timer that answers it if its gate or tool does not settle after the abort.
    /** @type {{ signal: AbortSignal, grace: NodeJS.Timeout | null } | null} */
    this.abort = null
  }

  /** The CALL_GATE step: calls the gate with the call's context and describes its decision to
   *  the machine, which validates it and owns every text. Never throws.
   * @param {import('../index.js').ToolCallGate} gate */
  async callGate(gate) {
    /** @type {unknown} the user's gate's */
    let decision
    try {
      const tool = /** @type {Tool} */ (this.tool) // found (the machine's LOOKUP)
      // A context the caller may have left out: reading `agent` then throws, as upstream.
      const context = /** @type {ToolUseContext} */ (this.context)
      // Built inside the try, as upstream: a context without `agent` reads as the gate's throw.
      // The gate's own copy (checkInput): what it, or whatever it hands it to, does with it is
      // not what runs.
      /** @type {{ -readonly [K in keyof import('../index.js').ToolCallContext]: import('../index.js').ToolCallContext[K] }} */
      const ctx = { toolName: tool.name, input: /** @type {Record<string, unknown>} */ (this.input), agentName: context.agent.name }
      if (tool.consequential === true) ctx.consequential = true
      if (context.runId !== undefined) ctx.runId = context.runId
      if (context.taskId !== undefined) ctx.taskId = context.taskId
      if (context.toolCallId !== undefined) ctx.toolCallId = context.toolCallId
      decision = await gate(ctx)
    } catch (err) {
      return this.answer(K_THREW, thrownMessage(err))
    }
    /** @type {string | undefined} */
    let action
    /** @type {string[] | undefined} */
    let reason
    let bits = 0
    try {
      if (decision !== null && typeof decision === 'object') {
        bits = D_OBJECT
        const a = /** @type {Fields} */ (decision).action
        if (typeof a === 'string') {
          bits |= D_ACTION_STRING
          action = a
        }
        const r = /** @type {Fields} */ (decision).reason
        if (typeof r === 'string') {
          bits |= D_REASON_STRING
          reason = [r]
        } else if (r !== undefined) bits |= D_REASON_OTHER
      }
    } catch (err) {
      // A decision whose getters throw: the gate's fault, reported as its throw.
      return this.answer(K_THREW, thrownMessage(err))
    }
    this.answer(K_DECISION, action, reason, bits)
  }

  /** Performs the synchronous steps until the machine asks to execute or to return; that action. */
  run() {
    for (;;) {
      const action = STEP_ACTION[this.step]
      switch (action) {
        case A_LOOKUP:
          this.tool = this.executor.registry.get(this.name)
          this.answer(this.tool ? K_FOUND : K_MISSING)
          break
        case A_CHECK_ABORT: {
          // A call whose abort was seen (its slot freed) stays aborted, whatever a signal-like
          // object's `aborted` says later: it must not run without its slot.
          this.answer(this.context?.abortSignal?.aborted === true || (this.flags & SLOT_FREED) !== 0 ? K_ABORTED : K_NOT_ABORTED)
          break
        }
        case A_CHECK_INPUT:
          this.checkInput()
          break
        case A_PARSE_OUTPUT:
          this.parseOutput()
          break
        case A_READ_LIMIT:
          this.readLimit()
          break
        default:
          return action
      }
    }
  }

  /**
   * What the gate approves is what runs (issue 30). A gated call validates, shows its gate and
   * runs its own deep copy of the caller's input (copyInput), taken here, before any user code
   * can run: the caller, a stream consumer or an onToolCall notification holding the input can
   * no longer change it while the gate decides. The gate is shown a second copy of the
   * validated input, so that nothing it (or an audit hook it hands `ctx.input` to) does to it
   * reaches the tool. The runner's input is its own already (OWN_INPUT): one copy, the gate's.
   * Ungated calls copy nothing (validation and the tool's start are one synchronous step).
   */
  checkInput() {
    const tool = /** @type {Tool} */ (this.tool) // found (the machine's LOOKUP)
    let input = this.input
    this.name = tool.name
    const gated = this.step === S_GATED_CHECK_INPUT
    if (gated && !ownInput(this.options)) {
      try {
        input = copyInput(input)
      } catch (e) {
        return this.answer(K_INPUT_UNREADABLE, thrownMessage(e))
      }
      this.input = input
      this.parsed = input
    }
    const schema = toolInputSchema(tool)
    if (isZodSchema(schema)) {
      // A throwing schema rejects execute, as in the original.
      const r = schema.safeParse(input)
      if (!r.success) return this.answer(K_INPUT_INVALID, undefined, zodIssues(r.error.issues))
      this.parsed = r.data
      if (gated && !this.showGate()) return
      return this.answer(K_INPUT_VALID)
    }
    // Any other check validates the input itself, which the tool then receives.
    if (gated && !this.showGate()) return
    const builtin = INPUT_CHECKS.get(/** @type {object} */ (schema)) // a registered tool's: an object
    if (builtin !== undefined) {
      // A built-in tool: the machine checks the input's description (Zod 3's texts).
      this.builtin = builtin
      let fields
      try {
        fields = builtin.describe(input)
      } catch (e) {
        return this.answer(K_INPUT_UNREADABLE, thrownMessage(e))
      }
      return this.answer(K_BUILTIN_INPUT, undefined, undefined, undefined, fields)
    }
    const v = validators.get(/** @type {object} */ (schema))
    if (!v) return this.answer(K_INPUT_VALID)
    let json
    try {
      json = JSON.stringify(input === undefined ? null : input)
    } catch (e) {
      return this.answer(K_INPUT_NOT_JSON, thrownMessage(e))
    }
    const errs = v.validate(json ?? 'null')
    return errs.length > 0 ? this.answer(K_INPUT_INVALID, undefined, errs.flat()) : this.answer(K_INPUT_VALID)
  }

  /** The gate's copy of the validated input, kept in `input` (which nothing reads once the input
   *  is checked); false when it cannot be read (answered so). */
  showGate() {
    try {
      this.input = copyInput(this.parsed)
      return true
    } catch (e) {
      this.answer(K_INPUT_UNREADABLE, thrownMessage(e))
      return false
    }
  }

  /** While the call awaits user code (its gate, its tool): in its abort signal's set, so that
   *  the abort answers it and frees its slot at once. Only a call that settles a record of
   *  its own (execute makes one whenever its context has a signal) can be answered early. */
  watch() {
    if (this.abort !== null || this.parked === null) return
    const signal = this.context?.abortSignal
    if (signal === undefined || signal === null || !listenable(signal) || signal.aborted === true) return
    this.abort = { signal, grace: null }
    watchAbort(signal, this)
  }

  /** Its signal aborted while the call awaited its gate or its tool: the slot is freed now (the
   *  next call need not wait for code that may never settle); the gate or tool, told of the
   *  abort through the signal, has ABANDON_AFTER_MS to settle with its own outcome (a gate's
   *  verdict then meets the machine's abort check after it; a tool's result is kept). */
  aborted() {
    if (this.ended || (this.flags & SLOT_FREED) !== 0) return
    this.flags |= SLOT_FREED
    this.sem.release()
    // Only a watched call (watch() set `abort`) is told of its signal's abort.
    const watched = /** @type {{ grace: NodeJS.Timeout | null }} */ (this.abort)
    watched.grace = setTimeout(abandonCall, ABANDON_AFTER_MS, this)
  }

  /** The aborted call's gate or tool did not settle in time: the call ends, answered as the
   *  runner answers an aborted call; that code's later outcome is ignored (its handlers stay
   *  attached, so a rejection is never unhandled). */
  abandon() {
    // Only an aborted call (which set its grace timer) is abandoned.
    const watched = /** @type {{ grace: NodeJS.Timeout | null }} */ (this.abort)
    watched.grace = null
    if (this.ended) return
    this.flags |= ABANDONED
    const d = this.deadline
    if (d !== null) {
      // The tool learns of the abort through its own signal, as it would have; its timer goes
      // (it bounded the slot's hold, which ends here).
      if (!d.signal.aborted) d.controller.abort(d.base === undefined || d.base === null ? undefined : d.base.reason)
      d.clear()
    }
    const data = abortedDuringText(this.name)
    const gate = this.verdict
    this.close(true, gate === undefined ? { data, isError: true } : { data, isError: true, metadata: { toolCallGate: gate } })
  }

  parseOutput() {
    /** @type {number} */
    let kind
    /** @type {string | undefined} */
    let arg
    /** @type {string[] | undefined} */
    let issues
    try {
      // Steps after the tool returned: it was found, and its result has a string `data`.
      const schema = /** @type {Tool} */ (this.tool).outputSchema
      if (!schema) kind = K_OUTPUT_VALID
      else {
        const r = schema.safeParse(/** @type {ToolResult} */ (this.result).data)
        if (r.success) kind = K_OUTPUT_VALID
        else {
          kind = K_OUTPUT_INVALID
          issues = zodIssues(r.error.issues)
        }
      }
    } catch (err) {
      kind = K_THREW
      arg = thrownMessage(err)
    }
    this.answer(kind, arg, issues)
  }

  /** The limit for the result's `data` or for the error text the call holds. */
  readLimit() {
    /** @type {number} */
    let kind
    /** @type {string | undefined} */
    let arg
    /** @type {number | undefined} */
    let num
    try {
      // Found; at LimitResult the result has a string `data`, at the other limit step the call
      // holds its error text.
      const max = /** @type {Tool} */ (this.tool).maxOutputChars ?? this.executor.maxToolOutputChars
      if (max === undefined || max === null) kind = K_LIMIT_FITS
      else {
        const data = /** @type {string} */ (this.step === S_LIMIT_RESULT ? /** @type {ToolResult} */ (this.result).data : this.text)
        if (data.length <= max) kind = K_LIMIT_FITS
        else {
          kind = K_LIMIT
          num = Number(max)
          arg = data
        }
      }
    } catch (err) {
      kind = K_THREW
      arg = thrownMessage(err)
    }
    this.answer(kind, arg, undefined, num)
  }

  /** Moves the machine on with an answer: along its table when the answer carries no data,
   *  otherwise through the machine, which refuses an answer the step does not take.
   * @param {number} kind
   * @param {string} [arg]
   * @param {string[]} [issues]
   * @param {number} [num]
   * @param {Float64Array} [fields]
   */
  answer(kind, arg, issues, num, fields) {
    const next = NEXT[this.step * ANSWERS + kind]
    if (next >= 0) {
      this.step = next
      return
    }
    const r = native.executorAnswer(`${this.name}`, this.step, kind, arg, issues, num, fields)
    this.step = r.step
    if (r.data !== undefined && r.data !== null) this.text = r.data
    // (A built-in tool's description, which checkInput keeps with its check.)
    else if (kind === K_BUILTIN_INPUT) /** @type {NonNullable<ToolCall['builtin']>} */ (this.builtin).accept(/** @type {Float64Array} */ (fields))
    if (kind === K_DECISION && typeof r.gateAction === 'string') {
      // The machine read a valid decision: its action is one of the gate's.
      this.verdict = /** @type {import('../index.js').ToolCallGateMetadata} */ (
        typeof r.gateReason === 'string' ? { action: r.gateAction, reason: r.gateReason } : { action: r.gateAction }
      )
    }
  }

  // The driver of an admitted call (ToolExecutor._admitted), written with `then` rather than as
  // an async function: a suspended frame per call cost ≈ 0.4 KB of garbage and its resumption
  // (issue 18's W1). Each wait is a `then` on what the original awaits, settling at the same
  // tick; the call's end frees its slot and settles it in the same job, as the function's
  // `finally` and return did.

  /** After the gate: the steps from the machine's next action on. */
  resume() {
    if ((this.flags & ABANDONED) !== 0) return undefined
    try {
      return this.proceed(this.run())
    } catch (e) {
      if (this.ended) throw e
      return this.close(false, e)
    }
  }

  /** From `action` on: the tool's run when the machine asks for it, then the end. Returns the
   *  end's value, or (the tool awaited) the promise of it; throws what rejects a direct call.
   * @param {number} action
   * @returns {unknown}
   */
  proceed(action) {
    if (action !== A_EXECUTE) return this.close(true, this.end())
    const tool = /** @type {Tool} */ (this.tool) // found (the machine's LOOKUP)
    const options = this.options
    const context = this.context
    // The call's timeout: the tool's own, else the execution's, else the executor's. Unset
    // (the default), the call below is exactly the untimed one: no timer, no signal, no copy.
    /** @type {unknown} */
    let limit = tool.timeoutMs
    /** @type {string} */
    let setting
    if (limit === undefined || limit === null) {
      limit = options === undefined || options === null ? undefined : options.toolTimeoutMs
      if (limit === undefined || limit === null) {
        limit = this.executor.toolTimeoutMs
        setting = EXECUTOR_SETTING
      } else setting = EXECUTION_SETTING
    } else setting = toolSetting(tool.name)
    const ms = limit === undefined || limit === null ? 0 : timeoutMs(limit, setting)
    this.ms = ms
    this.watch()
    /** @type {unknown} */
    let r
    try {
      // The user's tool gets the context as the caller gave it (possibly none).
      if (ms === 0) r = tool.execute(this.parsed, /** @type {ToolUseContext} */ (context))
      else {
        this.deadline = new ToolDeadline(ms, context === undefined || context === null ? undefined : context.abortSignal)
        r = this.deadline.run(tool, this.parsed, /** @type {ToolUseContext} */ (context))
      }
    } catch (err) {
      return this.settled(K_THREW, thrownMessage(err), undefined)
    }
    this.awaiting = true
    return attach(
      r,
      (result) => this.returned(result),
      (err) => this.settled(K_THREW, thrownMessage(err), undefined),
    )
  }

  /**
   * What the tool's execute resolved with, described to the machine.
   * @param {unknown} result
   */
  returned(result) {
    if ((this.flags & ABANDONED) !== 0) return undefined
    /** @type {number} */
    let kind
    /** @type {string | undefined} */
    let arg
    /** @type {number | undefined} */
    let num
    try {
      this.result = result
      if (result === TIMED_OUT) {
        kind = K_TIMED_OUT
        num = this.ms
      } else if (result === undefined || result === null) {
        kind = K_BAD_RESULT
        num = BAD_NULLISH
        arg = String(result)
      } else if (typeof result !== 'object') {
        kind = K_BAD_RESULT
        num = BAD_NOT_OBJECT
        arg = typeof result
      } else if (typeof (/** @type {Fields} */ (result).data) !== 'string') {
        kind = K_BAD_RESULT
        num = BAD_DATA_NOT_STRING
        arg = /** @type {Fields} */ (result).data === null ? 'null' : typeof (/** @type {Fields} */ (result).data)
      } else {
        kind = /** @type {Fields} */ (result).isError ? K_RETURNED_IS_ERROR : K_RETURNED
      }
    } catch (err) {
      kind = K_THREW
      arg = thrownMessage(err)
    }
    return this.settled(kind, arg, num)
  }

  /**
   * The tool's outcome answered, the remaining steps, the end.
   * @param {number} kind
   * @param {string | undefined} arg
   * @param {number | undefined} num
   */
  settled(kind, arg, num) {
    if ((this.flags & ABANDONED) !== 0) return undefined
    try {
      this.answer(kind, arg, undefined, num, undefined)
      // The tool learns of its timeout once the machine worded it (the signal's reason): only a
      // call with a deadline times out.
      if (kind === K_TIMED_OUT) /** @type {InstanceType<typeof ToolDeadline>} */ (this.deadline).expire(/** @type {string} */ (this.text))
      this.run()
      return this.close(true, this.end())
    } catch (e) {
      if (this.ended) throw e
      return this.close(false, e)
    }
  }

  /** The call's end: its slot freed first, then a waited call's own promise settled; a direct
   *  call's value returned or its error thrown (for the promise execute returned).
   * @param {boolean} ok
   * @param {unknown} v the result, or the error
   */
  close(ok, v) {
    this.ended = true
    const a = this.abort
    if (a !== null) {
      unwatchAbort(a.signal, this)
      if (a.grace !== null) {
        clearTimeout(a.grace)
        a.grace = null
      }
    }
    return endCall((this.flags & SLOT_FREED) !== 0 ? NO_SLOT : this.sem, this.parked, ok, v)
  }

  /** The value execute resolves with, once the machine asks to return. */
  end() {
    const gate = this.verdict
    // At a return step the result is the tool's (checked: an object with a string `data`).
    const result = /** @type {ToolResult} */ (this.result)
    switch (STEP_ACTION[this.step]) {
      case A_RETURN_RESULT:
        return gate === undefined ? result : withGate(result, gate)
      case A_RETURN_CUT:
        return gate === undefined ? { ...result, data: this.text } : withGate({ ...result, data: /** @type {string} */ (this.text) }, gate)
      default: // A_RETURN_ERROR
        return gate === undefined ? { data: this.text, isError: true } : { data: this.text, isError: true, metadata: { toolCallGate: gate } }
    }
  }
}

/** The end of a call holding a slot of `sem`: the slot freed first, then a waited call's own
 *  promise settled (`parked`, its record); a direct call's value returned or its error thrown.
 * @param {{ release(): void }} sem
 * @param {Parked | null} parked
 * @param {boolean} ok
 * @param {unknown} v the result (ok), or the error
 */
function endCall(sem, parked, ok, v) {
  sem.release()
  if (parked === null) {
    if (ok) return v
    throw v
  }
  if (ok) parked.resolve(/** @type {ToolResult} */ (v))
  else parked.reject(v)
  return undefined
}

/**
 * The gate's verdict merged over the tool's own metadata (upstream's shape).
 * @param {ToolResult} result
 * @param {import('../index.js').ToolCallGateMetadata} gate
 */
function withGate(result, gate) {
  return { ...result, metadata: { ...result.metadata, toolCallGate: gate } }
}

// The record `park` gives its promise's resolvers to: a promise executor runs synchronously, so one
// shared executor serves every parked call (a closure per call cost ≈ 100 B, issue 18's W1).
/** @type {Unsettled | null} */
let parking = null
/**
 * @param {(result: ToolResult) => void} resolve
 * @param {(err: unknown) => void} reject
 */
function park(resolve, reject) {
  const record = /** @type {Unsettled} */ (parking) // set around `new Promise(park)`
  record.resolve = resolve
  record.reject = reject
}

/**
 * Whether per-execution `options` are the runner's (OWN_INPUT).
 * @param {ExecutionOptions | undefined} options
 */
function ownInput(options) {
  return options !== undefined && options !== null && options[OWN_INPUT] === true
}

/**
 * A context's abort signal when an abort can be listened to, else undefined.
 * @param {ToolUseContext | undefined} context
 */
function abortSignalOf(context) {
  const signal = context === undefined || context === null ? undefined : context.abortSignal
  return signal !== undefined && signal !== null && listenable(signal) ? signal : undefined
}

/** Parks a call's record for a slot; with `signal`, the call leaves the queue when it aborts
 *  (answered at once if it has already).
 * @param {Parked} record
 * @param {AbortSignal | undefined} signal
 */
function park_(record, signal) {
  record.sem._waiters.push(record)
  if (signal === undefined) return
  if (signal.aborted === true) return abortParked(record)
  record.signal = signal
  watchAbort(signal, record)
}

/**
 * Starts a parked call that was given its slot (see Semaphore.release).
 * @param {Parked} p
 */
function startParked(p) {
  // Settles `p` itself, whatever happens.
  p.executor._admitted(p.sem, p.toolName, p.input, p.context, p.options, p)
}

class ToolExecutor {
  /**
   * @param {ToolRegistry} registry
   * @param {import('../index.js').ToolExecutorOptions} [options]
   */
  constructor(registry, options = {}) {
    this.registry = registry
    this.maxToolOutputChars = options.maxToolOutputChars
    this.onToolCall = options.onToolCall
    // The default timeout of every call through this executor (a per-execution one and a
    // tool's own `timeoutMs` take priority); checked here, read per call.
    timeoutMs(options.toolTimeoutMs, EXECUTOR_SETTING)
    this.toolTimeoutMs = options.toolTimeoutMs
    // §21: this bound applies to every execution, the runner's included.
    this.semaphore = new Semaphore(options.maxConcurrency ?? EX.defaultMaxConcurrency)
  }

  /** `options.onToolCall`: a per-execution gate, over the constructor's (upstream's 4th argument;
   *  an `undefined` one falls back to the constructor's). `options.toolTimeoutMs` likewise, under
   *  the tool's own `timeoutMs`.
   * @param {string} toolName
   * @param {unknown} input
   * @param {ToolUseContext | undefined} context
   * @param {ExecutionOptions} [options]
   * @returns {Promise<ToolResult>}
   */
  execute(toolName, input, context, options) {
    // Settles as an async function would (a throw here rejects). Not one itself: a call waiting
    // for a slot is a small record in the semaphore's queue, not a suspended frame with its
    // await (≈ 0.5 KB less per waiting call, and every agent of issue 18's W2 waits here).
    try {
      // A registry's rail (issue 19) holds on this direct path too, before anything else, with
      // the runner's not-granted text. Without a rail: one property read.
      const rail = this.registry._rail
      if (rail?.has(toolName)) return Promise.resolve({ data: native.notGrantedText(`${toolName}`), isError: true })
      // Admission first (§21: maxConcurrency bounds every execution).
      // A call with an abort signal settles a record of its own, which the abort can answer
      // while the call waits for a slot, its gate or its tool (issue 30); without one, the
      // call's own promise chain is execute's. (Read before the slot is taken: a throw here
      // must not keep one.)
      const signal = abortSignalOf(context)
      const sem = this.semaphore
      const w = sem._take()
      // Without a record, _admitted returns execute's promise.
      if (w === 0 && signal === undefined) return /** @type {Promise<ToolResult>} */ (this._admitted(sem, toolName, input, context, options, null))
      /** @type {Unsettled} */
      const record = { executor: this, sem, toolName, input, context, options, resolve: null, reject: null, signal: undefined }
      parking = record
      /** @type {Promise<ToolResult>} */
      const promise = new Promise(park)
      parking = null
      // (park has given the record its resolvers.)
      if (w === 0) this._admitted(sem, toolName, input, context, options, /** @type {Parked} */ (record))
      else park_(/** @type {Parked} */ (record), signal)
      return promise
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /**
   * The runner's entry (`AgentRunner._execute`): `execute` with the outcome handed to
   * `onOk` (the result) or `onErr` (what execute's promise would reject with), once, at the
   * call's end, instead of settling a promise. The call's record, which a waiting call parks
   * anyway, carries the two callbacks, and a call admitted at once runs with it as a woken one
   * does: no promise per call and no hop from the call's end to the runner (≈ 0.9k instructions
   * per call of a wide round, issue 18's W1). Same steps, texts and slot order as `execute`.
   * @param {string} toolName
   * @param {unknown} input
   * @param {ToolUseContext} context
   * @param {ExecutionOptions} options
   * @param {(result: ToolResult) => void} onOk
   * @param {(err: unknown) => void} onErr
   */
  _run(toolName, input, context, options, onOk, onErr) {
    try {
      // The registry's rail, as execute checks it.
      const rail = this.registry._rail
      if (rail === undefined || !rail.has(toolName)) {
        const signal = abortSignalOf(context)
        const sem = this.semaphore
        /** @type {Parked} */
        const record = { executor: this, sem, toolName, input, context, options, resolve: onOk, reject: onErr, signal: undefined }
        // The call settles its record itself, whatever happens in it (see _admitted).
        if (sem._take() === 0) this._admitted(sem, toolName, input, context, options, record)
        else park_(record, signal)
        return
      }
    } catch (e) {
      return onErr(e)
    }
    // Railed: not granted (outside the try, so that nothing onOk does reaches onErr).
    onOk({ data: native.notGrantedText(`${toolName}`), isError: true })
  }

  /** A call holding a slot of `sem`, driven to its end, which frees the slot. `parked`: the
   *  record of a call that waited, which the call settles; otherwise returns execute's promise.
   * @param {Semaphore} sem
   * @param {string} toolName
   * @param {unknown} input
   * @param {ToolUseContext | undefined} context
   * @param {ExecutionOptions | undefined} options
   * @param {Parked | null} parked
   * @returns {unknown}
   */
  _admitted(sem, toolName, input, context, options, parked) {
    /** @type {ToolCall | null} */
    let call = null
    try {
      const gate = (options === undefined || options === null ? undefined : options.onToolCall) ?? this.onToolCall
      call = new ToolCall(this, toolName, input, context, gate, options, sem, parked)
      const action = call.run()
      if (action === A_CALL_GATE) {
        call.watch()
        // The gate's verdict first (callGate never rejects); execute's promise then follows
        // the rest of the call.
        const after = promiseThen.call(call.callGate(/** @type {import('../index.js').ToolCallGate} */ (gate)), () => /** @type {ToolCall} */ (call).resume())
        return parked === null ? after : undefined
      }
      const out = call.proceed(action)
      return parked !== null || call.awaiting ? out : Promise.resolve(out)
    } catch (e) {
      // A direct call's end throws its error itself, having freed the slot.
      if (call?.ended) return parked === null ? Promise.reject(e) : undefined
      // A throw before the call's end (a throwing schema or option): its end, with that error.
      if (call !== null) call.ended = true
      try {
        return endCall(sem, parked, false, e)
      } catch {
        return Promise.reject(e)
      }
    }
  }

  /**
   * @param {import('../index.js').BatchToolCall[]} calls
   * @param {ToolUseContext} context
   * @returns {Promise<Map<string, ToolResult>>}
   */
  async executeBatch(calls, context) {
    // Every call that started is awaited before the batch settles, whatever fails: a bad call
    // object (a throwing getter) or a rejection (a schema that throws) fails the batch with the
    // first such error only once the others are done, never leaving one running unobserved.
    /** @type {Map<string, ToolResult>} */
    const results = new Map()
    /** @type {{ err: unknown } | null} */
    let failure = null
    const fail = (/** @type {unknown} */ err) => {
      if (failure === null) failure = { err }
    }
    /** @type {Promise<void>[]} */
    const pending = []
    try {
      for (const c of calls) {
        const id = c.id
        pending.push(
          attach(
            this.execute(c.name, c.input, context),
            (r) => {
              results.set(id, r)
            },
            fail,
          ),
        )
      }
    } catch (err) {
      fail(err)
    }
    await Promise.all(pending)
    // (Set by `fail`, which the calls' outcomes call.)
    if (failure !== null) throw /** @type {{ err: unknown }} */ (failure).err
    return results
  }
}

module.exports = { defineTool, ToolRegistry, ToolExecutor, Semaphore, truncateToolOutput, zodToJsonSchema, thrownMessage, OWN_INPUT, abortedDuringText }
