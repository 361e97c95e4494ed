// The built-in tools through the whole stack: registry (plain JSON Schema, validated natively),
// executor, runner grants and the tool context's sandbox root.
import * as fs from 'fs/promises'
import * as os from 'os'
import * as path from 'path'
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools, LLMResponse, ContentBlock } from '../index'

const resp = (content: ContentBlock[]): LLMResponse => ({ id: 'r', model: 'm', stop_reason: 'x', usage: { input_tokens: 1, output_tokens: 1 }, content })

let dir: string
beforeEach(async () => { dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'oma-agent-'))) })
afterEach(async () => { await fs.rm(dir, { recursive: true, force: true }) })

function agentWith(responses: LLMResponse[], extra: Record<string, unknown>) {
  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  let i = 0
  const adapter = { name: 'mock', chat: async () => responses[Math.min(i++, responses.length - 1)] }
  return new Agent({ name: 'fs', model: 'm', adapter, cwd: dir, ...extra } as any, registry, new ToolExecutor(registry))
}

test('readwrite preset: file_write then file_read inside the agent cwd; bash is not granted', async () => {
  const file = path.join(dir, 'notes', 'a.txt')
  const agent = agentWith([
    resp([{ type: 'tool_use', id: 'w', name: 'file_write', input: { path: file, content: 'one\ntwo\n' } }]),
    resp([
      { type: 'tool_use', id: 'r', name: 'file_read', input: { path: file } },
      { type: 'tool_use', id: 'b', name: 'bash', input: { command: 'echo hi' } },
    ]),
    resp([{ type: 'text', text: 'done' }]),
  ], { toolPreset: 'readwrite' })
  const r = await agent.run('write and read')
  expect(r.success).toBe(true)
  expect(await fs.readFile(file, 'utf8')).toBe('one\ntwo\n')
  expect(r.toolCalls.map((c) => [c.toolName, c.output])).toEqual([
    ['file_write', `Created "${file}" (3 lines, 8 bytes).`],
    ['file_read', '1\tone\n2\ttwo'],
    ['bash', 'Tool "bash" is not granted to this agent. Built-in tools are opt-in: grant it via the agent\'s "tools" allowlist or "toolPreset" (or set the orchestrator\'s "defaultToolPreset").'],
  ])
})

test('the sandbox root is the agent cwd: a path outside is refused with the contract text', async () => {
  const agent = agentWith([
    resp([{ type: 'tool_use', id: 'r', name: 'file_read', input: { path: '/etc/hostname' } }]),
    resp([{ type: 'text', text: 'ok' }]),
  ], { toolPreset: 'readonly' })
  const r = await agent.run('read')
  expect(r.toolCalls[0].output).toBe(`Path "/etc/hostname" is outside the agent's working directory "${dir}". Built-in filesystem tools are sandboxed to this directory; set OrchestratorConfig.defaultCwd / AgentConfig.cwd to widen it, or AgentConfig.cwd: null to disable the sandbox.`)
  expect(r.messages[1].content[0]).toMatchObject({ type: 'tool_result', is_error: true })
})

test('built-in input is validated before execute, with the texts Zod 3 gives for the original schema', async () => {
  const agent = agentWith([
    resp([{ type: 'tool_use', id: 'r', name: 'file_read', input: { offset: 2 } }]),
    resp([{ type: 'text', text: 'ok' }]),
  ], { tools: ['file_read'] })
  const r = await agent.run('read')
  expect(r.toolCalls[0].output).toBe('Invalid input for tool "file_read":\n  • path: Required')
})
