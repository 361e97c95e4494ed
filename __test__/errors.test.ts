// Error classes (CONTRACT §2) and the budget error as the runner emits it (§5.5 step 8).
import { Agent, InvalidMessageError, TokenBudgetExceededError, ToolExecutor, ToolRegistry } from '../index'
import { MockAdapter, textReply, usage } from './helpers/mock-adapter'

/** The code and the three fields a budget error carries, built by hand or by the runner. */
function expectBudgetFields(e: TokenBudgetExceededError, agent: string, tokensUsed: number, budget: number) {
  expect(e.code).toBe('TOKEN_BUDGET_EXCEEDED')
  expect(e.agent).toBe(agent)
  expect(e.tokensUsed).toBe(tokensUsed)
  expect(e.budget).toBe(budget)
}

describe('TokenBudgetExceededError', () => {
  const err = new TokenBudgetExceededError('planner', 1500, 1000)

  test('message', () => {
    expect(err.message).toBe('Agent "planner" exceeded token budget: 1500 tokens used (budget: 1000)')
  })

  test('code, name and fields', () => {
    expectBudgetFields(err, 'planner', 1500, 1000)
    expect(err.name).toBe('TokenBudgetExceededError')
  })

  test('instanceof its own class and Error; has a stack; String() uses name and message', () => {
    expect(err).toBeInstanceOf(TokenBudgetExceededError)
    expect(err).toBeInstanceOf(Error)
    expect(err instanceof InvalidMessageError).toBe(false)
    expect(typeof err.stack).toBe('string')
    expect(String(err)).toBe('TokenBudgetExceededError: Agent "planner" exceeded token budget: 1500 tokens used (budget: 1000)')
  })

  test('numbers are printed the JS way', () => {
    expect(new TokenBudgetExceededError('a', 10.5, 1e21).message).toBe(
      'Agent "a" exceeded token budget: 10.5 tokens used (budget: 1e+21)',
    )
  })

  test('can be thrown and caught as an Error', () => {
    expect(() => {
      throw new TokenBudgetExceededError('x', 2, 1)
    }).toThrow(TokenBudgetExceededError)
  })

  test('the runner emits one in the budget_exceeded stream event (agent name, total, budget)', async () => {
    const registry = new ToolRegistry()
    const agent = new Agent(
      { name: 'budgeted', model: 'm', adapter: new MockAdapter([textReply('over', usage(8, 4))]), maxTokenBudget: 10 },
      registry,
      new ToolExecutor(registry),
    )
    const events: Array<{ type: string; data: unknown }> = []
    for await (const e of agent.stream('x')) events.push(e)
    expect(events.map((e) => e.type)).toStrictEqual(['text', 'budget_exceeded', 'done'])
    const data = events[1].data as TokenBudgetExceededError
    expect(data).toBeInstanceOf(TokenBudgetExceededError)
    expect(data).toBeInstanceOf(Error)
    expect(data.message).toBe('Agent "budgeted" exceeded token budget: 12 tokens used (budget: 10)')
    expectBudgetFields(data, 'budgeted', 12, 10)
  })
})

describe('InvalidMessageError', () => {
  const err = new InvalidMessageError('messages[0] is malformed')

  test('message, code, name', () => {
    expect(err.message).toBe('messages[0] is malformed')
    expect(err.code).toBe('INVALID_MESSAGE')
    expect(err.name).toBe('InvalidMessageError')
  })

  test('instanceof its own class and Error', () => {
    expect(err).toBeInstanceOf(InvalidMessageError)
    expect(err).toBeInstanceOf(Error)
    expect(err instanceof TokenBudgetExceededError).toBe(false)
    expect(String(err)).toBe('InvalidMessageError: messages[0] is malformed')
  })
})
