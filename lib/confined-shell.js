'use strict'
// ConfinedShellExecutor (issue 14): bash under Landlock, seccomp and resource limits, behind the
// ShellExecutor seam. JS glue only: the option checks, the policy, the private dirs, where a command
// runs and every text are the kernel's (crates/core/src/tool/builtin/confined.rs over
// crates/confine); this file describes the options for the check, wires the AbortSignal to a
// cancel handle, tracks the commands in flight for dispose(), and warns once.
const native = require('./native.js')
const boundary = require('./generated/boundary.js')
// The shell's exit code for an aborted command, the kernel's (bash.rs).
const EXIT_ABORTED = boundary.builtin.exitAborted
const DESCRIBED = boundary.confined.described
const { hostEnv, timerDelay } = require('./builtin.js')

/** A JS value as the kernel's option check reads it: a record of its kind (the generated
 *  encoders), so `undefined`, NaN, functions… keep their identity through JSON.
 * @param {unknown} v
 * @returns {unknown[]} */
function describe(v) {
  if (v === null) return DESCRIBED.null()
  if (Array.isArray(v)) return DESCRIBED.array(v.map(describe))
  switch (typeof v) {
    case 'number':
      return DESCRIBED.number(Number.isFinite(v) ? v : String(v))
    case 'string':
      return DESCRIBED.string(v)
    case 'boolean':
      return DESCRIBED.boolean(v)
    case 'object': {
      /** @type {Record<string, unknown[]>} */
      const fields = {}
      for (const k of Object.keys(v)) fields[k] = describe(/** @type {Record<string, unknown>} */ (v)[k])
      return DESCRIBED.object(fields)
    }
    case 'undefined':
      return DESCRIBED.undefined()
    case 'function':
      return DESCRIBED.function()
    case 'symbol':
      return DESCRIBED.symbol()
    default:
      return DESCRIBED.bigint()
  }
}

/** @param {AbortSignal | undefined} signal */
function aborted(signal) {
  return signal !== undefined && signal !== null && signal.aborted === true
}

/**
 * A command in flight: its cancel handle, and its end (either way), which dispose() awaits.
 * @typedef {{ handle: import('../binding').CancelHandle, done: Promise<void> | null }} InFlight
 */

/**
 * A ShellExecutor whose commands run confined (Linux): they may write only in the agent's
 * sandbox root (`sandboxRoot`, which bash sets from the tool context's cwd) and that root's
 * private dir (HOME, TMPDIR), read only the system's read-only locations plus the root, reach no network unless
 * `network: 'allow'`, and cannot signal, trace or read the environment of processes outside.
 * The command runs in the sandbox root; `cwd` may only name a directory inside it.
 */
class ConfinedShellExecutor {
  /** @type {string} */
  #described
  /** @type {import('../binding').ConfinedShell | null} */
  #shell = null
  /** @type {Set<InFlight>} */
  #inflight = new Set()
  #warned = false

  /** @param {import('../index.js').ConfinedShellExecutorOptions} [options] */
  constructor(options) {
    const described = JSON.stringify(describe(options))
    const bad = native.confinedShellCheck(described)
    if (bad !== null) throw bad[0] === 'RangeError' ? new RangeError(bad[1]) : new TypeError(bad[1])
    this.#described = described
  }

  /** Creates the directory of the private dirs; refuses on a platform without the confinement. */
  async start() {
    if (this.#shell === null) this.#shell = new native.ConfinedShell(this.#described)
  }

  /**
   * @param {string} command
   * @param {import('../index.js').ShellExecOptions} options
   * @returns {Promise<import('../index.js').ConfinedShellExecResult | import('../index.js').ShellExecResult>}
   *   (an already aborted command, which never started, has no `confinement`)
   */
  async exec(command, options) {
    const signal = options ? options.abortSignal : undefined
    if (aborted(signal)) return { stdout: '', stderr: '', exitCode: EXIT_ABORTED }
    // Used directly (not through an agent's lifecycle): started on first use.
    if (this.#shell === null) this.#shell = new native.ConfinedShell(this.#described)
    const handle = new native.CancelHandle()
    const onAbort = () => handle.cancel()
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
    /** @type {InFlight} */
    const entry = { handle, done: null }
    const run = this.#shell.exec(command, timerDelay(options.timeoutMs), options.cwd ?? null, options.sandboxRoot ?? null, process.cwd(), hostEnv(), handle)
    entry.done = run.then(
      () => {},
      () => {},
    )
    this.#inflight.add(entry)
    let r
    try {
      r = await run
    } finally {
      this.#inflight.delete(entry)
      if (signal) signal.removeEventListener('abort', onAbort)
    }
    const missing = [...r.missing]
    if (missing.length > 0 && !this.#warned) {
      this.#warned = true
      console.warn(native.confinedShellWarning(missing))
    }
    return {
      stdout: r.stdout,
      stderr: r.stderr,
      exitCode: r.exitCode,
      confinement: { enforced: missing.length === 0, missing, landlockAbi: r.landlockAbi },
    }
  }

  /** Ends the commands still running (their whole trees) and removes every private dir. */
  async dispose() {
    const shell = this.#shell
    this.#shell = null
    const running = [...this.#inflight]
    for (const e of running) e.handle.cancel()
    await Promise.all(running.map((e) => e.done))
    if (shell !== null) shell.dispose()
  }

  /** What this host offers: `{ platform, landlockAbi, requiredLandlockAbi }` (0: no Landlock). */
  static probe() {
    const p = native.confinedShellProbe()
    return { platform: p.platform, landlockAbi: p.landlockAbi, requiredLandlockAbi: p.requiredLandlockAbi }
  }
}

module.exports = { ConfinedShellExecutor }
