'use strict'
// Error classes are created here, in JS, so that `instanceof` works in the caller's realm
// (Jest's sandbox included): objects made by the addon belong to Node's main realm.

class TokenBudgetExceededError extends Error {
  constructor(agent, tokensUsed, budget) {
    super(`Agent "${agent}" exceeded token budget: ${tokensUsed} tokens used (budget: ${budget})`)
    this.code = 'TOKEN_BUDGET_EXCEEDED'
    this.name = 'TokenBudgetExceededError'
    this.agent = agent
    this.tokensUsed = tokensUsed
    this.budget = budget
  }
}

class InvalidMessageError extends Error {
  constructor(message) {
    super(message)
    this.code = 'INVALID_MESSAGE'
    this.name = 'InvalidMessageError'
  }
}

/** An Error from any realm (the addon's included) is still an Error. Never throws: a revoked
 *  Proxy (whose prototype and tag cannot be read) is not an Error. */
function isError(x) {
  try {
    return x instanceof Error || Object.prototype.toString.call(x) === '[object Error]'
  } catch {
    return false
  }
}

/** `String(x)` for anything a user's code may throw or return: never throws. A value whose
 *  conversion itself throws (a revoked Proxy, a throwing `toString`, a Symbol-only object)
 *  is described by its type instead. */
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
  return `[${typeof x} that cannot be converted to text]`
}

/**
 * `err` as an Error of this realm: Errors are kept, one from another realm (the addon's) is
 * copied (message and name) so `instanceof Error` holds in the caller's realm, anything else
 * becomes the contract's `new Error(String(x))`.
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

module.exports = { TokenBudgetExceededError, InvalidMessageError, toError, isError, safeString }
