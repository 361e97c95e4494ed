'use strict'
// `callTimeoutMs` (RunnerOptions / AgentConfig, upstream 1.9): every model call the runner owns
// (each loop turn, the summarize strategy's call) gets a deadline of its own, armed when the call
// starts and cleared when it settles. A deadline baked into the run's chat options would be a
// second whole-run timeout instead.
const timers = require('node:timers')
const { LLMCallTimeoutError } = require('./errors.js')
const { attach } = require('./util.js')
const { timeoutAbortReason: TIMEOUT_REASON } = require('./generated/boundary.js').runner

/**
 * Whether `signal` can tell a listener about an abort (a caller may pass any object).
 * @param {AbortSignal | null | undefined} signal
 * @returns {signal is AbortSignal}
 */
function listenable(signal) {
  return signal !== undefined && signal !== null && typeof signal.addEventListener === 'function'
}

// Node's timers hold at most 2^31 - 1 ms (a longer delay fires after 1 ms, with a warning): a
// longer deadline is armed in pieces of this size.
const MAX_TIMER_MS = 2 ** 31 - 1
// The largest delay upstream's `AbortSignal.timeout(ms)` accepts.
const UINT32_MAX = 2 ** 32 - 1

/**
 * Arms `owner.timer` with `set` (a `setTimeout`) for `remaining` ms, in pieces Node's timers hold;
 * once the whole delay has passed, `owner.timer` is null and `owner.timeUp()` runs. A further
 * piece is armed through `owner.arm`, which a subclass may extend. A module-level callback with
 * arguments: no closure per timer.
 * @param {TimerOwner} owner
 * @param {(piece: typeof timerPiece, ms: number, owner: TimerOwner, remaining: number) => NodeJS.Timeout} set
 * @param {number} remaining
 */
function armTimer(owner, set, remaining) {
  owner.timer = set(timerPiece, Math.min(remaining, MAX_TIMER_MS), owner, remaining)
}

/**
 * What armTimer arms: its timer, the next piece, and what the whole delay does.
 * @typedef {{ timer: NodeJS.Timeout | null, arm(remaining: number): void, timeUp(): void }} TimerOwner
 */

/**
 * @param {TimerOwner} owner
 * @param {number} remaining
 */
function timerPiece(owner, remaining) {
  if (remaining > MAX_TIMER_MS) return owner.arm(remaining - MAX_TIMER_MS)
  owner.timer = null
  owner.timeUp()
}

/**
 * The deadline, in ms, that a `callTimeoutMs` value asks for; 0 for none. Unset or `<= 0` is
 * none, as upstream reads it. Upstream hands any other value to `AbortSignal.timeout`, which
 * refuses all but integers up to 2^32 - 1: such a value makes the call throw Node's own error,
 * the same here (it is that very check that throws).
 * @param {number | undefined} value
 */
function deadlineMs(value) {
  if (value === undefined || value <= 0) return 0
  if (!Number.isInteger(value) || value > UINT32_MAX) AbortSignal.timeout(value)
  return value
}

/**
 * A deadline on one call of the user's code (a model call, a tool's execute): `signal` aborts when
 * the caller's signal (`base`) does or when the subclass aborts it at the deadline; `race` settles
 * with the call, or as `fire` decides the moment the deadline passes, whether or not the user's
 * code honours its signal. The timer is ref'd on purpose: while a call is pending it is what ends
 * it, so the process must not exit before it fires; it is cleared as soon as the call settles.
 * Subclasses say what the caller's abort does to the timer (`onBaseAbort`) and what the deadline
 * does to the pending call (`fire`).
 */
class Deadline {
  /**
   * @param {number} ms
   * @param {AbortSignal | null | undefined} base
   */
  constructor(ms, base) {
    this.ms = ms
    this.base = base
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
    /** @type {(() => void) | null} */
    this.baseListener = null
    // The pending call's settle functions, until it settles or the deadline ends it.
    /** @type {Pending | null} */
    this.pending = null
    this.controller = new AbortController()
    this.signal = this.controller.signal
    if (this.baseAborted()) {
      this.controller.abort(/** @type {AbortSignal} */ (base).reason)
    } else if (listenable(base)) {
      // Bound, not an arrow assigned here: see AgentRun.begin (lib/agent.js) on storing closures.
      this.baseListener = this.baseAbortedNow.bind(this)
      base.addEventListener('abort', this.baseListener, { once: true })
    }
  }

  /** @param {number} remaining */
  arm(remaining) {
    armTimer(this, setTimeout, remaining)
  }

  /** The whole delay has passed: the pending call forgotten, then `fire`d. */
  timeUp() {
    const pending = this.pending
    this.clear()
    // Every Deadline is one of its subclasses, which define the hooks.
    // biome-ignore lint/complexity/noUselessThisAlias: the alias carries the JSDoc cast to the subclasses' hooks (a line cannot start with the cast's parenthesis: no semicolons)
    const hooks = /** @type {Deadline & DeadlineHooks} */ (/** @type {unknown} */ (this))
    hooks.fire(pending)
  }

  /** The caller's abort, as it happens: the timer told (`onBaseAbort`), the deadline's signal aborted. */
  baseAbortedNow() {
    this.baseListener = null
    // biome-ignore lint/complexity/noUselessThisAlias: as in timeUp
    const hooks = /** @type {Deadline & DeadlineHooks} */ (/** @type {unknown} */ (this))
    hooks.onBaseAbort()
    // Only listened to on a signal (the constructor).
    this.controller.abort(/** @type {AbortSignal} */ (this.base).reason)
  }

  baseAborted() {
    return this.base !== undefined && this.base !== null && this.base.aborted === true
  }

  stopTimer() {
    if (this.timer !== null) {
      clearTimeout(this.timer)
      this.timer = null
    }
  }

  /** Stops the timer and the watch on the caller's signal, and forgets the pending call (its own
   *  outcome no longer settles anything); idempotent. */
  clear() {
    this.stopTimer()
    if (this.baseListener !== null) {
      const base = /** @type {AbortSignal} */ (this.base) // listened to only on a signal
      base.removeEventListener('abort', this.baseListener)
      this.baseListener = null
    }
    this.pending = null
  }

  /**
   * Calls `start()` (the user's function, handed this deadline's signal by the caller) and settles
   * with its outcome (a failure through `failure`), unless the deadline ends the call first: a call
   * that never settles is then left behind with handlers attached, so its late outcome is never
   * unhandled.
   * @template T
   * @param {() => T | PromiseLike<T>} start
   * @param {(err: unknown) => unknown} failure
   * @returns {Promise<T>}
   */
  race(start, failure) {
    let value
    try {
      value = start()
    } catch (err) {
      this.clear()
      throw failure(err)
    }
    return new Promise((resolve, reject) => {
      /** @type {Pending} */
      const pending = { resolve: /** @type {(v: unknown) => void} */ (resolve), reject }
      this.pending = pending
      attach(
        value,
        (v) => {
          if (this.pending !== pending) return // the deadline ended the call already
          this.clear()
          resolve(v)
        },
        (err) => {
          if (this.pending !== pending) return
          this.clear()
          reject(failure(err))
        },
      )
    })
  }
}

/**
 * One model call's deadline (`callTimeoutMs`). The caller's abort stops the timer (the caller's
 * abort then decides the outcome), so nothing outlives the call.
 */
class CallDeadline extends Deadline {
  /**
   * @param {number} ms
   * @param {AbortSignal | null | undefined} base
   * @param {string | undefined} agent
   */
  constructor(ms, base, agent) {
    super(ms, base)
    this.agent = agent
    this.timedOut = false
    if (!this.signal.aborted) this.arm(ms)
  }

  onBaseAbort() {
    // The call still settles with its own outcome (an adapter that honours the abort rejects).
    this.stopTimer()
  }

  /** @param {Pending | null} pending */
  fire(pending) {
    this.timedOut = true
    if (pending !== null && !this.baseAborted()) pending.reject(this.timeoutError())
    // The same reason `AbortSignal.timeout` gives, for an adapter that reads it.
    this.controller.abort(new DOMException(TIMEOUT_REASON, 'TimeoutError'))
  }

  timeoutError() {
    return new LLMCallTimeoutError(this.ms, this.agent)
  }

  /** What a failed call throws: LLMCallTimeoutError when this deadline passed first and the
   *  caller's own signal has not fired (upstream's rule), else the call's own error.
   * @param {unknown} err */
  error(err) {
    return this.timedOut && !this.baseAborted() ? this.timeoutError() : err
  }

  /** `adapter.chat(messages, options)` with this deadline's signal in the options; rejects with
   *  LLMCallTimeoutError the moment the deadline passes.
   * @param {import('../index.js').LLMAdapter} adapter
   * @param {import('../index.js').LLMMessage[]} messages
   * @param {import('../index.js').LLMChatOptions} options
   */
  chat(adapter, messages, options) {
    return this.race(
      () => adapter.chat(messages, { ...options, abortSignal: this.signal }),
      (err) => this.error(err),
    )
  }
}

/**
 * A run's `timeoutMs` (§4.3): `signal` aborts with `AbortSignal.timeout`'s reason once `ms` pass;
 * `clear()` stops it when the run ends. Not `AbortSignal.timeout` itself: its timer cannot be
 * cleared, so every finished run's signal, and whatever listens on it, stayed reachable until the
 * timer fired (100k short runs with `timeoutMs: 60000` held 115 MB of heap: bench/README.md,
 * issue 18). The same values are refused, with Node's own error (`deadlineMs`). The timer is
 * `node:timers`' (a test's fake timers leave it alone, as they leave `AbortSignal.timeout`'s),
 * unref'd like `AbortSignal.timeout`'s, and armed in pieces beyond what Node's timers hold.
 */
class RunTimeout {
  /** @param {number} ms */
  constructor(ms) {
    deadlineMs(ms)
    this.controller = new AbortController()
    this.signal = this.controller.signal
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
    this.arm(ms)
  }

  /** @param {number} remaining */
  arm(remaining) {
    armTimer(this, timers.setTimeout, remaining)
    const timer = /** @type {NodeJS.Timeout} */ (this.timer) // armTimer has just set it
    timer.unref()
  }

  timeUp() {
    this.controller.abort(new DOMException(TIMEOUT_REASON, 'TimeoutError'))
  }

  clear() {
    if (this.timer !== null) timers.clearTimeout(this.timer)
    this.timer = null
  }
}

/**
 * A deadline for one model call under `callTimeoutMs` (`value`), or null when there is none.
 * @param {number | undefined} value
 * @param {AbortSignal | null | undefined} base
 * @param {string | undefined} agent
 */
function callDeadline(value, base, agent) {
  const ms = deadlineMs(value)
  return ms === 0 ? null : new CallDeadline(ms, base, agent)
}

/** How long an abort waits for user code that was told of it (a JS adapter or callback the
 *  runner awaits, an executor's gate or tool): code that honours the abort settles within this
 *  time with its own outcome, which is kept; past it, the code is left behind (its outcome
 *  still handled) and the wait is answered as aborted. */
const ABANDON_AFTER_MS = 100

/**
 * A pending call's settle functions.
 * @typedef {{ resolve(v: unknown): void, reject(err: unknown): void }} Pending
 */
/**
 * What each subclass of Deadline defines: what the caller's abort does to the timer, and what
 * the deadline does to the pending call.
 * @typedef {{ onBaseAbort(): void, fire(pending: Pending | null): void }} DeadlineHooks
 */

module.exports = { ABANDON_AFTER_MS, armTimer, callDeadline, Deadline, listenable, MAX_TIMER_MS, RunTimeout }
