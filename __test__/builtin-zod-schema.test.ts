// The built-in tools' inputSchema is a Zod schema, as in the original: built lazily from the
// project's `zod` (3 or 4), converting to the LLM schema of §11.2, and accepting exactly the
// inputs the kernel's own validation accepts. The kernel never needs it: without zod, runs
// with built-in tools work and only reading inputSchema fails, with a clear message.
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'

type Core = typeof import('../index')

let root: string
beforeAll(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-zod-view-')))
  fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\nbeta\n')
})
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/**
 * The package loaded with `zod` resolving to `zodModule` (a fresh module registry). The
 * schemas are built lazily, so they are read here, while the mock is in force; `error` is
 * what the first read threw, if it did.
 */
function loadWith(zodModule: () => unknown): { core: Core; error: unknown } {
  let core: Core | undefined
  let error: unknown
  jest.isolateModules(() => {
    jest.doMock('zod', zodModule)
    core = require('../index')
    try {
      for (const tool of core!.ALL_BUILT_IN_TOOLS_WITH_DELEGATE) void tool.inputSchema
    } catch (e) {
      error = e
    }
  })
  jest.dontMock('zod')
  return { core: core!, error }
}

const values: unknown[] = ['s', '', 1, 0, -1, 1.5, 2 ** 60, true, false, null, [], {}, ['x'], { a: 1 }]

/** A valid input per tool, then that input with each field absent or replaced by each value. */
function corpus(tool: string): unknown[] {
  const base: Record<string, Record<string, unknown>> = {
    bash: { command: 'true' },
    file_read: { path: `${root}/a.txt` },
    file_write: { path: `${root}/w.txt`, content: 'x' },
    file_edit: { path: `${root}/missing.txt`, old_string: 'a', new_string: 'b' },
    grep: { pattern: 'alpha', path: root },
    glob: { path: root },
    delegate_to_agent: { target_agent: 'b', prompt: 'p' },
  }
  const fields: Record<string, string[]> = {
    bash: ['command', 'timeout'],
    file_read: ['path', 'offset', 'limit'],
    file_write: ['path', 'content'],
    file_edit: ['path', 'old_string', 'new_string', 'replace_all'],
    grep: ['pattern', 'glob', 'maxResults'],
    glob: ['pattern', 'maxFiles'],
    delegate_to_agent: ['target_agent', 'prompt'],
  }
  const out: unknown[] = [base[tool], { ...base[tool], extra: 1 }, null, [], 'x', 5]
  for (const f of fields[tool]) {
    const { [f]: _omit, ...without } = base[tool]
    out.push(without)
    for (const v of values) {
      // Keep a valid bash command and real paths: only the types and checks are under test.
      if ((f === 'command' || f === 'path') && typeof v === 'string') continue
      out.push({ ...base[tool], [f]: v })
    }
  }
  return out
}

async function agreement(core: Core) {
  const registry = new core.ToolRegistry()
  core.registerBuiltInTools(registry, { includeDelegateTool: true })
  const executor = new core.ToolExecutor(registry)
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root }
  const disagreements: unknown[] = []
  let checked = 0
  for (const tool of core.ALL_BUILT_IN_TOOLS_WITH_DELEGATE) {
    for (const input of corpus(tool.name)) {
      const res = await executor.execute(tool.name, input as Record<string, unknown>, ctx)
      const kernelAccepts = !res.data.startsWith(`Invalid input for tool "${tool.name}"`)
      const zodAccepts = (tool.inputSchema as any).safeParse(input).success as boolean
      checked += 1
      if (kernelAccepts !== zodAccepts) disagreements.push({ tool: tool.name, input, kernelAccepts, zodAccepts, data: res.data })
    }
  }
  return { checked, disagreements }
}

describe.each([
  ['zod 3 (zod main entry)', () => jest.requireActual('zod'), 3],
  ['zod 4 (zod/v4, as zod 4 main entry)', () => jest.requireActual('zod/v4'), 4],
])('with %s', (_name, zodModule, major) => {
  const { core } = loadWith(zodModule)

  test('inputSchema is a Zod schema of that version that converts to the §11.2 schema the LLM sees', () => {
    const registry = new core.ToolRegistry()
    core.registerBuiltInTools(registry, { includeDelegateTool: true })
    const shown = registry.toToolDefs()
    for (const [i, tool] of core.ALL_BUILT_IN_TOOLS_WITH_DELEGATE.entries()) {
      const schema = tool.inputSchema as any
      if (major === 4) expect(schema._zod.def.type).toBe('object')
      else expect([schema._zod, schema._def.typeName]).toEqual([undefined, 'ZodObject'])
      expect(JSON.stringify(core.zodToJsonSchema(tool.inputSchema))).toBe(JSON.stringify(shown[i].inputSchema))
      // Built once and kept.
      expect(tool.inputSchema).toBe(tool.inputSchema)
    }
    expect(Object.keys(core.fileReadTool)).toEqual(['name', 'description', 'inputSchema', 'execute'])
  })

  test('parse / safeParse work as in the original', () => {
    expect(core.fileReadTool.inputSchema.parse({ path: '/x', offset: 2, extra: true })).toEqual({ path: '/x', offset: 2 })
    expect(() => core.fileReadTool.inputSchema.parse({ path: 1 })).toThrow()
    const r = core.grepTool.inputSchema.safeParse({ pattern: 'x', maxResults: 0 })
    expect(r.success).toBe(false)
    expect(core.delegateToAgentTool.inputSchema.safeParse({ target_agent: '', prompt: 'p' }).success).toBe(false)
  })

  test('safeParse accepts exactly what the kernel validation accepts', async () => {
    const { checked, disagreements } = await agreement(core)
    expect(checked).toBeGreaterThan(250)
    expect(disagreements).toEqual([])
  })
})

test('with zod 3 the issue texts are the kernel\'s (the original\'s Zod 3 texts)', async () => {
  const { core } = loadWith(() => jest.requireActual('zod'))
  const input = { path: 1, offset: -1.5 }
  const issues = core.fileReadTool.inputSchema.safeParse(input).error!.issues.map((i: any) => `${i.path.join('.')}: ${i.message}`)
  const direct = await core.fileReadTool.execute(input as any, { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root })
  expect(direct.data).toBe(`Invalid input for tool "file_read":\n${issues.map((l: string) => `  \u2022 ${l}`).join('\n')}`)
})

test('without zod, built-in tools register and run; reading inputSchema says what is missing', async () => {
  const { core, error } = loadWith(() => {
    throw new Error("Cannot find module 'zod' from 'lib/builtin.js'")
  })
  expect(error).toEqual(
    new Error(
      `@oma-kernel/core: the built-in tools' inputSchema is a Zod schema, built from the peer dependency "zod" (^3.25 || ^4), which could not be loaded: Cannot find module 'zod' from 'lib/builtin.js'. Install it with: npm install zod`,
    ),
  )
  const registry = new core.ToolRegistry()
  core.registerBuiltInTools(registry)
  expect(registry.toToolDefs().map((d) => d.name)).toEqual(['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob'])
  const executor = new core.ToolExecutor(registry)
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root }
  expect(await executor.execute('file_read', { path: `${root}/a.txt` }, ctx)).toEqual({ data: '1\talpha\n2\tbeta', isError: false })
  expect((await executor.execute('file_read', { path: 1 }, ctx)).data).toMatch(/^Invalid input for tool "file_read":/)
})

test('a copy of a built-in tool carries its Zod schema; an assigned inputSchema replaces it for the kernel too', async () => {
  const { core } = loadWith(() => jest.requireActual('zod'))
  const { z } = jest.requireActual('zod')
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root }
  const copy = core.defineTool({ ...core.fileReadTool, name: 'read_copy' })
  expect(copy.inputSchema).toBe(core.fileReadTool.inputSchema)
  const registry = new core.ToolRegistry()
  registry.register(copy)
  // Validated by the Zod schema (as a user tool), with Zod 3's texts.
  expect((await new core.ToolExecutor(registry).execute('read_copy', { path: 1 }, ctx)).data).toBe(
    'Invalid input for tool "read_copy":\n  \u2022 path: Expected string, received number',
  )

  const tool = core.globTool as any
  tool.inputSchema = z.object({ only: z.string() })
  const r2 = new core.ToolRegistry()
  r2.register(tool)
  expect(r2.toToolDefs()[0].inputSchema).toEqual({ type: 'object', properties: { only: { type: 'string' } }, required: ['only'] })
  expect(Object.keys(tool)).toEqual(['name', 'description', 'inputSchema', 'execute'])
})

test('the executor reports built-in input errors with exactly the texts Zod 3 gives for the original schemas', async () => {
  const { core } = loadWith(() => jest.requireActual('zod'))
  const registry = new core.ToolRegistry()
  core.registerBuiltInTools(registry, { includeDelegateTool: true })
  const executor = new core.ToolExecutor(registry)
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root }
  const exotic: unknown[] = [NaN, Infinity, -Infinity, -0.5, 0.5, 2, undefined, () => 1, new Date(0), new Map(), new Set(), 10n, Symbol('s'), Promise.resolve(1)]
  const mismatches: unknown[] = []
  let invalid = 0
  for (const tool of core.ALL_BUILT_IN_TOOLS_WITH_DELEGATE) {
    const keys = Object.keys((core.zodToJsonSchema(tool.inputSchema) as any).properties)
    const inputs: unknown[] = [...corpus(tool.name), undefined, () => 1, new Date(0), new Map(), 'x', true]
    for (const v of [...values, ...exotic]) {
      // Every field at once: several issues, in Zod's (schema key) order.
      inputs.push(Object.fromEntries(keys.map((k) => [k, v])))
      // Each field alone alongside an unknown key (stripped by Zod: never an issue).
      for (const k of keys) inputs.push({ [k]: v, unknown_key: 10n })
    }
    for (const input of inputs) {
      const parsed = (tool.inputSchema as any).safeParse(input)
      if (parsed.success) continue
      invalid += 1
      const want = `Invalid input for tool "${tool.name}":\n${parsed.error.issues.map((i: any) => `  \u2022 ${i.path.join('.')}: ${i.message}`).join('\n')}`
      const viaExecutor = (await executor.execute(tool.name, input as Record<string, unknown>, ctx)).data
      const direct = (await (tool as any).execute(input, ctx)).data
      if (viaExecutor !== want || direct !== want) mismatches.push({ tool: tool.name, input: String(input), want, viaExecutor, direct })
    }
  }
  expect(invalid).toBeGreaterThan(500)
  expect(mismatches).toEqual([])
  // The cases the brief names, spelled out.
  const text = async (name: string, input: unknown) => (await executor.execute(name, input as any, ctx)).data
  expect(await text('file_read', { offset: 2 })).toBe('Invalid input for tool "file_read":\n  \u2022 path: Required')
  expect(await text('file_read', { path: 'a.txt', offset: 1.5, limit: -2 })).toBe(
    'Invalid input for tool "file_read":\n  \u2022 offset: Expected integer, received float\n  \u2022 limit: Number must be greater than 0',
  )
  expect(await text('bash', { command: 1, timeout: '5' })).toBe(
    'Invalid input for tool "bash":\n  \u2022 command: Expected string, received number\n  \u2022 timeout: Expected number, received string',
  )
  expect(await text('file_edit', { path: 'a', old_string: 'a', new_string: 'b', replace_all: 'yes' })).toBe(
    'Invalid input for tool "file_edit":\n  \u2022 replace_all: Expected boolean, received string',
  )
  expect(await text('glob', [])).toBe('Invalid input for tool "glob":\n  \u2022 : Expected object, received array')
  // Unknown keys are stripped, not reported: the input is valid.
  expect(await text('file_read', { path: `${root}/a.txt`, extra: 10n })).toBe('1\talpha\n2\tbeta')
})

test('without zod the executor still gives the Zod 3 texts for built-in input errors', async () => {
  const { core } = loadWith(() => {
    throw new Error("Cannot find module 'zod'")
  })
  const registry = new core.ToolRegistry()
  core.registerBuiltInTools(registry)
  const executor = new core.ToolExecutor(registry)
  const ctx = { agent: { name: 'a', role: 'r', model: 'm' }, cwd: root }
  expect((await executor.execute('grep', { path: 5, maxResults: 0 }, ctx)).data).toBe(
    'Invalid input for tool "grep":\n  \u2022 pattern: Required\n  \u2022 path: Expected string, received number\n  \u2022 maxResults: Number must be greater than 0',
  )
})
