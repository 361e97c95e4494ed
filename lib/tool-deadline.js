'use strict'
// Per-tool timeouts (beyond upstream): `ToolDefinition.timeoutMs`, else the default
// `toolTimeoutMs` of the execution (RunnerOptions / AgentConfig pass theirs per execution) or of
// the ToolExecutor. The timer lives here, in the driver that awaits the tool; what the call then
// resolves with is the executor machine's decision (`TIMED_OUT`, crates/core/src/tool/executor.rs).
const native = require('./native.js')
const { Deadline } = require('./deadline.js')

/** What `ToolDeadline.run` resolves with when the timeout passed first. */
const TIMED_OUT = Symbol('oma-kernel tool timeout')

/**
 * A timer handle made weak (a fake timer without `unref` is left as it is).
 * @param {NodeJS.Timeout | null} timer
 */
function unref(timer) {
  if (timer !== null && typeof timer === 'object' && typeof timer.unref === 'function') timer.unref()
}

/**
 * How the error names a value that is not a number of milliseconds.
 * @param {unknown} value
 */
function shown(value) {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number') return String(value)
  return typeof value
}

/**
 * The timeout in ms that a setting asks for; 0 for none. Unset (`undefined` or `null`, as `??`
 * reads it), 0 or less: none; `Infinity` never passes, so none either. Anything but a number,
 * and NaN, are configuration errors (a TypeError, a RangeError) whose text is the kernel's;
 * `setting` names where the value was given.
 * @param {unknown} value
 * @param {string} setting
 * @returns {number}
 */
function timeoutMs(value, setting) {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number') throw new TypeError(native.toolTimeoutInvalid(setting, shown(value)))
  if (Number.isNaN(value)) throw new RangeError(native.toolTimeoutInvalid(setting, shown(value)))
  return value > 0 && value !== Infinity ? value : 0
}

/** The setting name of a tool's own `timeoutMs`. */
const toolSetting = require('./generated/boundary.js').executor.toolTimeoutSetting

/**
 * One tool call's deadline. `signal` aborts when the call's own signal (`base`) does, or when the
 * driver expires the deadline (`expire`) after `run` resolved with TIMED_OUT. A caller's abort
 * does not clear the timer but unrefs it: the caller gave up on the call, and a long timeout
 * must not keep the process alive for a tool nobody waits for (a run answers an aborted tool at
 * once). The executor clears it when it answers the aborted call itself (ToolCall.abandon, once
 * the tool had its time to settle); a signal it cannot listen to leaves the timer the bound.
 */
class ToolDeadline extends Deadline {
  onBaseAbort() {
    if (this.timer !== null) unref(this.timer)
  }

  /** @param {number} remaining */
  arm(remaining) {
    super.arm(remaining)
    if (this.signal.aborted) unref(this.timer)
  }

  /** @param {import('./deadline.js').Pending | null} pending */
  fire(pending) {
    if (pending !== null) pending.resolve(TIMED_OUT)
  }

  /** `tool.execute(input, context)` with this deadline's signal in the context; resolves with
   *  TIMED_OUT the moment the timeout passes.
   * @param {import('../index.js').ToolDefinition<unknown, unknown>} tool
   * @param {unknown} input
   * @param {import('../index.js').ToolUseContext} context
   */
  run(tool, input, context) {
    const ctx = { ...context, abortSignal: this.signal }
    this.arm(this.ms)
    return this.race(
      () => tool.execute(input, ctx),
      (err) => err,
    )
  }

  /** Aborts the tool's signal once its call timed out; the reason is a TimeoutError (the name
   *  `AbortSignal.timeout` gives) whose message is the call's result text.
   * @param {string} text */
  expire(text) {
    this.controller.abort(new DOMException(text, 'TimeoutError'))
  }
}

module.exports = { ToolDeadline, TIMED_OUT, timeoutMs, toolSetting }
