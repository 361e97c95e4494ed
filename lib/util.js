'use strict'
const crypto = require('node:crypto')
const path = require('node:path')
const { isError } = require('./errors.js')

/** `isOwnEnumerable.call(o, key)`: whether JSON.stringify would read `o[key]` (own, enumerable). */
const isOwnEnumerable = Object.prototype.propertyIsEnumerable

/** `emitTrace` (§3.2): never throws, never awaits, swallows async rejections. */
function emitTrace(fn, event) {
  if (fn === undefined || fn === null) return
  try {
    const r = fn(event)
    if (r && typeof r.catch === 'function') r.catch(() => {})
  } catch {
    // A trace sink must never break the run.
  }
}

function generateRunId() {
  return crypto.randomUUID()
}

const DEFAULT_WORKSPACE_DIRNAME = '.agent-workspace'

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

module.exports = { isOwnEnumerable, onlyKeys, isError, emitTrace, generateRunId, defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME }
