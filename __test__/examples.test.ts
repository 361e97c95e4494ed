// The examples (examples/*.mts) as a user's project would have them: copied into a temp project
// whose node_modules/@oma-kernel/core is a symlink to this repository, type-checked and compiled
// with tsc (--strict, module nodenext, the settings of examples/tsconfig.json), then each run in
// its own `node` against the embedded scripted model server on 127.0.0.1, and its output checked.
// The demo also runs through each "real provider" path of examples/model.mts (OMA_BASE_URL,
// OPENAI_API_KEY, ANTHROPIC_API_KEY), with the provider's base URL pointed at a scripted server on
// 127.0.0.1 (a real provider cannot be reached here).
import { spawn, spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'

const repo = path.resolve(__dirname, '..')
const examplesDir = path.join(repo, 'examples')
const EXAMPLES = ['single-agent', 'custom-tool', 'structured-output', 'streaming', 'local-model', 'builtin-tools', 'demo']
let project: string
let out: string
let compile: { status: number | null; output: string }

// Variables that would send the examples to a real provider, or change what they do.
const MODEL_VARS = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL',
  'OMA_BASE_URL', 'OMA_MODEL', 'OMA_API_KEY', 'OMA_SCRIPTED', 'OMA_DEMO_WORKSPACE']
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const k of MODEL_VARS) delete env[k]
  return { ...env, ...extra }
}

function run(name: string, extraEnv: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [path.join(out, `${name}.mjs`)], { cwd: project, env: cleanEnv(extraEnv), encoding: 'utf8', timeout: 60000 })
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

// A run that ended with status 0 and wrote nothing to stderr; the run itself, for its stdout.
function clean<R extends { status: number | null; stderr: string }>(r: R): R {
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  return r
}

beforeAll(async () => {
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-examples-')))
  const nm = path.join(project, 'node_modules')
  fs.mkdirSync(path.join(nm, '@oma-kernel'), { recursive: true })
  fs.symlinkSync(repo, path.join(nm, '@oma-kernel', 'core'), 'dir')
  fs.symlinkSync(path.join(repo, 'node_modules', 'zod'), path.join(nm, 'zod'), 'dir')
  fs.symlinkSync(path.join(repo, 'node_modules', '@types'), path.join(nm, '@types'), 'dir')
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'examples-user', private: true }))
  const src = path.join(project, 'src')
  fs.mkdirSync(src)
  for (const f of fs.readdirSync(examplesDir).filter((f) => f.endsWith('.mts'))) fs.copyFileSync(path.join(examplesDir, f), path.join(src, f))
  // Proves the package's types are in force (a module typed `any` would leave these unused).
  fs.writeFileSync(path.join(src, 'type-probe.mts'), [
    "import { Agent, ToolRegistry, ToolExecutor, createAdapter } from '@oma-kernel/core'",
    '// @ts-expect-error: `model` is required',
    "new Agent({ name: 'x' }, new ToolRegistry(), new ToolExecutor(new ToolRegistry()))",
    '// @ts-expect-error: not a provider',
    "await createAdapter('not-a-provider')",
    'export {}',
    '',
  ].join('\n'))
  fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({
    extends: path.join(examplesDir, 'tsconfig.json'),
    compilerOptions: { rootDir: 'src', outDir: 'out' },
    include: ['src/*.mts'],
  }))
  out = path.join(project, 'out')
  const tsc = require.resolve('typescript/bin/tsc')
  compile = await new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, '-p', path.join(project, 'tsconfig.json')], { cwd: project })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('close', (status) => resolve({ status, output }))
  })
}, 180000)
afterAll(() => fs.rmSync(project, { recursive: true, force: true }))

test('every example type-checks with tsc --strict (module nodenext) and compiles', () => {
  // On a type error tsc still emits, so the run tests below stay meaningful on their own.
  expect(compile.output).toBe('')
  expect(compile.status).toBe(0)
  const emitted = fs.readdirSync(out)
  for (const name of [...EXAMPLES, 'scripted-server', 'model', 'demo-model', 'run-all']) expect(emitted).toContain(`${name}.mjs`)
})

test('the examples list of run-all (npm run examples) is the one tested here', () => {
  const source = fs.readFileSync(path.join(examplesDir, 'run-all.mts'), 'utf8')
  const list = /EXAMPLES = \[([^\]]*)\]/.exec(source)![1].split(',').map((s) => s.trim().replace(/'/g, ''))
  expect(list).toStrictEqual(EXAMPLES)
})

test('single-agent: run() answers; prompt() keeps the conversation', () => {
  const r = clean(run('single-agent'))
  expect(r.stdout).toMatch(/^model: scripted model at http:\/\/127\.0\.0\.1:\d+\/v1 \(embedded;/)
  expect(r.stdout).toContain('  A generic constraint limits which types a type parameter accepts')
  expect(r.stdout).toMatch(/tokens: [1-9]\d* input, [1-9]\d* output; tool calls: 0/)
  // The second answer depends on the first being in the history the model was sent.
  expect(r.stdout).toContain('  turn 2: function isFish(p: Fish | Bird): p is Fish { return "swim" in p }')
  expect(r.stdout).toContain('  history: 4 messages; state: completed')
})

test('custom-tool: the Zod schema rejects a bad call, the model retries, the answer uses the results', () => {
  const r = clean(run('custom-tool'))
  expect(r.stdout).toContain('result  get_exchange_rate ERROR Invalid input for tool "get_exchange_rate":')
  expect(r.stdout).toContain('to: Use an upper-case ISO 4217 code such as "USD"')
  expect(r.stdout).toContain('result  get_exchange_rate {"from":"EUR","to":"JPY","rate":162.5}')
  expect(r.stdout).toContain('answer: 250 EUR is 270.00 USD or 40625.00 JPY.')
  expect(r.stdout).toMatch(/success: true; tool calls: 3; tokens: [1-9]\d* \+ [1-9]\d*/)
})

test('structured-output: an invalid first answer is fed back, the retry validates', () => {
  const r = clean(run('structured-output'))
  expect(r.stdout).toContain('    - email: Invalid email')
  expect(r.stdout).toContain('success: true; attempts: 2')
  expect(r.stdout).toContain('structured: {"name":"Ada Lovelace","email":"ada@example.org","city":"London","topics":["analytical engine","notes on Bernoulli numbers"]}')
})

test('streaming: text_delta events arrive one by one and add up to the turn\'s text', () => {
  const r = clean(run('streaming'))
  expect(r.stdout).toContain('A native addon keeps the agent loop in Rust: the model call,')
  const deltas = Number(/text_delta events: (\d+);/.exec(r.stdout)?.[1])
  expect(deltas).toBeGreaterThan(10)
  expect(r.stdout).toContain("deltas add up to the turn's text: true")
  expect(r.stdout).toMatch(/done: success=true; tokens: [1-9]\d* input, [1-9]\d* output/)
})

test('local-model: adapter.chat, and a tool call the model wrote as text is executed', () => {
  const r = clean(run('local-model'))
  expect(r.stdout).toMatch(/^model: scripted-local at http:\/\/127\.0\.0\.1:\d+\/v1 \(embedded scripted server\)/)
  expect(r.stdout).toMatch(/adapter\.chat: Hello! You said: Say hello in five words\. \([1-9]\d* \+ [1-9]\d* tokens, stop: end_turn\)/)
  expect(r.stdout).toContain('tool: count_words {"text":"the quick brown fox jumps over the lazy dog"} -> 9')
  expect(r.stdout).toContain('answer: The sentence has 9 words.')
})

test('builtin-tools: the agent edits a file in its workspace; paths leaving the sandbox are refused', () => {
  const r = clean(run('builtin-tools'))
  const workspace = /^workspace \(sandbox root\): (.+)$/m.exec(r.stdout)![1]
  expect(r.stdout).toContain(`agent -> file_edit {"path":"${workspace}/package.json","old_string":"\\"version\\": \\"1.4.2\\"","new_string":"\\"version\\": \\"1.4.3\\""}`)
  expect(r.stdout).toContain('package.json version on disk: 1.4.3')
  const outsideRefusals = r.stdout.split('\n').filter((l) => l.startsWith('  refused: ') && l.includes(`is outside the agent's working directory "${workspace}"`))
  expect(outsideRefusals).toHaveLength(3) // /etc/hostname, <workspace>/../x, a symlink to /etc
  expect(r.stdout).toContain('  refused: Path "src/index.js" must be absolute.')
  expect(r.stdout).toContain("  allowed: src/index.js:1:module.exports = require('./queue')")
  expect(r.stdout).toContain('nothing written outside the workspace: true')
  expect(fs.existsSync(workspace)).toBe(false) // cleaned up
})

function checkDemoRun(stdout: string) {
  const turns = stdout.split('\n').filter((l) => /^ {3}\d {2}/.test(l))
  expect(turns).toHaveLength(4)
  // One line per turn: turn, model time, tokens, tool, args, result size (and the tool's time).
  expect(turns.map((l) => l.slice(36).split(' ')[0])).toStrictEqual(['grep', 'file_read', 'file_write', 'answer'])
  for (const l of turns) expect(l).toMatch(/^ {3}\d {2} +\d+ ms +[1-9]\d* in +[1-9]\d* out {2}/)
  expect(turns[0]).toMatch(/grep {8}\{"pattern":"TODO","path":"[^"]+"\} {2}-> 6 lines, \d+ B in \d+ ms$/)
  expect(turns[1]).toMatch(/file_read {3}\{"path":"[^"]+\/src\/queue\.js"\} {2}-> 19 lines, \d+ B in \d+ ms$/)
  expect(turns[2]).toMatch(/file_write {2}\{"path":"[^"]+\/TODO-SUMMARY\.md","content":"<\d+ chars>"\} {2}-> 1 line, \d+ B in \d+ ms$/)
  expect(stdout).toMatch(/done: success=true, 4 turns, 3 tool calls, [1-9]\d* input \+ [1-9]\d* output tokens, \d+ ms/)
  expect(stdout).toContain('answer: Found 6 TODOs in 4 files; src/queue.js has the most (3). Created "')
}

const SUMMARY = [
  '# TODO summary', '',
  '6 TODOs in 4 files; src/queue.js has the most (3, read in full: 19 lines).', '',
  '## src/queue.js', '',
  '- line 5: make the capacity configurable through the environment',
  '- line 11: reject jobs without an id instead of accepting them',
  '- line 17: add drain() that resolves once the queue is empty', '',
  '## README.md', '', '- line 5: document the retry policy and its defaults.', '',
  '## src/worker.js', '', '- line 4: retry failed jobs with exponential back-off', '',
  "## test/queue.test.js", '', "- line 1: cover the 'queue full' error", '',
  '## Suggested order', '', '1. src/queue.js (3)', '2. README.md (1)', '3. src/worker.js (1)', '4. test/queue.test.js (1)', '',
].join('\n')

test('demo: grep, file_read and file_write over HTTP to the scripted server; the summary file is written', () => {
  const workspace = path.join(project, 'demo-workspace')
  const r = clean(run('demo', { OMA_DEMO_WORKSPACE: workspace }))
  expect(r.stdout).toMatch(/^ {2}model {6}scripted model at http:\/\/127\.0\.0\.1:\d+\/v1 \(embedded;/m)
  checkDemoRun(r.stdout)
  expect(r.stdout).toMatch(/The scripted server answered 4 chat requests over HTTP \(http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\)\./)
  expect(fs.readFileSync(path.join(workspace, 'TODO-SUMMARY.md'), 'utf8')).toBe(SUMMARY)
  expect(r.stdout).toContain(`Workspace kept: ${fs.realpathSync(workspace)}`)
})

test('demo: without OMA_DEMO_WORKSPACE the temporary workspace is removed afterwards', () => {
  const r = run('demo')
  expect(r.status).toBe(0)
  const workspace = /^ {2}workspace {2}(.+) \(the sandbox root/m.exec(r.stdout)![1]
  expect(r.stdout).toContain(`${workspace}/TODO-SUMMARY.md (`)
  expect(fs.existsSync(workspace)).toBe(false)
})

// The real-provider paths: a driver starts a scripted server with the demo's script (as a
// stand-in for Ollama, OpenAI or Anthropic) and runs the demo with the environment a user would set.
function runDemoAgainst(env: Record<string, string>) {
  const driver = path.join(out, 'provider-driver.mjs')
  fs.writeFileSync(driver, `
import { spawn } from 'node:child_process'
import { startScriptedServer } from './scripted-server.mjs'
import { scriptedDemoModel } from './demo-model.mjs'
const server = await startScriptedServer(scriptedDemoModel)
const env = JSON.parse(process.argv[2].replaceAll('$ORIGIN', server.origin))
const child = spawn(process.execPath, [new URL('./demo.mjs', import.meta.url).pathname], { env: { ...process.env, ...env } })
let stdout = '', stderr = ''
child.stdout.on('data', (d) => (stdout += d))
child.stderr.on('data', (d) => (stderr += d))
child.on('close', async (status) => {
  await server.close()
  console.log(JSON.stringify({ status, stdout, stderr, requests: server.requests }))
})
`)
  const r = spawnSync(process.execPath, [driver, JSON.stringify(env)], { cwd: project, env: cleanEnv(), encoding: 'utf8', timeout: 60000 })
  expect(r.stderr).toBe('')
  return JSON.parse(r.stdout) as { status: number; stdout: string; stderr: string; requests: Array<{ wire: string; model: string; stream: boolean }> }
}

test('demo with OMA_BASE_URL (a local OpenAI-compatible server such as Ollama) and OMA_MODEL', () => {
  const r = clean(runDemoAgainst({ OMA_BASE_URL: '$ORIGIN/v1', OMA_MODEL: 'qwen2.5:7b', OPENAI_API_KEY: 'sk-ignored' }))
  expect(r.stdout).toMatch(/^ {2}model {6}qwen2\.5:7b at http:\/\/127\.0\.0\.1:\d+\/v1 \(OMA_BASE_URL, OpenAI-compatible\)$/m)
  checkDemoRun(r.stdout)
  expect(r.stdout).not.toContain('The scripted server answered')
  expect(r.requests).toStrictEqual(Array(4).fill({ wire: 'openai', model: 'qwen2.5:7b', stream: false }))
})

test('demo with OPENAI_API_KEY (OPENAI_BASE_URL pointed at loopback)', () => {
  const r = clean(runDemoAgainst({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: '$ORIGIN/v1' }))
  expect(r.stdout).toMatch(/^ {2}model {6}OpenAI gpt-4o-mini \(OPENAI_API_KEY\)$/m)
  checkDemoRun(r.stdout)
  expect(r.requests).toStrictEqual(Array(4).fill({ wire: 'openai', model: 'gpt-4o-mini', stream: false }))
})

test('demo with ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL pointed at loopback) speaks the Anthropic wire', () => {
  const r = clean(runDemoAgainst({ ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: '$ORIGIN' }))
  expect(r.stdout).toMatch(/^ {2}model {6}Anthropic claude-sonnet-4-6 \(ANTHROPIC_API_KEY\)$/m)
  checkDemoRun(r.stdout)
  expect(r.requests).toStrictEqual(Array(4).fill({ wire: 'anthropic', model: 'claude-sonnet-4-6', stream: false }))
})

test('OMA_SCRIPTED=1 keeps the embedded model even with a key set', () => {
  const r = runDemoAgainst({ OMA_SCRIPTED: '1', OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: '$ORIGIN/v1' })
  expect(r.status).toBe(0)
  expect(r.stdout).toMatch(/^ {2}model {6}scripted model at /m)
  expect(r.requests).toStrictEqual([]) // the driver's server (standing in for OpenAI) saw nothing
})
