// Built-in tools and the sandbox. `registerBuiltInTools` adds bash, file_read, file_write,
// file_edit, grep and glob; they are denied until granted (`tools` or `toolPreset`). File tools
// are confined to the agent's `cwd` (default `<process cwd>/.agent-workspace`): paths outside
// it, `..` tricks and symlinks pointing out are refused, and every open goes through a handle on
// the root, so a rename or symlink swap racing with a tool cannot redirect it.
//
// The agent bumps a version with glob, file_read and file_edit; then the same tools are called
// directly (as the model would) with paths that try to leave the workspace.
// Runs on the embedded scripted model by default; OPENAI_API_KEY, ANTHROPIC_API_KEY or
// OMA_BASE_URL switch to a real model.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools, TOOL_PRESETS } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import { lastUserText, toolOutcomes, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-builtin-')))
fs.writeFileSync(path.join(workspace, 'package.json'), JSON.stringify({ name: 'tinyq', version: '1.4.2', private: true }, null, 2) + '\n')
fs.mkdirSync(path.join(workspace, 'src'))
fs.writeFileSync(path.join(workspace, 'src', 'index.js'), "module.exports = require('./queue')\n")

function scriptedModel(request: ChatRequest): ScriptedReply {
  const root = /^Workspace: (.+)$/m.exec(request.messages[0]?.text ?? lastUserText(request))?.[1] ?? '/'
  const done = toolOutcomes(request)
  const globbed = done.find((o) => o.name === 'glob')
  const read = done.find((o) => o.name === 'file_read')
  const edited = done.find((o) => o.name === 'file_edit')
  if (!globbed) return { toolCalls: [{ name: 'glob', args: { path: root, pattern: '*.json' } }] }
  const manifest = path.join(root, globbed.result.split('\n')[0])
  if (!read) return { toolCalls: [{ name: 'file_read', args: { path: manifest } }] }
  const version = /"version": "(\d+)\.(\d+)\.(\d+)"/.exec(read.result)
  if (!version) return { text: 'package.json has no version.' }
  const next = `${version[1]}.${version[2]}.${Number(version[3]) + 1}`
  if (!edited) return { toolCalls: [{ name: 'file_edit', args: { path: manifest, old_string: version[0], new_string: `"version": "${next}"` } }] }
  return { text: `Bumped ${path.basename(manifest)} from ${version[1]}.${version[2]}.${version[3]} to ${next}.` }
}

const model = await chooseModel(scriptedModel)
console.log(`model: ${model.label}`)
console.log(`workspace (sandbox root): ${workspace}`)
console.log(`toolPreset 'readwrite' grants: ${TOOL_PRESETS.readwrite.join(', ')}\n`)

const registry = new ToolRegistry()
registerBuiltInTools(registry)
const executor = new ToolExecutor(registry)
const agent = new Agent(
  { name: 'release-bot', ...model.config, toolPreset: 'readwrite', cwd: workspace, maxTurns: 6 },
  registry,
  executor,
)
const result = await agent.run(
  `Workspace: ${workspace}\nBump the patch version in the package.json of this workspace: find it with glob, read it with file_read, ` +
    'change only the version with file_edit. Use absolute paths inside the workspace. Reply with one sentence.',
  { onToolCall: (name, input) => console.log(`agent -> ${name} ${JSON.stringify(input)}`) },
)
console.log(`answer: ${result.output}`)
const pkg = JSON.parse(fs.readFileSync(path.join(workspace, 'package.json'), 'utf8')) as { version: string }
console.log(`package.json version on disk: ${pkg.version}\n`)

// The sandbox, tried directly: each call goes through the same gate as a model's call.
fs.symlinkSync('/etc', path.join(workspace, 'etc-link'))
const context = agent.buildToolContext()
const outside = path.join(path.dirname(workspace), `oma-escape-${process.pid}.txt`)
const attempts: Array<[string, Record<string, unknown>]> = [
  ['file_read', { path: '/etc/hostname' }],
  ['file_write', { path: `${workspace}/../${path.basename(outside)}`, content: 'escaped' }],
  ['file_read', { path: path.join(workspace, 'etc-link', 'hostname') }],
  ['file_read', { path: 'src/index.js' }],
  ['grep', { pattern: 'require', path: workspace }],
]
for (const [tool, input] of attempts) {
  const r = await executor.execute(tool, input, context)
  console.log(`${tool} ${JSON.stringify(input)}\n  ${r.isError ? 'refused' : 'allowed'}: ${r.data.split('\n')[0]}`)
}
console.log(`\nnothing written outside the workspace: ${!fs.existsSync(outside)}`)

await model.close()
fs.rmSync(workspace, { recursive: true, force: true })
if (!result.success || pkg.version !== '1.4.3') process.exitCode = 1
