// The built-in file tools, sandboxed to a temp directory, through an Agent.
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { Agent, ToolExecutor, ToolRegistry, registerBuiltInTools, BUILT_IN_TOOLS } from '@oma-kernel/core'
import { resp, scripted } from './mock'

let dir = ''
beforeEach(() => { dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-packed-test-'))) })
afterEach(() => { fs.rmSync(dir, { recursive: true, force: true }) })

test('file_write, file_read, grep and glob inside the sandbox; outside is refused', async () => {
  const file = path.join(dir, 'a', 'notes.md')
  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  expect(BUILT_IN_TOOLS.map((t) => t.name)).toEqual(expect.arrayContaining(['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob']))
  const adapter = scripted([
    resp([{ type: 'tool_use', id: 'w', name: 'file_write', input: { path: file, content: 'alpha\nbeta\n' } }], 'tool_use'),
    resp([
      { type: 'tool_use', id: 'r', name: 'file_read', input: { path: file } },
      { type: 'tool_use', id: 'g', name: 'grep', input: { pattern: 'bet', path: dir } },
      { type: 'tool_use', id: 'o', name: 'glob', input: { pattern: '**/*.md', path: dir } },
      { type: 'tool_use', id: 'x', name: 'file_read', input: { path: '/etc/hostname' } },
    ], 'tool_use'),
    resp([{ type: 'text', text: 'done' }]),
  ])
  const agent = new Agent({ name: 'fs', model: 'm', adapter, cwd: dir, toolPreset: 'readwrite' }, registry, new ToolExecutor(registry))
  const r = await agent.run('go')
  expect(r.success).toBe(true)
  const out = r.toolCalls.map((c) => c.output)
  expect(out[0]).toBe(`Created "${file}" (3 lines, 11 bytes).`)
  expect(out[1]).toBe('1\talpha\n2\tbeta')
  expect(out[2]).toContain('notes.md')
  expect(out[3]).toContain('notes.md')
  expect(out[4]).toMatch(/^Path "\/etc\/hostname" is outside the agent's working directory/)
  expect(fs.readFileSync(file, 'utf8')).toBe('alpha\nbeta\n')
})
