'use strict'
const crypto = require('node:crypto')
const path = require('node:path')

/** An Error from any realm (the addon's included) is still an Error. */
function isError(x) {
  return x instanceof Error || Object.prototype.toString.call(x) === '[object Error]'
}

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

/** Read at call time: tests and users change the process cwd. */
function defaultWorkspaceDir() {
  return path.resolve(process.cwd(), DEFAULT_WORKSPACE_DIRNAME)
}

module.exports = { isError, emitTrace, generateRunId, defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME }
