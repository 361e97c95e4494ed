// ESM and CommonJS: the package's `exports` map, the ESM entry (index.mjs) and Node's CommonJS
// export detection on index.js. Each check runs a small .mjs script in a child `node`, from a
// temp project whose node_modules/@oma-kernel/core is a symlink to this repository, so the
// package is resolved by name through its `exports` map as in a user's project.
import { spawn, spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { pathToFileURL } from 'node:url'

const repo = path.resolve(__dirname, '..')
// eslint-disable-next-line @typescript-eslint/no-var-requires
const cjsNames: string[] = Object.keys(require('../index.js'))
let project: string

beforeAll(() => {
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-esm-')))
  fs.mkdirSync(path.join(project, 'node_modules', '@oma-kernel'), { recursive: true })
  fs.symlinkSync(repo, path.join(project, 'node_modules', '@oma-kernel', 'core'), 'dir')
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'esm-user', private: true, type: 'module' }))
})
afterAll(() => fs.rmSync(project, { recursive: true, force: true }))

/** Runs `source` as an ES module in the temp project; returns exit status, stdout (parsed as JSON when it is) and stderr. */
function runModule(name: string, source: string) {
  const file = path.join(project, name)
  fs.writeFileSync(file, source)
  const r = spawnSync(process.execPath, [file], { cwd: project, encoding: 'utf8', timeout: 30000 })
  let json: any
  try { json = JSON.parse(r.stdout) } catch { json = undefined }
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, json }
}

test('the CommonJS entry has the full public surface (sanity for the comparisons below)', () => {
  expect(cjsNames.length).toBeGreaterThanOrEqual(43)
  for (const n of ['Agent', 'registerBuiltInTools', 'redactSensitiveObject', 'TokenBudgetExceededError']) expect(cjsNames).toContain(n)
})

test('ESM namespace of the package === CommonJS exports, name for name and value for value', () => {
  const r = runModule('namespace.mjs', `
import * as ns from '@oma-kernel/core'
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const cjs = require('@oma-kernel/core')
const direct = require(${JSON.stringify(path.join(repo, 'index.js'))})
const code = (f) => { try { f(); return 'resolved' } catch (e) { return e.code } }
console.log(JSON.stringify({
  esmEntry: import.meta.resolve('@oma-kernel/core'),
  cjsEntry: require.resolve('@oma-kernel/core'),
  pkgName: require('@oma-kernel/core/package.json').name,
  deepPath: code(() => require.resolve('@oma-kernel/core/lib/agent.js')),
  esmNames: Object.keys(ns).filter((k) => k !== 'default').sort(),
  cjsNames: Object.keys(cjs).sort(),
  notIdentical: Object.keys(cjs).filter((k) => ns[k] !== cjs[k]),
  undefinedNames: Object.keys(ns).filter((k) => ns[k] === undefined),
  defaultIsCjs: ns.default === cjs,
  directIsCjs: direct === cjs,
  errorAcross: new ns.TokenBudgetExceededError('a', 2, 1) instanceof cjs.TokenBudgetExceededError,
  registryAcross: new cjs.ToolRegistry() instanceof ns.ToolRegistry,
}))
`)
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  const o = r.json
  // Resolved through the exports map: `import` → index.mjs, `require` → index.js (symlink resolved).
  expect(o.esmEntry).toBe(pathToFileURL(path.join(repo, 'index.mjs')).href)
  expect(o.cjsEntry).toBe(path.join(repo, 'index.js'))
  expect(o.pkgName).toBe('@oma-kernel/core')
  expect(o.deepPath).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED')
  expect(o.esmNames).toStrictEqual([...cjsNames].sort())
  expect(o.cjsNames).toStrictEqual([...cjsNames].sort())
  expect(o.notIdentical).toStrictEqual([])
  expect(o.undefinedNames).toStrictEqual([])
  expect(o.defaultIsCjs).toBe(true)
  expect(o.directIsCjs).toBe(true)
  expect(o.errorAcross).toBe(true)
  expect(o.registryAcross).toBe(true)
})

test('named imports from the package name, including every name after bashTool', () => {
  const names = ['registerBuiltInTools', 'fileReadTool', 'BUILT_IN_TOOLS', 'ALL_BUILT_IN_TOOLS_WITH_DELEGATE', 'resolvePathWithinCwd',
    'collectFiles', 'SKIP_DIRS', 'matchesGlob', 'isSensitiveName', 'redactSensitiveText', 'redactSensitiveObject']
  const r = runModule('named.mjs', `
import { registerBuiltInTools, fileReadTool, BUILT_IN_TOOLS, ALL_BUILT_IN_TOOLS_WITH_DELEGATE, resolvePathWithinCwd, collectFiles, SKIP_DIRS, matchesGlob, isSensitiveName, redactSensitiveText, redactSensitiveObject } from '@oma-kernel/core'
import { Agent, ToolRegistry } from '@oma-kernel/core'
import { createRequire } from 'node:module'
const cjs = createRequire(import.meta.url)('@oma-kernel/core')
const got = { registerBuiltInTools, fileReadTool, BUILT_IN_TOOLS, ALL_BUILT_IN_TOOLS_WITH_DELEGATE, resolvePathWithinCwd, collectFiles, SKIP_DIRS, matchesGlob, isSensitiveName, redactSensitiveText, redactSensitiveObject, Agent, ToolRegistry }
const registry = new ToolRegistry()
registerBuiltInTools(registry)
console.log(JSON.stringify({
  same: Object.keys(got).filter((k) => got[k] !== undefined && got[k] === cjs[k]),
  registered: registry.list().map((t) => t.name),
  fileRead: registry.get('file_read') === fileReadTool,
}))
`)
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  expect(r.json.same).toStrictEqual([...names, 'Agent', 'ToolRegistry'])
  expect(r.json.registered).toStrictEqual(['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob'])
  expect(r.json.fileRead).toBe(true)
})

test('named imports of every name from the CommonJS file itself (Node detects all of index.js exports)', () => {
  const url = pathToFileURL(path.join(repo, 'index.js')).href
  const r = runModule('direct-cjs.mjs', `
import { ${cjsNames.join(', ')} } from ${JSON.stringify(url)}
import * as ns from ${JSON.stringify(url)}
import * as esm from '@oma-kernel/core'
const got = { ${cjsNames.join(', ')} }
console.log(JSON.stringify({
  notIdentical: Object.keys(got).filter((k) => got[k] === undefined || got[k] !== esm[k]),
  namespaceNames: Object.keys(ns).filter((k) => k !== 'default').sort(),
  defaultIsSame: ns.default === esm.default,
}))
`)
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  expect(r.json.notIdentical).toStrictEqual([])
  expect(r.json.namespaceNames).toStrictEqual([...cjsNames].sort())
  expect(r.json.defaultIsSame).toBe(true)
})

test('a name the package does not export fails the import (the checks above can fail)', () => {
  const r = runModule('missing.mjs', `import { registerBuiltInTools, notAnExport } from '@oma-kernel/core'\nconsole.log(typeof registerBuiltInTools, notAnExport)\n`)
  expect(r.status).not.toBe(0)
  expect(r.stderr).toMatch(/SyntaxError: The requested module '@oma-kernel\/core' does not provide an export named 'notAnExport'/)
})

// Types: `import` resolves to index.d.mts (re-exporting index.d.ts), `require` to index.d.ts.
// The @ts-expect-error lines prove the names are typed (an `any` module would accept them).
test('types resolve for ESM and CommonJS importers under node16, nodenext and bundler', async () => {
  fs.writeFileSync(path.join(project, 'types-esm.mts'), `
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools, fileReadTool, TokenBudgetExceededError, type AgentConfig } from '@oma-kernel/core'
import core, * as ns from '@oma-kernel/core'
const registry = new ToolRegistry()
registerBuiltInTools(registry)
const config: AgentConfig = { name: 'a', model: 'm' }
export const agent: Agent = new core.Agent(config, registry, new ns.ToolExecutor(registry))
export const executor: InstanceType<typeof ToolExecutor> = new ToolExecutor(registry)
export const err: ns.TokenBudgetExceededError = new TokenBudgetExceededError('a', 2, 1)
export const name: string = fileReadTool.name
// @ts-expect-error: not an export of the package
import { notAnExport } from '@oma-kernel/core'
// @ts-expect-error: registerBuiltInTools takes a registry
registerBuiltInTools(42)
`)
  fs.writeFileSync(path.join(project, 'types-cjs.cts'), `
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools, type AgentConfig } from '@oma-kernel/core'
import core = require('@oma-kernel/core')
const registry = new ToolRegistry()
registerBuiltInTools(registry)
const config: AgentConfig = { name: 'a', model: 'm' }
export const agent: Agent = new core.Agent(config, registry, new ToolExecutor(registry))
// @ts-expect-error: not an export of the package
import { notAnExport } from '@oma-kernel/core'
`)
  const tsc = require.resolve('typescript/bin/tsc')
  const check = (module: string, resolution: string, files: string[]) => new Promise<string>((resolve) => {
    const args = [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', module, '--moduleResolution', resolution,
      '--typeRoots', path.join(repo, 'node_modules', '@types'), '--types', 'node', ...files]
    const child = spawn(process.execPath, args, { cwd: project })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('close', (code) => resolve(`${module}/${resolution}: exit ${code}${out ? '\n' + out : ''}`))
  })
  const both = ['types-esm.mts', 'types-cjs.cts']
  // Under `bundler` every file is an ES module (no `import x = require`): the ESM file alone.
  const results = await Promise.all([check('node16', 'node16', both), check('nodenext', 'nodenext', both), check('esnext', 'bundler', ['types-esm.mts'])])
  expect(results).toStrictEqual(['node16/node16: exit 0', 'nodenext/nodenext: exit 0', 'esnext/bundler: exit 0'])
}, 120000)
