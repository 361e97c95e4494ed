// The public API run as native ESM (`node --test`, `npm run test:esm`): everything is imported
// by the package's own name, so Node resolves it through package.json's `exports` map (the
// `import` condition, index.mjs) exactly as it does in a user's ESM project.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import * as fs from 'node:fs/promises'
import * as os from 'node:os'
import * as path from 'node:path'
import { z } from 'zod'
import * as core from '@oma-kernel/core'
import {
  Agent,
  ToolRegistry,
  ToolExecutor,
  defineTool,
  registerBuiltInTools,
  fileReadTool,
  BUILT_IN_TOOLS,
  TokenBudgetExceededError,
  InvalidMessageError,
  LLMCallTimeoutError,
  buildStructuredOutputInstruction,
  extractJSON,
} from '@oma-kernel/core'

const require = createRequire(import.meta.url)
const cjs = require('@oma-kernel/core')

const usage = (input = 10, output = 5) => ({ input_tokens: input, output_tokens: output })
let nextId = 0
const reply = (content, u = usage(), stop_reason = 'end_turn') => ({ id: `r${++nextId}`, model: 'mock-model', stop_reason, usage: u, content })
const text = (t, u) => reply([{ type: 'text', text: t }], u)
const toolUse = (id, name, input, u) => reply([{ type: 'tool_use', id, name, input }], u, 'tool_use')

/** A scripted adapter that records what the runner sends. */
class MockAdapter {
  name = 'mock'
  calls = []
  constructor(script) { this.script = script.slice() }
  async chat(messages, options) {
    this.calls.push({ messages: messages.slice(), options })
    const next = this.script.shift()
    if (next === undefined) throw new Error(`MockAdapter: no scripted reply for call ${this.calls.length}`)
    return next
  }
}

const agentOver = (adapter, config = {}, registry = new ToolRegistry()) =>
  new Agent({ name: 'esm', model: 'mock-model', adapter, ...config }, registry, new ToolExecutor(registry))

const addTool = () => defineTool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ data: String(a + b) }),
})

test('the package name resolves to the ESM entry, which shares the CommonJS module instance', () => {
  assert.equal(fileURLToPath(import.meta.resolve('@oma-kernel/core')), path.resolve(fileURLToPath(import.meta.url), '../../../index.mjs'))
  assert.equal(require.resolve('@oma-kernel/core'), path.resolve(fileURLToPath(import.meta.url), '../../../index.js'))
  assert.equal(core.default, cjs)
  for (const name of Object.keys(cjs)) assert.equal(core[name], cjs[name], name)
  assert.equal(Agent, cjs.Agent)
})

test('Agent.run: a JS tool called by the model, its result sent back, the final answer returned', async () => {
  const registry = new ToolRegistry()
  registry.register(addTool())
  const adapter = new MockAdapter([toolUse('t1', 'add', { a: 2, b: 3 }, usage(7, 3)), text('2 + 3 = 5', usage(11, 4))])
  const agent = agentOver(adapter, { tools: ['add'], systemPrompt: 'Be exact.' }, registry)
  const r = await agent.run('What is 2 + 3?')
  assert.equal(r.success, true)
  assert.equal(r.output, '2 + 3 = 5')
  assert.deepEqual(r.tokenUsage, { input_tokens: 18, output_tokens: 7 })
  assert.deepEqual(r.toolCalls.map((c) => [c.toolName, c.input, c.output]), [['add', { a: 2, b: 3 }, '5']])
  assert.equal(adapter.calls.length, 2)
  assert.equal(adapter.calls[0].options.systemPrompt, 'Be exact.')
  assert.deepEqual(adapter.calls[0].options.tools.map((t) => t.name), ['add'])
  // As in the original: the is_error key is present (undefined) on a successful result.
  const last = adapter.calls[1].messages.at(-1)
  assert.deepEqual(last, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '5', is_error: undefined }] })
  assert.ok('is_error' in last.content[0])
  assert.equal(agent.getState().status, 'completed')
})

test('Agent.stream: event order of a tool round', async () => {
  const registry = new ToolRegistry()
  registry.register(addTool())
  const agent = agentOver(new MockAdapter([toolUse('t1', 'add', { a: 1, b: 1 }), text('2')]), { tools: ['add'] }, registry)
  const types = []
  for await (const e of agent.stream('1 + 1?')) types.push(e.type)
  assert.deepEqual(types, ['tool_use', 'tool_result', 'text', 'done'])
})

test('ToolRegistry and ToolExecutor: registration, Zod validation, execution, batches', async () => {
  const registry = new ToolRegistry()
  const add = addTool()
  registry.register(add)
  assert.equal(registry.get('add'), add)
  assert.throws(() => registry.register(addTool()), { message: 'ToolRegistry: a tool named "add" is already registered. Use a unique name or deregister the existing one first.' })
  assert.deepEqual(registry.toToolDefs().map((d) => d.name), ['add'])
  const executor = new ToolExecutor(registry)
  const context = { agent: { name: 'a', role: 'r', model: 'm' } }
  assert.deepEqual(await executor.execute('add', { a: 4, b: 5 }, context), { data: '9' })
  const bad = await executor.execute('add', { a: 'x', b: 5 }, context)
  assert.equal(bad.isError, true)
  assert.match(bad.data, /^Invalid input for tool "add":\n {2}• a: Expected number, received string/)
  const missing = await executor.execute('nope', {}, context)
  assert.equal(missing.isError, true)
  const batch = await executor.executeBatch([
    { id: 'x', name: 'add', input: { a: 1, b: 2 } },
    { id: 'y', name: 'add', input: { a: 3, b: 4 } },
  ], context)
  assert.deepEqual([...batch].map(([id, res]) => [id, res.data]), [['x', '3'], ['y', '7']])
})

test('registerBuiltInTools and file_read, sandboxed to a temp cwd', async () => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'oma-esm-')))
  try {
    await fs.writeFile(path.join(dir, 'a.txt'), 'one\ntwo\n')
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    assert.deepEqual(registry.list().map((t) => t.name), ['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob'])
    assert.equal(registry.get('file_read'), fileReadTool)
    assert.equal(BUILT_IN_TOOLS[1], fileReadTool)
    const agent = { name: 'a', role: 'r', model: 'm' }
    assert.deepEqual(await fileReadTool.execute({ path: path.join(dir, 'a.txt') }, { agent, cwd: dir }), { data: '1\tone\n2\ttwo', isError: false })
    // Through an agent: granted file_read works, bash is refused (default-deny), /etc is outside.
    const adapter = new MockAdapter([
      reply([
        { type: 'tool_use', id: 'r', name: 'file_read', input: { path: path.join(dir, 'a.txt') } },
        { type: 'tool_use', id: 'b', name: 'bash', input: { command: 'echo hi' } },
        { type: 'tool_use', id: 'o', name: 'file_read', input: { path: '/etc/hostname' } },
      ], usage(), 'tool_use'),
      text('done'),
    ])
    const r = await agentOver(adapter, { tools: ['file_read'], cwd: dir }, registry).run('read it')
    assert.equal(r.success, true)
    assert.equal(r.toolCalls[0].output, '1\tone\n2\ttwo')
    assert.match(r.toolCalls[1].output, /^Tool "bash" is not granted to this agent\./)
    assert.match(r.toolCalls[2].output, /^Path "\/etc\/hostname" is outside the agent's working directory/)
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
})

test('structured output: outputSchema, one retry with feedback, the parsed value', async () => {
  const Answer = z.object({ answer: z.string(), score: z.number() })
  assert.deepEqual(extractJSON('noise {"a": 1} noise'), { a: 1 })
  const adapter = new MockAdapter([text('not json'), text('Here: {"answer": "yes", "score": 3, "extra": 1}')])
  const r = await agentOver(adapter, { outputSchema: Answer }).run('grade it')
  assert.equal(r.success, true)
  assert.deepEqual(r.structured, { answer: 'yes', score: 3 })
  assert.equal(adapter.calls.length, 2)
  assert.equal(adapter.calls[0].options.systemPrompt, buildStructuredOutputInstruction(Answer))
  assert.match(adapter.calls[1].messages.at(-1).content[0].text, /^Your previous response did not produce valid JSON/)
})

test('errors: instanceof holds for the ESM class, the CommonJS class and Error', async () => {
  const agent = agentOver(new MockAdapter([text('over', usage(8, 4))]), { maxTokenBudget: 10 })
  const events = []
  for await (const e of agent.stream('x')) events.push(e)
  assert.deepEqual(events.map((e) => e.type), ['text', 'budget_exceeded', 'done'])
  const err = events[1].data
  assert.ok(err instanceof TokenBudgetExceededError)
  assert.ok(err instanceof cjs.TokenBudgetExceededError)
  assert.ok(err instanceof Error)
  assert.equal(err.message, 'Agent "esm" exceeded token budget: 12 tokens used (budget: 10)')
  assert.equal(err.code, 'TOKEN_BUDGET_EXCEEDED')
  const own = new TokenBudgetExceededError('p', 2, 1)
  assert.ok(own instanceof cjs.TokenBudgetExceededError)
  assert.ok(!(new InvalidMessageError('m') instanceof TokenBudgetExceededError))
  assert.equal(new cjs.InvalidMessageError('m').name, 'InvalidMessageError')
  assert.ok(new cjs.InvalidMessageError('m') instanceof InvalidMessageError)
  // A run that throws is reported as a failed result, not a rejection.
  const failed = await agentOver(new MockAdapter([])).run('x')
  assert.equal(failed.success, false)
  assert.equal(failed.output, 'MockAdapter: no scripted reply for call 1')
})

test('InvalidMessageError from a run input: rejected at the await, instanceof across both entries', async () => {
  const adapter = new MockAdapter([text('seen')])
  const agent = agentOver(adapter)
  const err = await agent.run([{ role: 'user', content: 'not blocks' }]).then(() => assert.fail('expected a rejection'), (e) => e)
  assert.ok(err instanceof InvalidMessageError)
  assert.ok(err instanceof cjs.InvalidMessageError)
  assert.ok(err instanceof Error)
  assert.equal(err.name, 'InvalidMessageError')
  assert.equal(err.code, 'INVALID_MESSAGE')
  assert.equal(err.message, 'messages[0].content must be a ContentBlock[], got string')
  assert.equal(adapter.calls.length, 0)
  // A valid list and a block prompt reach the adapter as given.
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }
  const r = await agent.prompt([{ type: 'text', text: 'look' }, image])
  assert.equal(r.output, 'seen')
  assert.deepEqual(adapter.calls[0].messages, [{ role: 'user', content: [{ type: 'text', text: 'look' }, image] }])
})

test('LLMCallTimeoutError from a never-settling adapter: instanceof across both entries', async () => {
  const never = { name: 'never', chat: () => new Promise(() => {}) }
  const agent = agentOver(never, { callTimeoutMs: 30 })
  const r = await agent.run('x')
  assert.equal(r.success, false)
  assert.equal(r.output, 'Agent "esm" LLM call exceeded per-call timeout of 30ms')
  const err = agent.getState().error
  assert.ok(err instanceof LLMCallTimeoutError)
  assert.ok(err instanceof cjs.LLMCallTimeoutError)
  assert.ok(err instanceof Error)
  assert.equal(err.code, 'LLM_CALL_TIMEOUT')
  assert.equal(err.timeoutMs, 30)
  assert.ok(new cjs.LLMCallTimeoutError(1) instanceof LLMCallTimeoutError)
})

test('EgressPolicyError from createAdapter and from a run: instanceof across both entries', async () => {
  const { EgressPolicyError, createAdapter, isRetryableError } = core
  assert.equal(EgressPolicyError, cjs.EgressPolicyError)
  const denied = await createAdapter('openai', 'k', 'https://api.openai.com/v1', undefined, { mode: 'offline' }).catch((e) => e)
  assert.ok(denied instanceof EgressPolicyError && denied instanceof cjs.EgressPolicyError && denied instanceof Error)
  assert.equal(denied.message, 'Egress policy denied framework-owned provider "openai" request to https://api.openai.com.')
  assert.deepEqual([denied.name, denied.reason, denied.code, denied.provider, denied.origin], ['EgressPolicyError', 'denied', 'EGRESS_POLICY_DENIED', 'openai', 'https://api.openai.com'])
  assert.equal(isRetryableError(denied), false)
  const agent = agentOver(new MockAdapter([text('never sent')]), { egressPolicy: { mode: 'offline' } })
  const r = await agent.run('x')
  assert.equal(r.success, false)
  assert.equal(r.output, 'Egress policy cannot enforce provider "mock": custom and AI SDK adapters do not expose an enforceable request transport or target contract to OMA.')
  assert.ok(agent.getState().error instanceof EgressPolicyError)
})

test('ConfinedShellExecutor from the ESM entry: one class across both entries, a confined command', async () => {
  const { ConfinedShellExecutor } = core
  assert.equal(ConfinedShellExecutor, cjs.ConfinedShellExecutor)
  assert.throws(() => new ConfinedShellExecutor({ network: 'none' }), TypeError)
  const probe = ConfinedShellExecutor.probe()
  if (probe.platform !== 'linux' || probe.landlockAbi < probe.requiredLandlockAbi) return
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'oma-esm-confined-')))
  const ex = new ConfinedShellExecutor()
  try {
    const r = await ex.exec('pwd; cat /proc/$PPID/environ', { timeoutMs: 10_000, sandboxRoot: root })
    assert.equal(r.stdout, `${root}\n`)
    assert.match(r.stderr, /Permission denied/)
    assert.equal(r.confinement.enforced, true)
  } finally {
    await ex.dispose()
    await fs.rm(root, { recursive: true, force: true })
  }
})
