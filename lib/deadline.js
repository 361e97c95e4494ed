'use strict'
// `callTimeoutMs` (RunnerOptions / AgentConfig, upstream 1.9): every model call the runner owns
// (each loop turn, the summarize strategy's call) gets a deadline of its own, armed when the call
// starts and cleared when it settles. A deadline baked into the run's chat options would be a
// second whole-run timeout instead.
const { LLMCallTimeoutError } = require('./errors.js')
const { attach } = require('./util.js')

/** Whether `signal` can tell a listener about an abort (a caller may pass any object). */
function listenable(signal) {
  return signal !== undefined && signal !== null && typeof signal.addEventListener === 'function'
}

// Node's timers hold at most 2^31 - 1 ms (a longer delay fires after 1 ms, with a warning): a
// longer deadline is armed in pieces of this size.
const MAX_TIMER_MS = 2 ** 31 - 1
// The largest delay upstream's `AbortSignal.timeout(ms)` accepts.
const UINT32_MAX = 2 ** 32 - 1

/**
 * The deadline, in ms, that a `callTimeoutMs` value asks for; 0 for none. Unset or `<= 0` is
 * none, as upstream reads it. Upstream hands any other value to `AbortSignal.timeout`, which
 * refuses all but integers up to 2^32 - 1: such a value makes the call throw Node's own error,
 * the same here (it is that very check that throws).
 */
function deadlineMs(value) {
  if (value === undefined || value <= 0) return 0
  if (!Number.isInteger(value) || value > UINT32_MAX) AbortSignal.timeout(value)
  return value
}

/**
 * One model call's deadline: `signal` aborts when the caller's signal (`base`) does or when the
 * deadline passes, whichever is first. The timer is ref'd on purpose: while a call is pending it
 * is what ends it, so the process must not exit before it fires; it is cleared as soon as the
 * call settles or the caller aborts (the caller's abort then decides the outcome), so nothing
 * outlives the call.
 */
class CallDeadline {
  constructor(ms, base, agent) {
    this.ms = ms
    this.base = base
    this.agent = agent
    this.timedOut = false
    this.timer = null
    this.onBaseAbort = null
    // The pending JS call's reject: the deadline ends it at once, whether or not the adapter
    // honours its signal.
    this.reject = null
    this.controller = new AbortController()
    this.signal = this.controller.signal
    if (base !== undefined && base !== null && base.aborted === true) {
      this.controller.abort(base.reason)
      return
    }
    if (listenable(base)) {
      this.onBaseAbort = () => {
        this.clear()
        this.controller.abort(base.reason)
      }
      base.addEventListener('abort', this.onBaseAbort, { once: true })
    }
    this.arm(ms)
  }

  arm(remaining) {
    this.timer = setTimeout(() => {
      if (remaining > MAX_TIMER_MS) this.arm(remaining - MAX_TIMER_MS)
      else this.fire()
    }, Math.min(remaining, MAX_TIMER_MS))
  }

  fire() {
    this.timer = null
    this.timedOut = true
    const reject = this.reject
    this.clear()
    if (reject !== null && !this.baseAborted()) reject(this.timeoutError())
    // The same reason `AbortSignal.timeout` gives, for an adapter that reads it.
    this.controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
  }

  baseAborted() {
    return this.base !== undefined && this.base !== null && this.base.aborted === true
  }

  timeoutError() {
    return new LLMCallTimeoutError(this.ms, this.agent)
  }

  /** What a failed call throws: LLMCallTimeoutError when this deadline passed first and the
   *  caller's own signal has not fired (upstream's rule), else the call's own error. */
  error(err) {
    return this.timedOut && !this.baseAborted() ? this.timeoutError() : err
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
    this.reject = null
  }

  /**
   * `adapter.chat(messages, options)` with this deadline's signal in the options. Settles with the
   * call, or rejects with LLMCallTimeoutError the moment the deadline passes: an adapter that never
   * settles is left behind with handlers attached, so its late outcome is never unhandled.
   */
  chat(adapter, messages, options) {
    let value
    try {
      value = adapter.chat(messages, { ...options, abortSignal: this.signal })
    } catch (err) {
      this.clear()
      throw this.error(err)
    }
    return new Promise((resolve, reject) => {
      this.reject = reject
      attach(
        value,
        (v) => {
          this.clear()
          resolve(v)
        },
        (err) => {
          this.clear()
          reject(this.error(err))
        },
      )
    })
  }
}

/** A deadline for one model call under `callTimeoutMs` (`value`), or null when there is none. */
function callDeadline(value, base, agent) {
  const ms = deadlineMs(value)
  return ms === 0 ? null : new CallDeadline(ms, base, agent)
}

module.exports = { callDeadline, listenable, MAX_TIMER_MS }
