'use strict'
const boundary = require('./generated/boundary.js')
// Error classes are created here, in JS, so that `instanceof` works in the caller's realm
// (Jest's sandbox included): objects made by the addon belong to Node's main realm.

class TokenBudgetExceededError extends Error {
  /**
   * @param {string} agent
   * @param {number} tokensUsed
   * @param {number} budget
   */
  constructor(agent, tokensUsed, budget) {
    super(boundary.runner.tokenBudgetExceeded(agent, tokensUsed, budget))
    this.code = boundary.runner.tokenBudgetExceededCode
    this.name = 'TokenBudgetExceededError'
    this.agent = agent
    this.tokensUsed = tokensUsed
    this.budget = budget
  }
}

class InvalidMessageError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message)
    this.code = boundary.runner.messageValidation.code
    this.name = 'InvalidMessageError'
  }
}

/** One model call outlived `callTimeoutMs` (upstream 1.9: name, code, fields and texts are
 *  upstream's). Raised only when the per-call deadline fired and the caller's signal did not. */
class LLMCallTimeoutError extends Error {
  /**
   * @param {number} timeoutMs
   * @param {string} [agent]
   */
  constructor(timeoutMs, agent) {
    super(agent !== undefined ? boundary.llm.callTimeoutAgent(agent, timeoutMs) : boundary.llm.callTimeout(timeoutMs))
    this.code = boundary.llm.callTimeoutCode
    this.name = 'LLMCallTimeoutError'
    this.timeoutMs = timeoutMs
    this.agent = agent
  }
}

/** `EgressPolicyError.code` by reason (the table is the kernel's, crates/llm/src/egress.rs). */
const EGRESS_CODES = new Map(Object.entries(boundary.llm.egressCodes))

/** A framework-owned LLM request refused by an egress policy, or a policy that is invalid or
 *  cannot be enforced (upstream 1.16: the constructor, fields and codes are upstream's; any
 *  other reason gets the `unsupported` code, as there). */
class EgressPolicyError extends Error {
  /**
   * @param {import('../index.js').EgressPolicyErrorReason} reason
   * @param {string} message
   * @param {string} [provider]
   * @param {string} [origin]
   */
  constructor(reason, message, provider, origin) {
    super(message)
    this.reason = reason
    this.provider = provider
    this.origin = origin
    this.name = 'EgressPolicyError'
    this.code = EGRESS_CODES.get(reason) ?? EGRESS_CODES.get('unsupported')
  }
}

// Errors a retry cannot help (upstream's isRetryableError): a spent budget, a malformed message,
// a refused or invalid egress policy.
const TERMINAL = [TokenBudgetExceededError, InvalidMessageError, EgressPolicyError]
// HTTP statuses of a 4xx error that another attempt may still get past.
const RETRYABLE_4XX = boundary.llm.retryable4xx

/** A caller's cancellation (upstream's isCancellationError): an `AbortError`, or the OpenAI SDK's
 *  `APIUserAbortError`, whose `name` is plain `Error`.
 * @param {unknown} error */
function isCancellationError(error) {
  if (!isError(error)) return false
  try {
    return error.name === 'AbortError' || error.constructor.name === 'APIUserAbortError'
  } catch {
    return false
  }
}

/**
 * The HTTP status an error carries (`status`, else `statusCode`), if it is a finite number.
 * @param {unknown} error
 */
function statusOf(error) {
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return undefined
  try {
    const e = /** @type {{ status?: unknown, statusCode?: unknown }} */ (error)
    const status = e.status ?? e.statusCode
    return typeof status === 'number' && Number.isFinite(status) ? status : undefined
  } catch {
    return undefined
  }
}

/**
 * Upstream's `isRetryableError` (1.9, with 1.16's cancellation rule): true unless `error` is
 * provably terminal. Terminal: the classes in TERMINAL, a cancellation, and a 4xx status other
 * than 408/409/429. A per-call timeout, an error without a status (a network failure) and a 5xx
 * are retryable.
 * @param {unknown} error
 */
function isRetryableError(error) {
  for (const Terminal of TERMINAL) if (error instanceof Terminal) return false
  if (error instanceof LLMCallTimeoutError) return true
  if (isCancellationError(error)) return false
  const status = statusOf(error)
  if (status === undefined) return true
  if (RETRYABLE_4XX.includes(status)) return true
  return !(status >= 400 && status < 500)
}

/** An Error from any realm (the addon's included) is still an Error. Never throws: a revoked
 *  Proxy (whose prototype and tag cannot be read) is not an Error.
 * @param {unknown} x
 * @returns {x is Error} */
function isError(x) {
  try {
    return x instanceof Error || Object.prototype.toString.call(x) === '[object Error]'
  } catch {
    return false
  }
}

/** `String(x)` for anything a user's code may throw or return: never throws. A value whose
 *  conversion itself throws (a revoked Proxy, a throwing `toString`, a Symbol-only object)
 *  is described by its type instead.
 * @param {unknown} x */
function safeString(x) {
  try {
    return String(x)
  } catch {
    // fall through
  }
  try {
    return Object.prototype.toString.call(x)
  } catch {
    // A revoked Proxy cannot even be tagged.
  }
  return boundary.runner.unconvertibleValue(typeof x)
}

/**
 * `err` as an Error of this realm: Errors are kept, one from another realm (the addon's) is
 * copied (message and name) so `instanceof Error` holds in the caller's realm, anything else
 * becomes the contract's `new Error(String(x))`.
 * @param {unknown} err
 * @returns {Error}
 */
function toError(err) {
  try {
    if (err instanceof Error) return err
  } catch {
    // a revoked Proxy: below
  }
  if (isError(err)) {
    try {
      const e = new Error(err.message)
      e.name = err.name
      return e
    } catch {
      // throwing getters: described below
    }
  }
  return new Error(safeString(err))
}

module.exports = {
  TokenBudgetExceededError,
  InvalidMessageError,
  LLMCallTimeoutError,
  EgressPolicyError,
  isRetryableError,
  toError,
  isError,
  safeString,
}
