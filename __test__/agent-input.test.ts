// Richer inputs (issue 15 point 4, upstream 1.15): run()/stream() over a caller's LLMMessage[],
// prompt() with content blocks, AgentConfig.history, InvalidMessageError's texts, and beforeRun's
// `messages` (in the context, and returned) with upstream's prompt rewrite.
import { Agent, InvalidMessageError, ToolExecutor, ToolRegistry, isRetryableError } from '../index'
// eslint-disable-next-line @typescript-eslint/no-require-imports
const errors = require('../lib/errors.js')
import type {
  AgentConfig, AgentPromptInput, AgentRunInput, BeforeRunHookContext, BeforeRunHookResult, ContentBlock, LLMMessage, StreamEvent,
} from '../index'
import { MockAdapter, agentSetup, assistantText, echoTool, textReply, toolReply, userText, FAILED } from './helpers/mock-adapter'
import { eachServer, isolateEnv } from './llm-server'

const setup = (config: Partial<AgentConfig> = {}, adapter?: MockAdapter) => agentSetup('inputs', config, adapter)

const IMG: ContentBlock = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } }
const IMG2: ContentBlock = { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } }

/** A multi-turn conversation with a tool round and an image, ending on a user message. */
function conversation(): LLMMessage[] {
  return [
    { role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, IMG] },
    { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'tu_1', name: 'echo', input: { text: 'cat' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'echo:cat', is_error: false }] },
    { role: 'assistant', content: [{ type: 'text', text: 'A cat.' }] },
    { role: 'user', content: [{ type: 'text', text: 'And this one?' }, IMG2] },
  ]
}

/** The error `p` rejects with (the test fails if it resolves). */
async function rejection(p: Promise<unknown>): Promise<InvalidMessageError> {
  try {
    await p
  } catch (e) {
    return e as InvalidMessageError
  }
  throw new Error('expected a rejection')
}

function expectInvalid(e: unknown, message: string) {
  expect(e).toBeInstanceOf(InvalidMessageError)
  expect(e).toBeInstanceOf(errors.InvalidMessageError)
  expect(e).toBeInstanceOf(Error)
  const err = e as InvalidMessageError
  expect(err.message).toBe(message)
  expect(err.name).toBe('InvalidMessageError')
  expect(err.code).toBe('INVALID_MESSAGE')
  expect(isRetryableError(err)).toBe(false)
}

const NOT_CLONEABLE = 'messages must contain cloneable structured data (strings, arrays, and plain data objects)'

describe('run() and stream() over a caller-owned LLMMessage[]', () => {
  test('the list reaches the adapter as given; only the new messages come back; the history is untouched', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('A dog.')]))
    const input = conversation()
    const r = await agent.run(input)
    expect(r.success).toBe(true)
    expect(r.output).toBe('A dog.')
    expect(adapter.calls).toHaveLength(1)
    expect(adapter.calls[0].messages).toStrictEqual(conversation())
    expect(r.messages).toStrictEqual([assistantText('A dog.')])
    expect(agent.getHistory()).toStrictEqual([])
  })

  test('the run works on a copy: the caller\'s array is not mutated, and changing it after the call changes nothing', async () => {
    const registry = new ToolRegistry()
    registry.register(echoTool())
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const adapter = new MockAdapter([
      async () => {
        await gate
        return toolReply([{ id: 'tu_2', name: 'echo', input: { text: 'dog' } }])
      },
      textReply('A dog.'),
    ])
    const agent = new Agent({ name: 'copy', model: 'm', adapter, tools: ['echo'] }, registry, new ToolExecutor(registry))
    const input = conversation()
    const pending = agent.run(input)
    // The run has started and waits in the adapter; the caller now changes everything it owns.
    ;(input[4].content[0] as { text: string }).text = 'CHANGED'
    input[0].content.length = 0
    input.push(userText('appended later'))
    release()
    const r = await pending
    expect(r.success).toBe(true)
    expect(adapter.calls[0].messages).toStrictEqual(conversation())
    // The second call: the whole given conversation, then the run's own tool round.
    expect(adapter.calls[1].messages.slice(0, 5)).toStrictEqual(conversation())
    expect(adapter.calls[1].messages).toHaveLength(7)
    // Nothing the run appended went into the caller's array.
    expect(input).toHaveLength(6)
    expect(input[5]).toStrictEqual(userText('appended later'))
  })

  test('a message object of the list is not the caller\'s object', async () => {
    const { agent, adapter } = setup()
    const input = conversation()
    await agent.run(input)
    expect(adapter.calls[0].messages[0]).not.toBe(input[0])
    expect(adapter.calls[0].messages[0].content[1]).not.toBe(input[0].content[1])
    expect(input).toStrictEqual(conversation())
  })

  test('an empty list and a list that ends on an assistant message are valid inputs', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('x'), textReply('y')]))
    expect((await agent.run([])).success).toBe(true)
    expect(adapter.calls[0].messages).toStrictEqual([])
    const prefill: LLMMessage[] = [userText('Say hi'), assistantText('Hi')]
    expect((await agent.run(prefill)).success).toBe(true)
    expect(adapter.calls[1].messages).toStrictEqual(prefill)
  })

  test('stream(list): the events of the run over the list', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('streamed')]))
    const events: StreamEvent[] = []
    for await (const e of agent.stream(conversation())) events.push(e)
    expect(events.map((e) => e.type)).toStrictEqual(['text', 'done'])
    expect(adapter.calls[0].messages).toStrictEqual(conversation())
  })

  test('a string keeps 1.7\'s meaning: one user text message', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('a'), textReply('b')]))
    await agent.run('plain')
    expect(adapter.calls[0].messages).toStrictEqual([userText('plain')])
    for await (const _ of agent.stream('streamed plain')) void _
    expect(adapter.calls[1].messages).toStrictEqual([userText('streamed plain')])
  })
})

describe('prompt() with content blocks', () => {
  test('the blocks become exactly one new user message of the conversation', async () => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('first'), textReply('a cat'), textReply('done')]))
    await agent.prompt('hello')
    const blocks: ContentBlock[] = [{ type: 'text', text: 'What is this?' }, IMG]
    const r = await agent.prompt(blocks)
    expect(r.success).toBe(true)
    const asked: LLMMessage = { role: 'user', content: [{ type: 'text', text: 'What is this?' }, IMG] }
    expect(adapter.calls[1].messages).toStrictEqual([userText('hello'), assistantText('first'), asked])
    expect(agent.getHistory()).toStrictEqual([userText('hello'), assistantText('first'), asked, assistantText('a cat')])
    // A copy: the caller's array and blocks are not the history's, and changing them changes nothing.
    const history = agent.getHistory()
    expect(history[2].content).not.toBe(blocks)
    expect(history[2].content[1]).not.toBe(blocks[1])
    blocks.push({ type: 'text', text: 'later' })
    ;(blocks[0] as { text: string }).text = 'CHANGED'
    await agent.prompt('next')
    expect(adapter.calls[2].messages[2]).toStrictEqual(asked)
  })

  test('a failed run leaves the history as it was (no dangling block message)', async () => {
    const { agent } = setup({}, new MockAdapter([new Error('model down')]))
    const r = await agent.prompt([IMG])
    expect(r).toStrictEqual(FAILED('model down'))
    expect(agent.getHistory()).toStrictEqual([])
  })
})

describe('InvalidMessageError: upstream\'s texts, at the caller\'s await', () => {
  const badLists: Array<[string, unknown, string]> = [
    ['a number element', [1], 'messages[0] must be an object, got number'],
    ['a null element', [userText('ok'), null], 'messages[1] must be an object, got null'],
    ['an array element', [[]], 'messages[0] must be an object, got array'],
    ['string content', [{ role: 'user', content: 'hi' }], 'messages[0].content must be a ContentBlock[], got string'],
    ['missing content', [userText('a'), assistantText('b'), { role: 'user' }], 'messages[2].content must be a ContentBlock[], got undefined'],
    ['null content', [{ role: 'user', content: null }], 'messages[0].content must be a ContentBlock[], got null'],
    ['a block without type', [{ role: 'user', content: [{ text: 'x' }] }], 'messages[0].content[0] must be a content block with a string "type"'],
    ['a null block', [{ role: 'user', content: [{ type: 'text', text: 'x' }, null] }], 'messages[0].content[1] must be a content block with a string "type"'],
    ['a numeric type', [{ role: 'assistant', content: [{ type: 7 }] }], 'messages[0].content[0] must be a content block with a string "type"'],
    ['a function inside a block', [{ role: 'user', content: [{ type: 'text', text: 'x', extra: () => 1 }] }], NOT_CLONEABLE],
    ['a symbol inside a block', [{ role: 'user', content: [{ type: 'text', text: Symbol('s') }] }], NOT_CLONEABLE],
  ]

  test.each(badLists)('run(): %s', async (_name, input, message) => {
    const { agent, adapter } = setup()
    const e = await rejection(agent.run(input as AgentRunInput))
    expectInvalid(e, message)
    // Rejected before the run: no call, no state change.
    expect(adapter.calls).toHaveLength(0)
    expect(agent.getState().status).toBe('idle')
  })

  test.each(badLists)('stream(): %s throws at the call, before any event', (_name, input, message) => {
    const { agent, adapter } = setup()
    let thrown: unknown
    try {
      agent.stream(input as AgentRunInput)
    } catch (e) {
      thrown = e
    }
    expectInvalid(thrown, message)
    expect(adapter.calls).toHaveLength(0)
    expect(agent.getState().status).toBe('idle')
  })

  test.each<[string, unknown, string]>([
    ['a non-array', 'text' as unknown, 'unused'],
    ['a number block', [{ type: 'text', text: 'a' }, 5], 'messages[0].content[1] must be a content block with a string "type"'],
    ['a block without type', [{ text: 'a' }], 'messages[0].content[0] must be a content block with a string "type"'],
    ['a function inside a block', [{ type: 'image', source: { data: () => 'x' } }], NOT_CLONEABLE],
  ])('prompt(): %s', async (name, input, message) => {
    const { agent, adapter } = setup({}, new MockAdapter([textReply('ok'), textReply('ok')]))
    await agent.prompt('before')
    const before = agent.getHistory()
    if (name === 'a non-array') {
      // A string is 1.7's prompt, not a block list.
      expect((await agent.prompt(input as string)).success).toBe(true)
      return
    }
    const e = await rejection(agent.prompt(input as AgentPromptInput))
    expectInvalid(e, message)
    expect(adapter.calls).toHaveLength(1)
    expect(agent.getHistory()).toStrictEqual(before)
    expect(agent.getState().status).toBe('completed')
  })

  test('the rejection is the promise\'s: run() and prompt() never throw synchronously', () => {
    const { agent } = setup()
    const p = agent.run([1] as unknown as AgentRunInput)
    const q = agent.prompt([null] as unknown as AgentPromptInput)
    expect(p).toBeInstanceOf(Promise)
    expect(q).toBeInstanceOf(Promise)
    return Promise.all([expect(p).rejects.toThrow('messages[0] must be an object, got number'),
      expect(q).rejects.toThrow('messages[0].content[0] must be a content block with a string "type"')])
  })
})

describe('AgentConfig.history', () => {
  test('is checked and deep-copied at construction; prompt() continues it', async () => {
    const seeded = conversation().slice(0, 4)
    const adapter = new MockAdapter([textReply('continuing')])
    const { agent } = setup({ history: seeded }, adapter)
    // The caller's array and messages are not the agent's.
    seeded.push(userText('pushed later'))
    ;(seeded[0].content[0] as { text: string }).text = 'CHANGED'
    expect(agent.getHistory()).toStrictEqual(conversation().slice(0, 4))
    await agent.prompt('next question')
    expect(adapter.calls[0].messages).toStrictEqual([...conversation().slice(0, 4), userText('next question')])
    expect(agent.getHistory()).toHaveLength(6)
    // The config keeps the caller's value as given (1.7 stores config by reference).
    expect(agent.config.history).toBe(seeded)
    // run() does not read the history; reset() empties it as in 1.7.
    agent.reset()
    expect(agent.getHistory()).toStrictEqual([])
  })

  test.each<[string, unknown, string]>([
    ['a string', 'not a list', 'messages must be an array, got string'],
    ['null', null, 'messages must be an array, got null'],
    ['an object', { role: 'user' }, 'messages must be an array, got object'],
    ['a message without content', [{ role: 'user' }], 'messages[0].content must be a ContentBlock[], got undefined'],
    ['a function in a block', [{ role: 'user', content: [{ type: 'text', text: 'x', f: () => 1 }] }], NOT_CLONEABLE],
  ])('%s: the constructor throws InvalidMessageError', (_name, history, message) => {
    let thrown: unknown
    try {
      setup({ history: history as LLMMessage[] })
    } catch (e) {
      thrown = e
    }
    expectInvalid(thrown, message)
  })
})

describe('beforeRun with messages (upstream 1.15)', () => {
  test('the context has a deep copy of the complete effective list', async () => {
    const seen: BeforeRunHookContext[] = []
    const adapter = new MockAdapter([textReply('r1'), textReply('r2')])
    const { agent } = setup({ beforeRun: (ctx) => (seen.push(ctx), ctx) }, adapter)
    await agent.prompt('one')
    await agent.prompt([{ type: 'text', text: 'two' }, IMG])
    const ctx = seen[1]
    expect(ctx.prompt).toBe('two')
    expect(ctx.messages).toStrictEqual(adapter.calls[1].messages)
    expect(ctx.messages).not.toBe(adapter.calls[1].messages)
    expect(ctx.messages![0]).not.toBe(agent.getHistory()[0])
    // Returning the context unchanged keeps the run's own message objects (1.7).
    expect(adapter.calls[1].messages[0]).toBe(agent.getHistory()[0])
  })

  test('returned messages replace the whole list (copied); the prompt() history keeps its own', async () => {
    const replacement: LLMMessage[] = [userText('system-ish preface'), assistantText('ok'), userText('the real question')]
    const adapter = new MockAdapter([textReply('answer')])
    const { agent } = setup({ beforeRun: (ctx) => ({ ...ctx, messages: replacement }) }, adapter)
    const r = await agent.prompt('original question')
    expect(r.success).toBe(true)
    expect(adapter.calls[0].messages).toStrictEqual(replacement)
    expect(adapter.calls[0].messages[2]).not.toBe(replacement[2])
    expect(agent.getHistory()).toStrictEqual([userText('original question'), assistantText('answer')])
  })

  test('a hook that changes its context\'s messages in place and returns them replaces the list', async () => {
    const adapter = new MockAdapter([textReply('ok')])
    const { agent } = setup({
      beforeRun: (ctx) => {
        ;(ctx.messages as LLMMessage[]).unshift(userText('added in place'), assistantText('noted'))
        return ctx
      },
    }, adapter)
    await agent.run('q')
    expect(adapter.calls[0].messages).toStrictEqual([userText('added in place'), assistantText('noted'), userText('q')])
  })

  test('returned messages that fail the check fail the run (a result, not a rejection)', async () => {
    const { agent, adapter } = setup({ beforeRun: (ctx) => ({ ...ctx, messages: [{ role: 'user' }] as unknown as LLMMessage[] }) })
    const r = await agent.run('x')
    expect(r).toStrictEqual(FAILED('messages[0].content must be a ContentBlock[], got undefined'))
    expect(adapter.calls).toHaveLength(0)
    expect(agent.getState().error).toBeInstanceOf(InvalidMessageError)

    const notList = setup({ beforeRun: (ctx) => ({ ...ctx, messages: 'nope' as unknown as LLMMessage[] }) })
    expect(await notList.agent.run('x')).toStrictEqual(FAILED('messages must be an array, got string'))
  })

  test('a history structuredClone cannot copy: a string input runs as in 1.7, a block input fails the run', async () => {
    // A JS adapter's block with a function in it stays the adapter's object in the history.
    const odd = { type: 'text', text: 'r1', render: () => 'r1' } as unknown as ContentBlock
    const adapter = new MockAdapter([{ ...textReply('x'), content: [odd] }, textReply('r2'), textReply('never')])
    const seen: BeforeRunHookContext[] = []
    const { agent } = setup({ beforeRun: (ctx) => (seen.push(ctx), { ...ctx, prompt: ctx.prompt + '!' }) }, adapter)
    await agent.prompt('one')
    const r = await agent.prompt('two')
    expect(r.success).toBe(true)
    expect(seen[1].messages![1].content[0]).toBe(odd)
    expect(adapter.calls[1].messages[2]).toStrictEqual(userText('two!'))
    expect(adapter.calls[1].messages[1].content[0]).toBe(odd)

    const failed = await agent.prompt([{ type: 'text', text: 'three' }])
    expect(failed).toStrictEqual(FAILED(NOT_CLONEABLE))
    expect(agent.getState().error).toBeInstanceOf(InvalidMessageError)
    expect(adapter.calls).toHaveLength(2)
  })

  describe('a changed prompt rewrites the latest user message (upstream\'s layout for caller messages)', () => {
    const rewrite = async (last: ContentBlock[], prompt = 'NEW', input?: LLMMessage[]) => {
      const contexts: BeforeRunHookContext[] = []
      const { agent, adapter } = setup({ beforeRun: (ctx) => (contexts.push(ctx), { ...ctx, prompt }) })
      const messages = input ?? [userText('earlier'), assistantText('reply'), { role: 'user', content: last }]
      const r = await agent.run(messages)
      expect(r.success).toBe(true)
      return { sent: adapter.calls[0].messages, ctx: contexts[0] }
    }

    test('the first text block is replaced where it stands; the other text blocks go; non-text blocks stay', async () => {
      const { sent, ctx } = await rewrite([IMG, { type: 'text', text: 'a' }, IMG2, { type: 'text', text: 'b' }])
      expect(ctx.prompt).toBe('ab')
      expect(sent[2]).toStrictEqual({ role: 'user', content: [IMG, { type: 'text', text: 'NEW' }, IMG2] })
      // Only the latest user message changes.
      expect(sent.slice(0, 2)).toStrictEqual([userText('earlier'), assistantText('reply')])
    })

    test('without a text block, the prompt is prepended', async () => {
      const { sent, ctx } = await rewrite([IMG, IMG2])
      expect(ctx.prompt).toBe('')
      expect(sent[2]).toStrictEqual({ role: 'user', content: [{ type: 'text', text: 'NEW' }, IMG, IMG2] })
    })

    test('the latest user message may be a tool result; an unchanged prompt rewrites nothing', async () => {
      const toolRound: LLMMessage[] = [
        userText('go'),
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'echo', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'out' }] },
      ]
      const changed = await rewrite([], 'NEW', toolRound)
      expect(changed.ctx.prompt).toBe('')
      expect(changed.sent[2]).toStrictEqual({ role: 'user', content: [{ type: 'text', text: 'NEW' }, { type: 'tool_result', tool_use_id: 't1', content: 'out' }] })
      const same = await rewrite([], '', toolRound)
      expect(same.sent).toStrictEqual(toolRound)
    })

    test('a list without a user message is sent as is', async () => {
      const { sent } = await rewrite([], 'NEW', [assistantText('only me')])
      expect(sent).toStrictEqual([assistantText('only me')])
    })

    test('with returned messages, the prompt applies to their latest user message', async () => {
      const { agent, adapter } = setup({
        beforeRun: (ctx) => ({ ...ctx, prompt: 'REWRITTEN', messages: [userText('a'), assistantText('b'), { role: 'user', content: [IMG, { type: 'text', text: 'c' }] }] }),
      })
      await agent.run('x')
      expect(adapter.calls[0].messages[2]).toStrictEqual({ role: 'user', content: [IMG, { type: 'text', text: 'REWRITTEN' }] })
    })

    test('prompt() with blocks: the same rule, and the history keeps the blocks as given', async () => {
      const { agent, adapter } = setup({ beforeRun: (ctx) => ({ ...ctx, prompt: ctx.prompt.toUpperCase() }) })
      await agent.prompt([IMG, { type: 'text', text: 'look' }])
      expect(adapter.calls[0].messages).toStrictEqual([{ role: 'user', content: [IMG, { type: 'text', text: 'LOOK' }] }])
      expect(agent.getHistory()[0]).toStrictEqual({ role: 'user', content: [IMG, { type: 'text', text: 'look' }] })
    })
  })

  describe('beforeRun.prompt must be a string', () => {
    const nonString = (ctx: BeforeRunHookContext) => ({ ...ctx, prompt: 42 }) as unknown as BeforeRunHookResult

    test('for a message-list input (run, stream) and a block input (prompt): a failed run', async () => {
      const run = setup({ beforeRun: nonString })
      expect(await run.agent.run([userText('x')])).toStrictEqual(FAILED('beforeRun.prompt must be a string'))
      expect(run.adapter.calls).toHaveLength(0)
      const err = run.agent.getState().error
      expectInvalid(err, 'beforeRun.prompt must be a string')

      const streamed = setup({ beforeRun: nonString })
      const events: StreamEvent[] = []
      for await (const e of streamed.agent.stream([userText('x')])) events.push(e)
      expect(events).toHaveLength(1)
      expect(events[0].type).toBe('error')
      expectInvalid(events[0].data, 'beforeRun.prompt must be a string')

      const prompted = setup({ beforeRun: (() => ({ agent: {} })) as unknown as AgentConfig['beforeRun'] })
      expect(await prompted.agent.prompt([{ type: 'text', text: 'x' }])).toStrictEqual(FAILED('beforeRun.prompt must be a string'))
      expect(prompted.agent.getHistory()).toStrictEqual([])
    })

    test('for a string input whose hook returns new messages', async () => {
      const { agent } = setup({ beforeRun: (ctx) => ({ ...ctx, prompt: undefined, messages: [userText('m')] }) as unknown as BeforeRunHookResult })
      expect(await agent.run('x')).toStrictEqual(FAILED('beforeRun.prompt must be a string'))
    })

    test('a string input whose hook keeps the messages: 1.7\'s quirk, the value is sent as is', async () => {
      const { agent, adapter } = setup({ beforeRun: nonString })
      expect((await agent.run('x')).success).toBe(true)
      expect(adapter.calls[0].messages).toStrictEqual([{ role: 'user', content: [{ type: 'text', text: 42 }] }])
    })
  })
})

describe('native adapter over a caller\'s list (loopback HTTP)', () => {
  isolateEnv(['ANTHROPIC_BASE_URL'])
  const server = eachServer()

  const reply = (text: string) => ({
    json: {
      id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text }],
      stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 3 },
    },
  })

  test('run(list) sends the whole conversation, images and the tool round included', async () => {
    server.replies.push(reply('A dog.'), reply('Still a dog.'))
    const registry = new ToolRegistry()
    registry.register(echoTool())
    const agent = new Agent({ name: 'n', model: 'claude-test', provider: 'anthropic', apiKey: 'k', baseURL: server.url, tools: ['echo'] }, registry, new ToolExecutor(registry))
    const input = conversation()
    const r = await agent.run(input)
    expect(r.success).toBe(true)
    expect(r.output).toBe('A dog.')
    const wire = [
      { role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, IMG] },
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'tu_1', name: 'echo', input: { text: 'cat' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'echo:cat', is_error: false }] },
      { role: 'assistant', content: [{ type: 'text', text: 'A cat.' }] },
      { role: 'user', content: [{ type: 'text', text: 'And this one?' }, IMG2] },
    ]
    expect(server.requests[0].body.messages).toEqual(wire)
    expect(input).toStrictEqual(conversation())

    // prompt() with blocks on the same native adapter: one user message with the image.
    const prompted = await agent.prompt([{ type: 'text', text: 'Describe' }, IMG])
    expect(prompted.output).toBe('Still a dog.')
    expect(server.requests[1].body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Describe' }, IMG] }])
  })

  test('a bad list is rejected before any request', async () => {
    const agent = new Agent({ name: 'n', model: 'claude-test', provider: 'anthropic', apiKey: 'k', baseURL: server.url }, new ToolRegistry(), new ToolExecutor(new ToolRegistry()))
    expectInvalid(await rejection(agent.run([{ role: 'user', content: [{}] }] as unknown as LLMMessage[])), 'messages[0].content[0] must be a content block with a string "type"')
    expect(server.requests).toHaveLength(0)
  })
})
