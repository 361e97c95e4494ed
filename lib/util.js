'use strict'
const crypto = require('node:crypto')
const path = require('node:path')
const { isError } = require('./errors.js')

/**
 * An object of the user's (or parsed JSON) whose fields are read one by one and checked where
 * they are read: each is `unknown` until then.
 * @typedef {{ [key: string]: unknown }} Fields
 */
/**
 * Any value that is not an object: what may come where `Fields` are read, and is checked first.
 * @typedef {string | number | boolean | bigint | symbol | null | undefined | Function} UncheckedValue
 */

/** `isOwnEnumerable.call(o, key)`: whether JSON.stringify would read `o[key]` (own, enumerable). */
const isOwnEnumerable = Object.prototype.propertyIsEnumerable

// Promise.prototype.then as loaded: called as `promiseThen.call(p, …)` rather than `p.then(…)`.
// A property lookup of `then` in optimised code depends on the engine's promise-then protector,
// which code elsewhere in the process may invalidate (spawning a child process did), deoptimising
// every such function at once (measured: the whole run loop, recompiled in W1's window).
const promiseThen = Promise.prototype.then
function noop() {}

/**
 * `onOk` / `onErr` attached to the outcome of `value` (what a user's function returned) with the
 * engine's own `then`, so that a promise's rejection is always handled: a native promise (of
 * any realm) may have its `then` or `catch` property replaced or throwing, which a method call
 * would trust. Anything else is taken as `await` takes it.
 * @template T, R
 * @param {T | PromiseLike<T>} value
 * @param {((v: T) => R | PromiseLike<R>) | undefined} onOk
 * @param {(err: unknown) => R | PromiseLike<R>} onErr
 * @returns {Promise<R>}
 */
function attach(value, onOk, onErr) {
  try {
    // Not always a native promise: the engine's then throws for anything else, caught below.
    return /** @type {Promise<R>} */ (promiseThen.call(/** @type {Promise<T>} */ (value), onOk, onErr))
  } catch {
    return /** @type {Promise<R>} */ (promiseThen.call(Promise.resolve(value), onOk, onErr))
  }
}

/**
 * What a callback the run calls and does not await returned (onMessage, the onToolCall
 * notification, onToolResult, onWarning, a trace sink): a native promise's rejection is dropped
 * with the engine's own then, as emitTrace drops a trace sink's. Nobody could handle it, and
 * unhandled it ends a Node process by default (issue 30). Anything else is left alone: a
 * thenable's own `then` is not called, and only a native promise can become an unhandled
 * rejection.
 * @param {unknown} r
 */
function dropRejection(r) {
  if (r === null || (typeof r !== 'object' && typeof r !== 'function')) return
  try {
    // Not always a native promise: the engine's then throws for anything else, caught below.
    promiseThen.call(/** @type {Promise<unknown>} */ (r), undefined, noop)
  } catch {
    // not a native promise
  }
}

/**
 * `emitTrace` (§3.2): never throws, never awaits, swallows async rejections.
 * @param {((event: import('../index.js').TraceEvent) => void | Promise<void>) | undefined | null} fn
 * @param {import('../index.js').TraceEvent} event
 */
function emitTrace(fn, event) {
  if (fn === undefined || fn === null) return
  try {
    const r = fn(event)
    if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
      // The original's `result.catch(() => {})` (observable: spies count it)…
      try {
        if (typeof r.catch === 'function') r.catch(noop)
      } catch {
        // a throwing catch getter or method: the line below still handles a promise
      }
      // …and the engine's own then for a native promise whose `catch` was replaced or lies.
      dropRejection(r)
    }
  } catch {
    // A trace sink must never break the run.
  }
}

function generateRunId() {
  return crypto.randomUUID()
}

// The kernel's (path_safety.rs), read once.
const DEFAULT_WORKSPACE_DIRNAME = require('./generated/boundary.js').builtin.defaultWorkspaceDirname

let lastCwd = ''
let lastWorkspace = ''
/** Follows the process cwd at call time (tests and users chdir); resolved once per cwd. */
function defaultWorkspaceDir() {
  const cwd = process.cwd()
  if (cwd !== lastCwd) {
    lastWorkspace = path.resolve(cwd, DEFAULT_WORKSPACE_DIRNAME)
    lastCwd = cwd
  }
  return lastWorkspace
}

/** Whether `o`'s own enumerable keys are exactly `a`, `b` in that order (as JSON.stringify
 *  would list them; one builtin call).
 * @param {object} o
 * @param {string} a
 * @param {string} b
 */
function onlyKeys(o, a, b) {
  const k = Object.keys(o)
  return k.length === 2 && k[0] === a && k[1] === b
}

// The exact prototypes whose instances copyInput copies (a subclass' instance is shared).
const DATE_PROTO = Date.prototype
const MAP_PROTO = Map.prototype
const SET_PROTO = Set.prototype
const dateTime = Date.prototype.getTime

/**
 * A deep copy of a tool call's input that shares nothing mutable with it (issue 30: what an
 * onToolCall gate approves must be what runs, whoever else holds the input). Copied: arrays
 * (their elements), plain objects (own enumerable string keys, each read once, as data
 * properties, with the object's own prototype: null or any realm's Object.prototype), Dates,
 * Maps and Sets (exactly those, not subclasses). Anything else (functions, class instances,
 * typed arrays, symbol-keyed properties) is taken as it is: a JSON input, what a model sends,
 * is copied whole. Iterative (no depth limit from the stack) and by identity (a cycle or a
 * shared member stays one in the copy). Throws what reading the input throws.
 * @template T
 * @param {T} value
 * @returns {T}
 */
function copyInput(value) {
  if (value === null || typeof value !== 'object') return value
  /** @type {Map<object, object>} */
  const copies = new Map()
  /** @type {Fillable[]} */
  const stack = []
  const root = /** @type {T} */ (copyShell(value, copies, stack))
  while (stack.length > 0) {
    // Pushed in pairs (copyShell): the copy on top, the original under it, of the same kind.
    const to = /** @type {Fillable} */ (stack.pop())
    const from = /** @type {Fillable} */ (stack.pop())
    if (Array.isArray(from)) {
      const n = from.length
      for (let i = 0; i < n; i++) to[i] = copyMember(from[i], copies, stack)
    } else if (to instanceof Map) {
      for (const [k, v] of Map.prototype.entries.call(/** @type {Map<unknown, unknown>} */ (/** @type {unknown} */ (from))))
        to.set(copyMember(k, copies, stack), copyMember(v, copies, stack))
    } else if (to instanceof Set) {
      for (const v of Set.prototype.values.call(/** @type {Set<unknown>} */ (/** @type {unknown} */ (from)))) to.add(copyMember(v, copies, stack))
    } else {
      const keys = Object.keys(from)
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]
        const v = copyMember(from[k], copies, stack)
        // An own "__proto__" (JSON.parse makes one) stays a property, not the copy's prototype.
        if (k === '__proto__') Object.defineProperty(to, k, { value: v, writable: true, enumerable: true, configurable: true })
        else to[k] = v
      }
    }
  }
  return root
}

/**
 * An object copyInput fills (an array, a plain object, a Map or a Set), or its original.
 * @typedef {Record<string | number, unknown>} Fillable
 */

/**
 * @param {unknown} v
 * @param {Map<object, object>} copies
 * @param {Fillable[]} stack
 * @returns {unknown}
 */
function copyMember(v, copies, stack) {
  if (v === null || typeof v !== 'object') return v
  const seen = copies.get(v)
  return seen === undefined ? copyShell(v, copies, stack) : seen
}

/**
 * The copy of object `v`, still empty when it has members: `v` and it are pushed for filling.
 * @param {object} v
 * @param {Map<object, object>} copies
 * @param {Fillable[]} stack
 * @returns {object}
 */
function copyShell(v, copies, stack) {
  /** @type {object} */
  let to
  if (Array.isArray(v)) to = []
  else {
    const proto = Object.getPrototypeOf(v)
    if (proto === DATE_PROTO) to = new Date(dateTime.call(v))
    else if (proto === MAP_PROTO) to = new Map()
    else if (proto === SET_PROTO) to = new Set()
    else if (proto === null) to = Object.create(null)
    else if (Object.getPrototypeOf(proto) === null) to = proto === Object.prototype ? {} : Object.create(proto)
    else {
      copies.set(v, v)
      return v
    }
  }
  copies.set(v, to)
  if (!(to instanceof Date)) stack.push(/** @type {Fillable} */ (v), /** @type {Fillable} */ (to))
  return to
}

module.exports = {
  copyInput,
  isOwnEnumerable,
  onlyKeys,
  isError,
  attach,
  dropRejection,
  promiseThen,
  emitTrace,
  generateRunId,
  defaultWorkspaceDir,
  DEFAULT_WORKSPACE_DIRNAME,
}
