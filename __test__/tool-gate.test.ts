// The onToolCall gate (upstream 1.11, `consequential` 1.13): its texts byte for byte, the
// context it is told, where it is configured, the abort check after it, and its verdict on a
// built-in tool under a real Agent run (the tool's side effect never happens).
import * as fs from 'fs/promises'
import * as os from 'os'
import * as path from 'path'
import { z } from 'zod'
import {
  Agent,
  AgentRunner,
  ToolRegistry,
  ToolExecutor,
  defineTool,
  registerBuiltInTools,
  bashTool,
  fileWriteTool,
  fileEditTool,
  fileReadTool,
  grepTool,
  LLMResponse,
  ContentBlock,
  ToolCallContext,
  ToolCallDecision,
  ToolCallGate,
  ToolUseContext,
  TraceEvent,
} from '../index'

const ctx: ToolUseContext = { agent: { name: 'test-agent', role: 'r', model: 'm' } }

function setup(gate?: ToolCallGate, over: Record<string, unknown> = {}) {
  const calls: unknown[] = []
  const registry = new ToolRegistry()
  registry.register(
    defineTool({
      name: 'bash',
      description: 'd',
      inputSchema: z.object({ command: z.string() }),
      execute: async (input: any) => {
        calls.push(input)
        return { data: `ran ${input.command}`, metadata: { tokenUsage: { input_tokens: 1, output_tokens: 2 } } }
      },
      ...over,
    } as any),
  )
  const executor = new ToolExecutor(registry, gate === undefined ? {} : { onToolCall: gate })
  return { registry, executor, calls }
}

const denyText = 'Tool "bash" denied by onToolCall.'
const invalidText = 'Tool "bash" onToolCall hook returned an invalid onToolCall decision.'
const abortText = 'Tool "bash" was aborted before execution began.'

describe('ToolExecutor onToolCall: upstream texts', () => {
  test('deny with a reason, without one and with an empty one; the tool never runs', async () => {
    for (const [decision, text, gate] of [
      [{ action: 'deny', reason: 'no shell today' }, 'Tool "bash" denied by onToolCall: no shell today', { action: 'deny', reason: 'no shell today' }],
      [{ action: 'deny' }, denyText, { action: 'deny' }],
      [{ action: 'deny', reason: '' }, denyText, { action: 'deny', reason: '' }],
    ] as const) {
      const { executor, calls } = setup(() => decision as ToolCallDecision)
      const r = await executor.execute('bash', { command: 'ls' }, ctx)
      expect(r).toStrictEqual({ data: text, isError: true, metadata: { toolCallGate: gate } })
      expect(calls).toHaveLength(0)
    }
  })

  test('an allow runs the tool and merges the verdict over its metadata (an allow drops its reason)', async () => {
    const { executor, calls } = setup(() => ({ action: 'allow', reason: 'fine' }) as any)
    const r = await executor.execute('bash', { command: 'ls' }, ctx)
    expect(r).toStrictEqual({
      data: 'ran ls',
      metadata: { tokenUsage: { input_tokens: 1, output_tokens: 2 }, toolCallGate: { action: 'allow' } },
    })
    expect(calls).toEqual([{ command: 'ls' }])
  })

  test('errors after an allow carry the verdict; a throw is still truncated', async () => {
    const { executor } = setup(() => ({ action: 'allow' }), {
      execute: async () => { throw new Error('kaput') },
    })
    expect(await executor.execute('bash', { command: 'ls' }, ctx)).toStrictEqual({
      data: 'Tool "bash" threw an error: kaput', isError: true, metadata: { toolCallGate: { action: 'allow' } },
    })
    const { executor: out } = setup(() => ({ action: 'allow' }), {
      outputSchema: z.string().max(2),
    })
    const r = await out.execute('bash', { command: 'ls' }, ctx)
    expect(r.metadata).toStrictEqual({ toolCallGate: { action: 'allow' } })
    expect(r.data.startsWith('Invalid output for tool "bash":\n  \u2022 ')).toBe(true)
  })

  test('a throwing gate, sync or async, and a rejecting one: no verdict in the result', async () => {
    const cases: Array<[ToolCallGate, string]> = [
      [() => { throw new Error('boom') }, 'boom'],
      [async () => { throw new Error('async boom') }, 'async boom'],
      [() => { throw 'plain string' }, 'plain string'],
      [() => { throw { code: 7 } }, '{"code":7}'],
    ]
    for (const [gate, msg] of cases) {
      const { executor, calls } = setup(gate)
      expect(await executor.execute('bash', { command: 'ls' }, ctx)).toStrictEqual({
        data: `Tool "bash" onToolCall hook threw an error: ${msg}`, isError: true,
      })
      expect(calls).toHaveLength(0)
    }
  })

  test('invalid decisions of each kind', async () => {
    const bad: unknown[] = [
      undefined, null, 'allow', 1, true,
      {}, { action: 'ALLOW' }, { action: 'maybe' }, { action: 1 },
      { action: 'deny', reason: 5 }, { action: 'allow', reason: null }, { action: 'suspend', reason: {} },
    ]
    for (const decision of bad) {
      const { executor, calls } = setup(() => decision as any)
      expect(await executor.execute('bash', { command: 'ls' }, ctx)).toStrictEqual({ data: invalidText, isError: true })
      expect(calls).toHaveLength(0)
    }
    // A decision whose getter throws is the gate's throw.
    const { executor } = setup(() => ({ get action(): 'allow' { throw new Error('getter') } }))
    expect((await executor.execute('bash', { command: 'ls' }, ctx)).data).toBe('Tool "bash" onToolCall hook threw an error: getter')
  })

  test('suspend outside an orchestrated checkpointed task is refused with the kernel\'s own text', async () => {
    // Upstream's text for this case (1.14+ executor) is not available to us: this one is ours.
    const { executor, calls } = setup(() => ({ action: 'suspend', reason: 'ask a human' }))
    expect(await executor.execute('bash', { command: 'ls' }, ctx)).toStrictEqual({
      data: 'Tool "bash" was suspended by onToolCall, but only an orchestrated checkpointed task can suspend a tool call; the call was not executed.',
      isError: true,
      metadata: { toolCallGate: { action: 'suspend', reason: 'ask a human' } },
    })
    expect(calls).toHaveLength(0)
  })

  test('the abort check after the gate: an abort during the gate wins over allow and deny', async () => {
    for (const decision of [{ action: 'allow' }, { action: 'deny', reason: 'x' }] as ToolCallDecision[]) {
      const ac = new AbortController()
      const { executor, calls } = setup(async () => { ac.abort(); return decision })
      const r = await executor.execute('bash', { command: 'ls' }, { ...ctx, abortSignal: ac.signal })
      expect(r).toStrictEqual({ data: abortText, isError: true, metadata: { toolCallGate: decision } })
      expect(calls).toHaveLength(0)
    }
    // Aborted before: the gate is not called.
    const ac = new AbortController()
    ac.abort()
    const gate = jest.fn(() => ({ action: 'allow' }) as const)
    const { executor } = setup(gate)
    expect(await executor.execute('bash', { command: 'ls' }, { ...ctx, abortSignal: ac.signal })).toStrictEqual({ data: abortText, isError: true })
    expect(gate).not.toHaveBeenCalled()
  })

  test('the gate is called after input validation, never for invalid input or a missing tool', async () => {
    const gate = jest.fn(() => ({ action: 'allow' }) as const)
    const { executor } = setup(gate)
    const r = await executor.execute('bash', { command: 5 }, ctx)
    expect(r.data).toBe('Invalid input for tool "bash":\n  \u2022 command: Expected string, received number')
    expect(await executor.execute('nope', {}, ctx)).toStrictEqual({ data: 'Tool "nope" is not registered in the ToolRegistry.', isError: true })
    expect(gate).not.toHaveBeenCalled()
  })
})

describe('ToolExecutor onToolCall: context and configuration', () => {
  test('the context has exactly upstream\'s keys: validated input, agent name, run and task ids', async () => {
    const seen: ToolCallContext[] = []
    const { executor } = setup((c) => { seen.push(c); return { action: 'allow' } }, {
      inputSchema: z.object({ command: z.string().transform((s) => s.trim()) }),
    })
    await executor.execute('bash', { command: '  ls  ' }, { ...ctx, runId: 'run-1', taskId: 'task-1' } as any)
    expect(seen).toStrictEqual([{ toolName: 'bash', input: { command: 'ls' }, agentName: 'test-agent', runId: 'run-1', taskId: 'task-1' }])
    seen.length = 0
    await executor.execute('bash', { command: 'ls' }, { ...ctx, toolCallId: 'tu_1' })
    expect(seen).toStrictEqual([{ toolName: 'bash', input: { command: 'ls' }, agentName: 'test-agent', toolCallId: 'tu_1' }])
  })

  test('consequential is passed only when true', async () => {
    const seen: ToolCallContext[] = []
    const gate: ToolCallGate = (c) => { seen.push(c); return { action: 'allow' } }
    await setup(gate, { consequential: true }).executor.execute('bash', { command: 'ls' }, ctx)
    await setup(gate, { consequential: false }).executor.execute('bash', { command: 'ls' }, ctx)
    expect(seen[0].consequential).toBe(true)
    expect('consequential' in seen[1]).toBe(false)
  })

  test('a per-execution gate takes priority; an undefined one falls back to the constructor\'s', async () => {
    const { executor, calls } = setup(() => ({ action: 'deny', reason: 'ctor' }))
    expect((await executor.execute('bash', { command: 'a' }, ctx, { onToolCall: () => ({ action: 'allow' }) })).data).toBe('ran a')
    expect((await executor.execute('bash', { command: 'b' }, ctx, { onToolCall: undefined })).data).toBe('Tool "bash" denied by onToolCall: ctor')
    expect((await executor.execute('bash', { command: 'c' }, ctx)).data).toBe('Tool "bash" denied by onToolCall: ctor')
    const { executor: open } = setup()
    expect((await open.execute('bash', { command: 'd' }, ctx, { onToolCall: () => ({ action: 'deny' }) })).data).toBe(denyText)
    expect(calls).toEqual([{ command: 'a' }])
  })

  test('executeBatch applies the constructor gate', async () => {
    const { executor } = setup((c) => (c.input.command === 'no' ? { action: 'deny' } : { action: 'allow' }))
    const r = await executor.executeBatch([{ id: '1', name: 'bash', input: { command: 'yes' } }, { id: '2', name: 'bash', input: { command: 'no' } }], ctx)
    expect(r.get('1')!.data).toBe('ran yes')
    expect(r.get('2')!.data).toBe(denyText)
  })

  test('without a gate the result is the tool\'s own object (no metadata added)', async () => {
    const result = { data: 'same' }
    const { executor } = setup(undefined, { execute: async () => result })
    expect(await executor.execute('bash', { command: 'ls' }, ctx)).toBe(result)
  })

  test('no gate: the happy path makes no native call; a gate adds one (its decision)', async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const native = require('../lib/native.js')
    const spy = jest.spyOn(native, 'executorAnswer')
    try {
      await setup().executor.execute('bash', { command: 'ls' }, ctx)
      expect(spy).toHaveBeenCalledTimes(0)
      await setup(() => ({ action: 'allow' })).executor.execute('bash', { command: 'ls' }, ctx)
      expect(spy).toHaveBeenCalledTimes(1)
    } finally {
      spy.mockRestore()
    }
  })

  test('defineTool copies consequential only when defined; the built-ins that have it', () => {
    const base = { name: 'x', description: 'd', inputSchema: z.object({}), execute: async () => ({ data: '' }) }
    expect('consequential' in defineTool(base)).toBe(false)
    expect(defineTool({ ...base, consequential: false }).consequential).toBe(false)
    expect(defineTool({ ...base, consequential: true }).consequential).toBe(true)
    expect([bashTool, fileWriteTool, fileEditTool].map((t) => t.consequential)).toEqual([true, true, true])
    expect([fileReadTool, grepTool].map((t) => 'consequential' in t)).toEqual([false, false])
  })
})

const resp = (content: ContentBlock[]): LLMResponse => ({ id: 'r', model: 'm', stop_reason: 'x', usage: { input_tokens: 1, output_tokens: 1 }, content })

describe('the gate under a runner and an Agent', () => {
  let dir: string
  beforeEach(async () => { dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'oma-gate-'))) })
  afterEach(async () => { await fs.rm(dir, { recursive: true, force: true }) })

  test('a denied file_write never writes; the run goes on; the trace carries the verdict (redacted)', async () => {
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const file = path.join(dir, 'out.txt')
    const replies = [
      resp([{ type: 'tool_use', id: 'tu_w', name: 'file_write', input: { path: file, content: 'x' } }]),
      resp([{ type: 'text', text: 'done' }]),
    ]
    let i = 0
    const adapter = { name: 'mock', chat: async () => replies[i++] }
    const seen: ToolCallContext[] = []
    const agent = new Agent({
      name: 'writer', model: 'm', adapter, cwd: dir, toolPreset: 'readwrite',
      onToolCall: async (c: ToolCallContext) => { seen.push(c); return { action: 'deny', reason: 'key sk-ant-abcdefghijklmnopqrstuvwxyz0123' } },
    } as any, registry, new ToolExecutor(registry))
    const traces: TraceEvent[] = []
    const r = await agent.run('write it', { runId: 'run-9', taskId: 'task-9', onTrace: (e) => { traces.push(e) } })
    await expect(fs.access(file)).rejects.toThrow()
    expect(r.success).toBe(true)
    expect(r.output).toBe('done')
    expect(r.toolCalls[0].output.startsWith('Tool "file_write" denied by onToolCall: key ')).toBe(true)
    expect(seen).toStrictEqual([{
      toolName: 'file_write', input: { path: file, content: 'x' }, agentName: 'writer', consequential: true,
      runId: 'run-9', taskId: 'task-9', toolCallId: 'tu_w',
    }])
    const t = traces.find((e) => e.type === 'tool_call') as any
    expect(t.gated).toBe(true)
    expect(t.gateAction).toBe('deny')
    expect(t.gateReason).not.toContain('sk-ant-abcdefghijklmnopqrstuvwxyz0123')
    expect(t.gateReason.startsWith('key ')).toBe(true)
  })

  test('an allow runs the built-in; RunnerOptions.onToolCall wins over the executor\'s; tools see toolCallId', async () => {
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    const contexts: ToolUseContext[] = []
    registry.register(defineTool({
      name: 'probe', description: 'd', inputSchema: z.object({}),
      execute: async (_i: unknown, c: ToolUseContext) => { contexts.push(c); return { data: 'ok' } },
    }))
    const file = path.join(dir, 'ok.txt')
    const replies = [
      resp([
        { type: 'tool_use', id: 'a1', name: 'file_write', input: { path: file, content: 'y' } },
        { type: 'tool_use', id: 'a2', name: 'probe', input: {} },
      ]),
      resp([{ type: 'text', text: 'done' }]),
    ]
    let i = 0
    const adapter = { name: 'mock', chat: async () => replies[i++] }
    const executor = new ToolExecutor(registry, { onToolCall: () => ({ action: 'deny', reason: 'executor' }) })
    const runner = new AgentRunner(adapter as any, registry, executor, {
      model: 'm', agentName: 'r', cwd: dir, allowedTools: ['file_write', 'probe'],
      onToolCall: () => ({ action: 'allow' }),
    } as any)
    const traces: TraceEvent[] = []
    const notified: string[] = []
    const r = await runner.run([{ role: 'user', content: [{ type: 'text', text: 'go' }] }], {
      onTrace: (e) => { traces.push(e) },
      // RunOptions.onToolCall stays 1.7's notification.
      onToolCall: (name) => { notified.push(name) },
    })
    expect(await fs.readFile(file, 'utf8')).toBe('y')
    expect(r.toolCalls.map((c) => c.output)).toEqual([expect.stringContaining('ok.txt'), 'ok'])
    expect(notified).toEqual(['file_write', 'probe'])
    expect(contexts[0].toolCallId).toBe('a2')
    const calls = traces.filter((e) => e.type === 'tool_call') as any[]
    expect(calls.map((c) => [c.gated, c.gateAction, 'gateReason' in c])).toEqual([[true, 'allow', false], [true, 'allow', false]])
  })

  test('without a gate anywhere the trace has no gate fields; a throwing gate leaves none either', async () => {
    for (const onToolCall of [undefined, () => { throw new Error('x') }]) {
      const registry = new ToolRegistry()
      const ids: unknown[] = []
      registry.register(defineTool({
        name: 'probe', description: 'd', inputSchema: z.object({}),
        execute: async (_i: unknown, c: ToolUseContext) => { ids.push(c.toolCallId); return { data: 'ok' } },
      }))
      const replies = [resp([{ type: 'tool_use', id: 'p', name: 'probe', input: {} }]), resp([{ type: 'text', text: 'done' }])]
      let i = 0
      const adapter = { name: 'mock', chat: async () => replies[i++] }
      const config: any = { name: 'n', model: 'm', adapter, tools: ['probe'] }
      if (onToolCall !== undefined) config.onToolCall = onToolCall
      const agent = new Agent(config, registry, new ToolExecutor(registry))
      const traces: TraceEvent[] = []
      const r = await agent.run('go', { onTrace: (e) => { traces.push(e) } })
      const t = traces.find((e) => e.type === 'tool_call') as any
      expect('gated' in t || 'gateAction' in t || 'gateReason' in t).toBe(false)
      expect(r.toolCalls[0].output).toBe(onToolCall === undefined ? 'ok' : 'Tool "probe" onToolCall hook threw an error: x')
      // A round's one call: the tool sees its tool_use id too.
      expect(ids).toEqual(onToolCall === undefined ? ['p'] : [])
    }
  })
})
