// new ToolRegistry({ disallow }) (issue 19, beyond the original): a per-registry rail that no
// agent configuration grants past, refused in resolveTools with a warning and at execution with
// the not-granted text, runtime tools included. A real bash that would leave a marker file.
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { z } from 'zod'
import {
  AGENT_FRAMEWORK_DISALLOWED,
  Agent,
  AgentRunner,
  ToolExecutor,
  ToolRegistry,
  defineTool,
  registerBuiltInTools,
} from '../index'
import type { AgentConfig, ToolUseContext } from '../index'
import { MockAdapter, textReply, toolReply } from './helpers/mock-adapter'

const notGranted = (name: string) =>
  `Tool "${name}" is not granted to this agent. Built-in tools are opt-in: grant it via the agent's "tools" allowlist or "toolPreset" (or set the orchestrator's "defaultToolPreset").`
const railWarning = (names: string[]) =>
  `AgentRunner: tools [${names.map((n) => `"${n}"`).join(', ')}] are disallowed by the tool registry (new ToolRegistry({ disallow })) and are not granted to this agent, whatever its tools, toolPreset or runtime registration say.`

let dir: string
let warn: jest.SpyInstance
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-rail-'))
  warn = jest.spyOn(console, 'warn').mockImplementation(() => {})
})
afterEach(() => {
  warn.mockRestore()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** An agent with every built-in tool, `toolPreset: 'full'` and an explicit grant of bash, whose
 *  model asks bash to create `marker`. */
async function bashRun(registry: ToolRegistry) {
  registerBuiltInTools(registry)
  const marker = path.join(dir, 'marker')
  const adapter = new MockAdapter([toolReply([{ id: 'b1', name: 'bash', input: { command: `touch ${marker}` } }]), textReply('done')])
  const config: AgentConfig = { name: 'railed', model: 'm', adapter, toolPreset: 'full', tools: ['bash'], cwd: dir }
  const result = await new Agent(config, registry, new ToolExecutor(registry)).run('make the marker')
  const offered = (adapter.calls[0].options.tools ?? []).map((t) => t.name)
  return { result, marker, offered }
}

describe('new ToolRegistry({ disallow })', () => {
  test("toolPreset 'full' + tools ['bash'] with bash on the rail never runs bash", async () => {
    // Without the rail the very same run creates the marker: the command is real.
    const open = await bashRun(new ToolRegistry())
    expect(open.offered).toContain('bash')
    expect(fs.existsSync(open.marker)).toBe(true)
    fs.rmSync(open.marker)

    const railed = await bashRun(new ToolRegistry({ disallow: ['bash'] }))
    // full ∩ ['bash'] is bash alone, which the rail takes away.
    expect(railed.offered).toEqual([])
    expect(fs.existsSync(railed.marker)).toBe(false)
    expect(railed.result.success).toBe(true)
    expect(railed.result.messages[1]).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'b1', content: notGranted('bash'), is_error: true }],
    })
    expect(railed.result.toolCalls).toEqual([{ toolName: 'bash', input: { command: `touch ${railed.marker}` }, output: notGranted('bash'), duration: expect.any(Number) }])
    expect(warn).toHaveBeenCalledWith(railWarning(['bash']))
    // The framework's own rail stays the original's empty one.
    expect(AGENT_FRAMEWORK_DISALLOWED).toEqual([])
  })

  test('a runtime tool on the rail is neither offered nor run', async () => {
    const registry = new ToolRegistry({ disallow: ['deploy'] })
    const ran: string[] = []
    for (const name of ['deploy', 'status']) {
      registry.register(defineTool({ name, description: name, inputSchema: z.object({}), execute: async () => { ran.push(name); return { data: name } } }), { runtimeAdded: true })
    }
    const adapter = new MockAdapter([
      toolReply([{ id: 'd', name: 'deploy', input: {} }, { id: 's', name: 'status', input: {} }]),
      textReply('done'),
    ])
    const agent = new Agent({ name: 'rt', model: 'm', adapter }, registry, new ToolExecutor(registry))
    const result = await agent.run('ship it')
    expect(adapter.calls[0].options.tools?.map((t) => t.name)).toEqual(['status'])
    expect(ran).toEqual(['status'])
    expect(result.messages[1].content).toEqual([
      { type: 'tool_result', tool_use_id: 'd', content: notGranted('deploy'), is_error: true },
      { type: 'tool_result', tool_use_id: 's', content: 'status' },
    ])
    expect(warn).toHaveBeenCalledWith(railWarning(['deploy']))
    // The registry itself still lists it: the rail is about grants, not registration.
    expect(registry.has('deploy')).toBe(true)
    expect(registry.toRuntimeToolDefs().map((d) => d.name)).toEqual(['deploy', 'status'])
  })

  test('resolveTools warns only for names the agent would have had', () => {
    const registry = new ToolRegistry({ disallow: ['bash', 'grep', 'bash'] })
    registerBuiltInTools(registry)
    const adapter = new MockAdapter([])
    const names = (options: object) =>
      (new AgentRunner(adapter, registry, new ToolExecutor(registry), { model: 'm', ...options }) as any).resolveTools().map((d: any) => d.name)
    expect(names({ toolPreset: 'readonly' })).toEqual(['file_read', 'glob'])
    expect(warn.mock.calls).toEqual([[railWarning(['grep'])]])
    warn.mockClear()
    expect(names({ toolPreset: 'readwrite', disallowedTools: ['grep'] })).toEqual(['file_read', 'file_write', 'file_edit', 'glob'])
    expect(names({})).toEqual([])
    expect(warn).not.toHaveBeenCalled()
    expect(names({ toolPreset: null })).toEqual(['file_read', 'file_write', 'file_edit', 'glob'])
    expect(warn.mock.calls).toEqual([[railWarning(['bash', 'grep'])]])
  })

  test('ToolExecutor.execute refuses a railed name with the not-granted text, before the gate', async () => {
    const registry = new ToolRegistry({ disallow: ['bash'] })
    registerBuiltInTools(registry)
    const gate = jest.fn(() => ({ action: 'allow' as const }))
    const executor = new ToolExecutor(registry, { onToolCall: gate })
    const ctx: ToolUseContext = { agent: { name: 'direct', role: 'r', model: 'm' }, cwd: dir }
    const marker = path.join(dir, 'direct-marker')
    expect(await executor.execute('bash', { command: `touch ${marker}` }, ctx)).toEqual({ data: notGranted('bash'), isError: true })
    expect(await executor.executeBatch([{ id: 'x', name: 'bash', input: { command: `touch ${marker}` } }], ctx)).toEqual(
      new Map([['x', { data: notGranted('bash'), isError: true }]]),
    )
    expect(fs.existsSync(marker)).toBe(false)
    expect(gate).not.toHaveBeenCalled()
    // A tool off the rail goes through as ever (and meets the gate).
    fs.writeFileSync(path.join(dir, 'a.txt'), 'hello')
    const read = await executor.execute('file_read', { path: path.join(dir, 'a.txt') }, ctx)
    expect(read.isError).toBeFalsy()
    expect(read.data).toContain('hello')
    expect(gate).toHaveBeenCalledTimes(1)
    // Calling the tool object directly is not an execution through the registry: the rail is
    // the registry's, as the grants are.
  })

  test('invalid options are a TypeError with the kernel text; empty ones make no rail', () => {
    const objectText = (got: string) => `ToolRegistry: the options must be an object such as { disallow: ['bash'] }, got ${got}`
    const arrayText = (got: string) => `ToolRegistry: options.disallow must be an array of tool names, got ${got}`
    const entryText = (i: number) => `ToolRegistry: options.disallow must hold non-empty tool names; entry ${i} is not one`
    const cases: Array<[unknown, string]> = [
      [null, objectText('null')],
      [5, objectText('a number')],
      ['bash', objectText('a string')],
      [['bash'], objectText('an array')],
      [{ disallow: 'bash' }, arrayText('a string')],
      [{ disallow: null }, arrayText('null')],
      [{ disallow: new Set(['bash']) }, arrayText('an object')],
      [{ disallow: ['bash', 1] }, entryText(1)],
      [{ disallow: [''] }, entryText(0)],
      [{ disallow: ['a', undefined] }, entryText(1)],
    ]
    for (const [options, text] of cases) {
      expect(() => new ToolRegistry(options as any)).toThrow(new TypeError(text))
      try {
        new ToolRegistry(options as any)
      } catch (e) {
        expect(e).toBeInstanceOf(TypeError)
      }
    }
    for (const options of [undefined, {}, { disallow: [] }, { disallow: undefined }]) {
      const registry = new ToolRegistry(options as any)
      registry.register(defineTool({ name: 'bash', description: 'b', inputSchema: z.object({}), execute: async () => ({ data: 'ran' }) }))
      expect((registry as any)._toolList()).toBe('[["bash",false]]')
    }
  })
})
