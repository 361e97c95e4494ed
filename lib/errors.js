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

/** `err` as an Error of this realm (the contract's `new Error(String(x))` for non-Errors). */
function toError(err) {
  if (err instanceof Error) return err
  if (err && typeof err === 'object' && typeof err.message === 'string' && typeof err.stack === 'string') {
    // An Error from another realm (e.g. the addon's): keep its message and name.
    const e = new Error(err.message)
    e.name = err.name
    return e
  }
  return new Error(String(err))
}

module.exports = { TokenBudgetExceededError, InvalidMessageError, toError }
