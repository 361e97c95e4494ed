// Trace utilities (CONTRACT §3.2) and the traces of Agent.run (§1.11, §4.3, §4.6, §5.5, §13).
import { spawnSync } from 'node:child_process'
import * as path from 'node:path'
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor, emitTrace, generateRunId } from '../index'
import type { AgentConfig, TraceEvent } from '../index'
import { MockAdapter, recordingTool, textReply, toolReply, usage } from './helpers/mock-adapter'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const EVENT: TraceEvent = {
  type: 'llm_call',
  runId: 'r',
  agent: 'a',
  model: 'm',
  turn: 1,
  tokens: { input_tokens: 1, output_tokens: 1 },
  startMs: 1,
  endMs: 2,
  durationMs: 1,
}

describe('emitTrace (§3.2)', () => {
  test('undefined sink: does nothing', () => {
    expect(() => emitTrace(undefined, EVENT)).not.toThrow()
    expect(emitTrace(undefined, EVENT)).toBeUndefined()
  })

  test('calls the sink synchronously with the very event', () => {
    const fn = jest.fn()
    emitTrace(fn, EVENT)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(fn.mock.calls[0][0]).toBe(EVENT)
  })

  test('swallows a synchronous throw', () => {
    const fn = jest.fn(() => {
      throw new Error('sink exploded')
    })
    expect(() => emitTrace(fn, EVENT)).not.toThrow()
    expect(fn).toHaveBeenCalledTimes(1)
  })

  test('swallows a thrown non-Error too', () => {
    expect(() =>
      emitTrace(() => {
        throw 'string thrown'
      }, EVENT),
    ).not.toThrow()
  })

  test('attaches a no-op rejection handler to a returned thenable (never awaits)', () => {
    const catchFn = jest.fn()
    const thenFn = jest.fn()
    const ret = emitTrace((() => ({ then: thenFn, catch: catchFn })) as any, EVENT)
    expect(ret).toBeUndefined()
    expect(catchFn).toHaveBeenCalledTimes(1)
    expect(typeof catchFn.mock.calls[0][0]).toBe('function')
    expect(() => catchFn.mock.calls[0][0](new Error('x'))).not.toThrow()
  })

  test('a rejected promise from the sink gets a rejection handler attached', () => {
    const returned: Promise<void>[] = []
    const spies: jest.SpyInstance[] = []
    const wrap = (make: () => Promise<void>) => () => {
      const pr = make()
      spies.push(jest.spyOn(pr, 'catch'))
      returned.push(pr)
      return pr
    }
    emitTrace(wrap(async () => {
      throw new Error('async sink failure')
    }), EVENT)
    emitTrace(wrap(() => Promise.reject(new Error('rejected sink'))), EVENT)
    expect(spies).toHaveLength(2)
    for (const spy of spies) {
      expect(spy).toHaveBeenCalledTimes(1)
      expect(typeof spy.mock.calls[0][0]).toBe('function')
    }
  })

  test('an async rejection does not crash a plain Node process (unhandled rejections throw by default)', () => {
    const script = [
      "const { emitTrace } = require(process.argv[1])",
      "emitTrace(async () => { throw new Error('async sink failure') }, {})",
      "emitTrace(() => Promise.reject(new Error('rejected sink')), {})",
      "setTimeout(() => process.stdout.write('alive'), 20)",
    ].join('\n')
    const res = spawnSync(process.execPath, ['-e', script, path.resolve(__dirname, '..', 'index.js')], { encoding: 'utf8' })
    expect(res.stderr).toBe('')
    expect(res.status).toBe(0)
    expect(res.stdout).toBe('alive')
  })

  test('a return value whose catch is not callable is ignored', () => {
    expect(() => emitTrace((() => ({ catch: 5 })) as any, EVENT)).not.toThrow()
    expect(() => emitTrace((() => 42) as any, EVENT)).not.toThrow()
  })
})

describe('generateRunId (§3.2)', () => {
  test('a lower-case RFC 4122 v4 UUID, 36 chars, different on each call', () => {
    const ids = new Set<string>()
    for (let i = 0; i < 50; i++) {
      const id = generateRunId()
      expect(id).toHaveLength(36)
      expect(id).toMatch(UUID_V4)
      ids.add(id)
    }
    expect(ids.size).toBe(50)
  })
})

// ---- traces from Agent.run -------------------------------------------------------------------

const NOT_GRANTED = (tool: string) =>
  `Tool "${tool}" is not granted to this agent. Built-in tools are opt-in: grant it via the agent's "tools" allowlist or "toolPreset" (or set the orchestrator's "defaultToolPreset").`

function setup(script: ConstructorParameters<typeof MockAdapter>[0], config: Partial<AgentConfig> = {}) {
  const adapter = new MockAdapter(script)
  const registry = new ToolRegistry()
  const lookup = recordingTool('lookup', 'looks things up', z.object({
    apiKey: z.string(),
    q: z.string(),
    note: z.string().optional(),
    nested: z.object({ password: z.string(), n: z.number() }).optional(),
  }), () => 'password=hunter2; user=bob')
  registry.register(lookup.tool)
  const agent = new Agent({ name: 'tracer', model: 'mock-model', adapter, tools: ['lookup'], ...config } as AgentConfig, registry, new ToolExecutor(registry))
  return { agent, adapter, seenInputs: lookup.seen }
}

const SECRET_INPUT = {
  apiKey: 'sk-live-0123456789abcdef',
  q: 'x',
  note: 'key sk-ABCDEFGHIJKLMNOPQRST here',
  nested: { password: 'p@ss', n: 5 },
}

function twoTurnScript() {
  return [toolReply([{ id: 't1', name: 'lookup', input: SECRET_INPUT }], usage(11, 3)), textReply('final', usage(13, 4))]
}

describe('Agent.run with onTrace', () => {
  test('llm_call per turn, tool_call redacted, agent trace last; runner traces share a generated UUID, agent trace has runId ""', async () => {
    const { agent, seenInputs } = setup(twoTurnScript())
    const events: TraceEvent[] = []
    const r = await agent.run('go', { onTrace: (e) => void events.push(e) })
    expect(r.success).toBe(true)
    expect(events.map((e) => e.type)).toStrictEqual(['llm_call', 'tool_call', 'llm_call', 'agent'])

    const [llm1, tool, llm2, agentTrace] = events as any[]
    const runId = llm1.runId
    expect(runId).toMatch(UUID_V4)
    expect(tool.runId).toBe(runId)
    expect(llm2.runId).toBe(runId)
    expect(agentTrace.runId).toBe('')

    expect(llm1).toStrictEqual({
      type: 'llm_call',
      runId,
      taskId: undefined,
      agent: 'tracer',
      model: 'mock-model',
      phase: 'turn',
      turn: 1,
      tokens: { input_tokens: 11, output_tokens: 3 },
      startMs: expect.any(Number),
      endMs: expect.any(Number),
      durationMs: llm1.endMs - llm1.startMs,
    })
    expect(llm2).toMatchObject({ phase: 'turn', turn: 2, tokens: { input_tokens: 13, output_tokens: 4 } })
    expect(llm1.endMs).toBeGreaterThanOrEqual(llm1.startMs)

    expect(tool).toStrictEqual({
      type: 'tool_call',
      runId,
      taskId: undefined,
      agent: 'tracer',
      tool: 'lookup',
      isError: false,
      input: { apiKey: '[redacted]', q: 'x', note: 'key [redacted] here', nested: { password: '[redacted]', n: 5 } },
      output: 'password=[redacted]; user=bob',
      startMs: expect.any(Number),
      endMs: expect.any(Number),
      durationMs: tool.endMs - tool.startMs,
    })

    expect(agentTrace).toStrictEqual({
      type: 'agent',
      runId: '',
      taskId: undefined,
      agent: 'tracer',
      turns: 2,
      tokens: { input_tokens: 24, output_tokens: 7 },
      toolCalls: 1,
      startMs: expect.any(Number),
      endMs: expect.any(Number),
      durationMs: agentTrace.endMs - agentTrace.startMs,
    })

    // Redaction is for the trace only: the tool and the record see the original values.
    expect(seenInputs).toStrictEqual([SECRET_INPUT])
    expect(r.toolCalls[0].input).toStrictEqual(SECRET_INPUT)
    expect(r.toolCalls[0].output).toBe('password=hunter2; user=bob')
    expect(r.messages[1].content[0]).toMatchObject({ content: 'password=hunter2; user=bob' })
  })

  test('each run gets a fresh runId', async () => {
    const { agent } = setup([textReply('a'), textReply('b')])
    const events: TraceEvent[] = []
    await agent.run('1', { onTrace: (e) => void events.push(e) })
    await agent.run('2', { onTrace: (e) => void events.push(e) })
    const ids = events.filter((e) => e.type === 'llm_call').map((e) => e.runId)
    expect(ids).toHaveLength(2)
    expect(ids[0]).toMatch(UUID_V4)
    expect(ids[1]).toMatch(UUID_V4)
    expect(ids[0]).not.toBe(ids[1])
  })

  test('caller runId, taskId and traceAgent are used by every trace, the agent trace included', async () => {
    const { agent } = setup(twoTurnScript())
    const events: TraceEvent[] = []
    await agent.run('go', { onTrace: (e) => void events.push(e), runId: 'run-123', taskId: 'task-9', traceAgent: 'alias' })
    expect(events).toHaveLength(4)
    for (const e of events) {
      expect(e.runId).toBe('run-123')
      expect(e.taskId).toBe('task-9')
      expect(e.agent).toBe('alias')
    }
  })

  test('an empty caller runId is replaced by a generated one for the runner; agent trace keeps ""', async () => {
    const { agent } = setup([textReply('a')])
    const events: TraceEvent[] = []
    await agent.run('go', { onTrace: (e) => void events.push(e), runId: '' })
    expect(events[0].runId).toMatch(UUID_V4)
    expect(events[1]).toMatchObject({ type: 'agent', runId: '' })
  })

  test('an ungranted tool call is traced with isError true and the NOT_GRANTED text', async () => {
    const { agent } = setup([toolReply([{ id: 'x1', name: 'forbidden', input: { password: 'pw' } }]), textReply('ok')])
    const events: TraceEvent[] = []
    await agent.run('go', { onTrace: (e) => void events.push(e) })
    const tool = events.find((e) => e.type === 'tool_call') as any
    expect(tool.tool).toBe('forbidden')
    expect(tool.isError).toBe(true)
    expect(tool.input).toStrictEqual({ password: '[redacted]' })
    expect(tool.output).toBe(NOT_GRANTED('forbidden'))
  })

  test('a failed run still emits the agent trace (zero turns, tokens and tool calls)', async () => {
    const { agent } = setup([new Error('llm down')])
    const events: TraceEvent[] = []
    const r = await agent.run('go', { onTrace: (e) => void events.push(e) })
    expect(r.success).toBe(false)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      type: 'agent',
      runId: '',
      agent: 'tracer',
      turns: 0,
      tokens: { input_tokens: 0, output_tokens: 0 },
      toolCalls: 0,
    })
  })

  test('a throwing or rejecting sink does not affect the run', async () => {
    const a = setup(twoTurnScript())
    const r1 = await a.agent.run('go', {
      onTrace: () => {
        throw new Error('sink')
      },
    })
    expect(r1.success).toBe(true)
    expect(r1.output).toBe('final')

    const b = setup(twoTurnScript())
    const r2 = await b.agent.run('go', { onTrace: async () => Promise.reject(new Error('async sink')) })
    expect(r2.success).toBe(true)
    expect(b.agent.getState().status).toBe('completed')
  })

  test('stream(): runner traces have runId "" (no generation) and there is no agent trace (§4.7)', async () => {
    const { agent } = setup(twoTurnScript())
    const events: TraceEvent[] = []
    for await (const _ of agent.stream('go', { onTrace: (e) => void events.push(e) })) void _
    expect(events.map((e) => e.type)).toStrictEqual(['llm_call', 'tool_call', 'llm_call'])
    for (const e of events) expect(e.runId).toBe('')
  })
})
