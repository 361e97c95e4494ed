'use strict'
const crypto = require('node:crypto')
const path = require('node:path')
const { isError } = require('./errors.js')

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
 */
function attach(value, onOk, onErr) {
  try {
    return promiseThen.call(value, onOk, onErr)
  } catch {
    return promiseThen.call(Promise.resolve(value), onOk, onErr)
  }
}

/** `emitTrace` (§3.2): never throws, never awaits, swallows async rejections. */
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
      try {
        promiseThen.call(r, undefined, noop)
      } catch {
        // not a native promise: nothing can become an unhandled rejection
      }
    }
  } catch {
    // A trace sink must never break the run.
  }
}

function generateRunId() {
  return crypto.randomUUID()
}

// The kernel's (path_safety.rs), read once.
const DEFAULT_WORKSPACE_DIRNAME = require('./native.js').builtinTables().defaultWorkspaceDirname

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
 *  would list them; one builtin call). */
function onlyKeys(o, a, b) {
  const k = Object.keys(o)
  return k.length === 2 && k[0] === a && k[1] === b
}

module.exports = { isOwnEnumerable, onlyKeys, isError, attach, promiseThen, emitTrace, generateRunId, defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME }
