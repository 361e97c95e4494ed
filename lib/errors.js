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

/** An Error from any realm (the addon's included) is still an Error. */
function isError(x) {
  return x instanceof Error || Object.prototype.toString.call(x) === '[object Error]'
}

/**
 * `err` as an Error of this realm: Errors are kept, one from another realm (the addon's) is
 * copied (message and name) so `instanceof Error` holds in the caller's realm, anything else
 * becomes the contract's `new Error(String(x))`.
 */
function toError(err) {
  if (err instanceof Error) return err
  if (isError(err)) {
    const e = new Error(err.message)
    e.name = err.name
    return e
  }
  return new Error(String(err))
}

module.exports = { TokenBudgetExceededError, InvalidMessageError, toError, isError }
