'use strict'
// The ShellExecutor seam (upstream 1.16): the bash tool's backstop around an executor it cannot
// trust to honour its own deadline or abort, and the run-scoped, reference-counted lifecycle of a
// configured executor (started once, on the first command of the first run using it, disposed
// after the last such run ends). JS glue: everything here awaits the user's code. The output
// layout and every text are the kernel's (crates/core/src/tool/builtin/bash.rs);
// `LocalShellExecutor`, the native shell, is in lib/builtin.js next to the bash tool.
const native = require('./native.js')
const { attach } = require('./util.js')
const { isError, safeString } = require('./errors.js')
const { listenable } = require('./deadline.js')

// The kernel's texts, read once.
const TABLES = require('./generated/boundary.js').builtin
const START_CLEANUP_FAILED = TABLES.shellStartCleanupFailed
const DISPOSE_FAILED_UNREPORTED = TABLES.shellDisposeFailedUnreported

/** How long an executor may take to return after its internal signal aborted before the
 *  backstop answers without it (upstream's EXECUTOR_BACKSTOP_GRACE_MS). */
const EXECUTOR_BACKSTOP_GRACE_MS = 100

const TIMED_OUT = TABLES.exitTimedOut
const ABORTED = TABLES.exitAborted

/** @param {number} exitCode */
function emptyResult(exitCode) {
  return { stdout: '', stderr: '', exitCode }
}

/** @param {AbortSignal | null | undefined} signal */
function aborted(signal) {
  return signal !== undefined && signal !== null && signal.aborted === true
}

/**
 * A failure as text (upstream: the error's message, or the thrown value as a string).
 * @param {unknown} error
 */
function failureText(error) {
  try {
    if (isError(error)) {
      const m = error.message
      return typeof m === 'string' ? m : safeString(m)
    }
  } catch {
    // a throwing message getter: described as a value below
  }
  return safeString(error)
}

/**
 * An `exec` result read once into a plain object of this realm: `{ stdout, stderr, exitCode }`,
 * or a TypeError with the kernel's text naming what is wrong (bash then reports it as a start
 * failure, 127, as it does any other exec failure).
 * @param {unknown} r what the user's executor gave
 */
function shellResult(r) {
  if (r === null || (typeof r !== 'object' && typeof r !== 'function')) {
    throw new TypeError(native.builtinShellInvalidResult(null, r === null ? 'null' : typeof r))
  }
  const read = /** @type {{ stdout?: unknown, stderr?: unknown, exitCode?: unknown }} */ (r)
  const stdout = read.stdout
  const stderr = read.stderr
  const exitCode = read.exitCode
  if (typeof stdout !== 'string') throw new TypeError(native.builtinShellInvalidResult('stdout', typeof stdout))
  if (typeof stderr !== 'string') throw new TypeError(native.builtinShellInvalidResult('stderr', typeof stderr))
  if (typeof exitCode !== 'number') throw new TypeError(native.builtinShellInvalidResult('exitCode', typeof exitCode))
  return { stdout, stderr, exitCode }
}

/**
 * `executor.exec(command, …)` bounded even when the executor ignores its deadline or its signal
 * (upstream's executeWithBackstop). The executor gets a fresh internal signal; the wrapper's own
 * timer (`delay`, the bash input's timeout as Node's timers read it) or the caller's abort aborts
 * it, and the executor then has EXECUTOR_BACKSTOP_GRACE_MS to return what it captured, with the
 * exit code forced to 124 (timeout) or 130 (abort); past the grace, or if it rejects after the
 * termination, the result is empty with that code. A rejection before any termination rejects
 * (bash reports it as 127). `options`: `{ cwd, timeoutMs, sandboxRoot }`, handed over as they are.
 * @param {import('../index.js').ShellExecutor} executor
 * @param {string} command
 * @param {import('../index.js').ShellExecOptions} options
 * @param {AbortSignal | undefined} signal
 * @param {number} delay
 * @returns {Promise<{ stdout: string, stderr: string, exitCode: number }>}
 */
async function executeWithBackstop(executor, command, options, signal, delay) {
  if (aborted(signal)) return emptyResult(ABORTED)
  const commandAbort = new AbortController()
  let termination = 0 // the forced exit code once terminated
  /** @type {NodeJS.Timeout | null} */
  let graceTimer = null
  /** @type {(value: null) => void} */
  let resolveBackstop
  /** @type {Promise<null>} */
  const backstop = new Promise((resolve) => {
    resolveBackstop = resolve
  })
  const terminate = (/** @type {number} */ code) => {
    if (termination !== 0) return
    termination = code
    commandAbort.abort()
    graceTimer = setTimeout(() => resolveBackstop(null), EXECUTOR_BACKSTOP_GRACE_MS)
  }
  const onAbort = () => terminate(ABORTED)
  const listening = listenable(signal)
  if (listening) signal.addEventListener('abort', onAbort, { once: true })
  /** @type {NodeJS.Timeout | null} */
  let timer = null
  try {
    // Invoked before the wrapper's timer is armed, as upstream: an executor's own deadline is
    // registered first and so gets to report first.
    const value = executor.exec(command, {
      cwd: options.cwd,
      timeoutMs: options.timeoutMs,
      abortSignal: commandAbort.signal,
      sandboxRoot: options.sandboxRoot,
    })
    const execution = attach(
      value,
      (result) => ({ result }),
      (error) => {
        // Cancellation is authoritative: an executor that rejects because it was terminated
        // still gives the conventional code.
        if (termination !== 0) return { result: emptyResult(termination) }
        throw error
      },
    )
    if (aborted(signal)) terminate(ABORTED)
    timer = setTimeout(() => terminate(TIMED_OUT), delay)
    const outcome = await Promise.race([execution, backstop])
    if (outcome === null) return emptyResult(termination)
    if (termination === 0) return shellResult(outcome.result)
    let kept
    try {
      kept = shellResult(outcome.result)
    } catch {
      // Nothing readable came back after the termination: as if it had rejected.
      return emptyResult(termination)
    }
    kept.exitCode = termination
    return kept
  } catch (error) {
    // exec threw before returning a promise: cancellation still decides the code.
    if (termination !== 0) return emptyResult(termination)
    throw error
  } finally {
    if (timer !== null) clearTimeout(timer)
    if (graceTimer !== null) clearTimeout(graceTimer)
    if (listening) signal.removeEventListener('abort', onAbort)
  }
}

/**
 * `executor[name]()` when the executor has that method (`executor.start?.()`).
 * @param {import('../index.js').ShellExecutor} executor
 * @param {'start' | 'dispose'} name
 */
function callOptional(executor, name) {
  const f = executor[name]
  if (f === undefined || f === null) return undefined
  return f.call(executor)
}

/**
 * One executor's start/dispose window, shared by every run that holds a lease on it. The first
 * lease starts it; the last release disposes it (also after a failed start: a remote session may
 * exist even though `start` rejected). `transition` serialises the two, so a run that arrives
 * while the previous dispose is settling waits for it and then starts a fresh session.
 */
class ExecutorLifecycle {
  /** @param {import('../index.js').ShellExecutor} executor */
  constructor(executor) {
    this.executor = executor
    this.leases = 0
    this.started = false
    /** @type {Promise<void>} */
    this.transition = Promise.resolve()
  }

  /** @returns {Promise<Lease>} */
  async acquire() {
    this.leases++
    if (this.leases === 1) {
      // A failed dispose was reported to the run that released last; the next run starts afresh.
      this.transition = this.transition
        .catch(() => undefined)
        .then(async () => {
          await callOptional(this.executor, 'start')
          this.started = true
        })
    }
    try {
      await this.transition
    } catch (startError) {
      try {
        await this.releaseLease(true)
      } catch (cleanupError) {
        throw new AggregateError([startError, cleanupError], START_CLEANUP_FAILED)
      }
      throw startError
    }
    let released = false
    return {
      release: async () => {
        if (released) return
        released = true
        await this.releaseLease(false)
      },
    }
  }

  /** @param {boolean} startFailed */
  async releaseLease(startFailed) {
    this.leases--
    if (this.leases > 0) return
    const shouldDispose = this.started || startFailed
    this.transition = this.transition
      .catch(() => undefined)
      .then(async () => {
        this.started = false
        if (shouldDispose) await callOptional(this.executor, 'dispose')
      })
    await this.transition
  }
}

/**
 * A run's hold on an executor's window.
 * @typedef {{ release(): Promise<void> }} Lease
 */

/** One lifecycle per executor instance. @type {WeakMap<import('../index.js').ShellExecutor, ExecutorLifecycle>} */
const lifecycles = new WeakMap()

/**
 * A lease on `executor`'s shared window: resolves once it is started, with `{ release() }`.
 * @param {import('../index.js').ShellExecutor} executor
 */
function acquireShellExecutor(executor) {
  let lifecycle = lifecycles.get(executor)
  if (lifecycle === undefined) {
    lifecycle = new ExecutorLifecycle(executor)
    lifecycles.set(executor, lifecycle)
  }
  return lifecycle.acquire()
}

/**
 * What a run's tools see as `context.shellExecutor`: the configured executor, leased on the first
 * command of the run (so `start` comes after the grant check and the onToolCall gate, and a run
 * that never runs a command never starts a session) and released when the run ends. Parallel
 * bash calls of one turn share the lease. A command whose signal fired before, or while, the
 * lease was being acquired is never dispatched (130).
 */
class RunScopedShellExecutor {
  /** @param {import('../index.js').ShellExecutor} executor */
  constructor(executor) {
    this.executor = executor
    /** @type {Promise<Lease> | undefined} */
    this.leasePromise = undefined
  }

  /**
   * @param {string} command
   * @param {import('../index.js').ShellExecOptions} options
   */
  async exec(command, options) {
    if (aborted(options.abortSignal)) return emptyResult(ABORTED)
    if (this.leasePromise === undefined) this.leasePromise = acquireShellExecutor(this.executor)
    await this.leasePromise
    if (aborted(options.abortSignal)) return emptyResult(ABORTED)
    return this.executor.exec(command, options)
  }

  /** Releases the run's lease, if a command took one. A failed start was already reported in
   *  that command's result: it does not fail the run a second time. A failed dispose rejects. */
  async release() {
    const pending = this.leasePromise
    if (pending === undefined) return
    let lease
    try {
      lease = await pending
    } catch {
      return
    }
    await lease.release()
  }
}

/**
 * Releases a run's lease where a failed dispose can no longer fail the run (the run already
 * failed with its own error, or its stream was stopped or dropped by the consumer): the failure
 * becomes a process warning, never an unhandled rejection.
 * @param {RunScopedShellExecutor} shell
 */
async function releaseUnreported(shell) {
  try {
    await shell.release()
  } catch (error) {
    warnUnreported(error)
  }
}

/**
 * A release failure no run can report any more, as a process warning.
 * @param {unknown} error
 */
function warnUnreported(error) {
  process.emitWarning(DISPOSE_FAILED_UNREPORTED + failureText(error))
}

module.exports = {
  executeWithBackstop,
  shellResult,
  failureText,
  acquireShellExecutor,
  RunScopedShellExecutor,
  releaseUnreported,
  warnUnreported,
  EXECUTOR_BACKSTOP_GRACE_MS,
}
