'use strict'
// Per-tool timeouts (beyond upstream): `ToolDefinition.timeoutMs`, else the default
// `toolTimeoutMs` of the execution (RunnerOptions / AgentConfig pass theirs per execution) or of
// the ToolExecutor. The timer lives here, in the driver that awaits the tool; what the call then
// resolves with is the executor machine's decision (`TIMED_OUT`, crates/core/src/tool/executor.rs).
const native = require('./native.js')
const { attach } = require('./util.js')
const { listenable, MAX_TIMER_MS } = require('./deadline.js')

/** What `ToolDeadline.run` resolves with when the timeout passed first. */
const TIMED_OUT = Symbol('oma-kernel tool timeout')

/** A timer handle made weak (a fake timer without `unref` is left as it is). */
function unref(timer) {
  if (timer !== null && typeof timer === 'object' && typeof timer.unref === 'function') timer.unref()
}

/** How the error names a value that is not a number of milliseconds. */
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
 */
function timeoutMs(value, setting) {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number') throw new TypeError(native.toolTimeoutInvalid(setting, shown(value)))
  if (Number.isNaN(value)) throw new RangeError(native.toolTimeoutInvalid(setting, shown(value)))
  return value > 0 && value !== Infinity ? value : 0
}

/** The setting name of a tool's own `timeoutMs`. */
const toolSetting = (name) => `timeoutMs of tool "${name}"`

/**
 * One tool call's deadline. `signal` aborts when the call's own signal (`base`) does, or when the
 * driver expires the deadline (`expire`) after `run` resolved with TIMED_OUT. The timer is ref'd
 * on purpose: while a tool is pending it is what ends the call, so the process must not exit
 * before it fires; it is cleared as soon as `execute` settles. A caller's abort does not clear
 * it (a tool that ignores its signal is still bounded by its timeout) but unrefs it: the caller
 * gave up on the call, and a long timeout must not keep the process alive for a tool nobody
 * waits for (a run answers an aborted tool at once).
 */
class ToolDeadline {
  constructor(ms, base) {
    this.ms = ms
    this.base = base
    this.timer = null
    this.onBaseAbort = null
    this.resolve = null // the pending run's resolve, until the call settles or times out
    this.weak = false // the caller aborted: the timer no longer holds the process
    this.controller = new AbortController()
    this.signal = this.controller.signal
    if (base !== undefined && base !== null && base.aborted === true) {
      this.weak = true
      this.controller.abort(base.reason)
    } else if (listenable(base)) {
      this.onBaseAbort = () => {
        this.onBaseAbort = null
        this.weak = true
        if (this.timer !== null) unref(this.timer)
        this.controller.abort(base.reason)
      }
      base.addEventListener('abort', this.onBaseAbort, { once: true })
    }
  }

  arm(remaining) {
    this.timer = setTimeout(() => {
      if (remaining > MAX_TIMER_MS) this.arm(remaining - MAX_TIMER_MS)
      else this.fire()
    }, Math.min(remaining, MAX_TIMER_MS))
    if (this.weak) unref(this.timer)
  }

  fire() {
    this.timer = null
    const resolve = this.resolve
    this.clear()
    if (resolve !== null) resolve(TIMED_OUT)
  }

  /** Stops the timer and the watch on the caller's signal; idempotent. */
  clear() {
    if (this.timer !== null) {
      clearTimeout(this.timer)
      this.timer = null
    }
    if (this.onBaseAbort !== null) {
      this.base.removeEventListener('abort', this.onBaseAbort)
      this.onBaseAbort = null
    }
    this.resolve = null
  }

  /**
   * `tool.execute(input, context)` with this deadline's signal in the context. Settles with the
   * call, or resolves with TIMED_OUT the moment the timeout passes: a tool that never settles is
   * left behind with handlers attached, so its late outcome is never unhandled.
   */
  run(tool, input, context) {
    const ctx = { ...context, abortSignal: this.signal }
    this.arm(this.ms)
    let value
    try {
      value = tool.execute(input, ctx)
    } catch (err) {
      this.clear()
      throw err
    }
    return new Promise((resolve, reject) => {
      this.resolve = resolve
      attach(
        value,
        (v) => {
          if (this.resolve !== resolve) return // timed out already
          this.clear()
          resolve(v)
        },
        (err) => {
          if (this.resolve !== resolve) return
          this.clear()
          reject(err)
        },
      )
    })
  }

  /** Aborts the tool's signal once its call timed out; the reason is a TimeoutError (the name
   *  `AbortSignal.timeout` gives) whose message is the call's result text. */
  expire(text) {
    this.controller.abort(new DOMException(text, 'TimeoutError'))
  }
}

module.exports = { ToolDeadline, TIMED_OUT, timeoutMs, toolSetting }
