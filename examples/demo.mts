// `npm run demo`: an agent does a small real job with the built-in tools. It greps a project for
// TODO comments, reads the file that has the most, and writes a summary file, all inside a
// temporary workspace that is also the tools' sandbox. The model is reached over HTTP through
// the package's native adapters: by default the OpenAI-compatible one, talking to an embedded
// scripted server on 127.0.0.1 (no key needed; the scripted "model" is demo-model.mts); a real
// model when OPENAI_API_KEY, ANTHROPIC_API_KEY or OMA_BASE_URL is set (see model.mts), with the
// same tools and task. The event stream is printed as it happens, one line per turn.
//
// OMA_DEMO_WORKSPACE=<dir> uses (and keeps) that directory instead of a temporary one.
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { Agent, ToolRegistry, ToolExecutor, registerBuiltInTools, type ToolUseBlock, type ToolResultBlock, type AgentRunResult, type TraceEvent } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import { scriptedDemoModel, SUMMARY_NAME } from './demo-model.mjs'

// ---- the project the agent works on --------------------------------------------------------
const PROJECT: Record<string, string> = {
  'README.md': '# tinyq\n\nA tiny in-memory job queue with retries.\n\nTODO: document the retry policy and its defaults.\n',
  'src/queue.js': [
    "'use strict'",
    '// A FIFO job queue with a fixed capacity.',
    'class Queue {',
    '  constructor(capacity = 100) {',
    '    // TODO: make the capacity configurable through the environment',
    '    this.capacity = capacity',
    '    this.jobs = []',
    '  }',
    '  push(job) {',
    "    if (this.jobs.length >= this.capacity) throw new Error('queue full')",
    '    // TODO: reject jobs without an id instead of accepting them',
    '    this.jobs.push(job)',
    '  }',
    '  shift() {',
    '    return this.jobs.shift()',
    '  }',
    '  // TODO: add drain() that resolves once the queue is empty',
    '}',
    'module.exports = { Queue }',
    '',
  ].join('\n'),
  'src/worker.js': [
    "'use strict'",
    'async function work(queue, handler) {',
    '  for (let job = queue.shift(); job; job = queue.shift()) {',
    '    // TODO: retry failed jobs with exponential back-off',
    '    await handler(job)',
    '  }',
    '}',
    'module.exports = { work }',
    '',
  ].join('\n'),
  'src/util.js': "'use strict'\nexports.sleep = (ms) => new Promise((r) => setTimeout(r, ms))\n",
  'test/queue.test.js': "// TODO: cover the 'queue full' error\n",
}

function makeWorkspace(): { dir: string; keep: boolean } {
  const given = process.env.OMA_DEMO_WORKSPACE
  const dir = given ? path.resolve(given) : fs.mkdtempSync(path.join(os.tmpdir(), 'oma-demo-'))
  for (const [name, text] of Object.entries(PROJECT)) {
    fs.mkdirSync(path.join(dir, path.dirname(name)), { recursive: true })
    fs.writeFileSync(path.join(dir, name), text)
  }
  fs.rmSync(path.join(dir, SUMMARY_NAME), { force: true })
  // The sandbox root is compared after resolving symlinks (/tmp may be one).
  return { dir: fs.realpathSync(dir), keep: Boolean(given) }
}

// ---- the run, printed as it happens -------------------------------------------------------
function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat
}

function argsText(input: Record<string, unknown>): string {
  // Paths and patterns as they are; file contents and other long texts by their length.
  const long = (v: unknown) => typeof v === 'string' && (v.includes('\n') || v.length > 100)
  const shown = Object.fromEntries(Object.entries(input).map(([k, v]) => [k, long(v) ? `<${(v as string).length} chars>` : v]))
  return oneLine(JSON.stringify(shown), 160)
}

function size(text: string): string {
  const lines = text === '' ? 0 : text.split('\n').length
  return `${lines} line${lines === 1 ? '' : 's'}, ${Buffer.byteLength(text)} B`
}

async function main(): Promise<number> {
  const { dir: workspace, keep } = makeWorkspace()
  const model = await chooseModel(scriptedDemoModel)
  const summaryPath = path.join(workspace, SUMMARY_NAME)
  const task = [
    'Summarise the open TODO comments of this project.',
    `Project directory: ${workspace}`,
    `Summary file: ${summaryPath}`,
    'Steps: 1. use grep to find every TODO in the project directory; 2. use file_read to read the file with the most TODOs;',
    '3. use file_write to write the summary file in Markdown: the TODOs grouped by file with their line numbers, then a suggested order to tackle them.',
    'Every path you pass to a tool must be absolute and inside the project directory. Finish with a one-sentence answer.',
  ].join('\n')

  console.log('oma-kernel demo: an agent with built-in tools on the native adapter')
  console.log(`  model      ${model.label}`)
  console.log(`  workspace  ${workspace} (the sandbox root: tools cannot reach outside it)`)
  console.log(`  tools      grep, file_read, file_write`)
  console.log(`  task       summarise the TODO comments into ${SUMMARY_NAME}`)
  console.log('')

  const registry = new ToolRegistry()
  registerBuiltInTools(registry)
  const agent = new Agent(
    {
      name: 'todo-summariser',
      ...model.config,
      systemPrompt: 'You are a careful engineering assistant. Use the tools; do not guess file contents.',
      tools: ['grep', 'file_read', 'file_write'],
      cwd: workspace,
      maxTurns: 8,
      maxTokens: 2048,
    },
    registry,
    new ToolExecutor(registry),
  )

  const start = Date.now()
  let turn = { n: 0, ms: 0, input: 0, output: 0, printed: false }
  const pendingTools = new Map<string, ToolUseBlock>()
  let said = ''
  const head = () => {
    const t = turn
    const cols = `${String(t.n).padStart(4)}  ${`${t.ms} ms`.padStart(7)}  ${String(t.input).padStart(6)} in ${String(t.output).padStart(5)} out  `
    const first = !t.printed
    t.printed = true
    return first ? cols : ''.padEnd(cols.length) // a second tool call of the same turn
  }
  // Traces carry the timings and each model call's token usage; the stream carries the rest.
  const toolTimes: Array<{ tool: string; input: string; ms: number }> = []
  const onTrace = (e: TraceEvent) => {
    if (e.type === 'llm_call') turn = { n: e.turn, ms: e.durationMs, input: e.tokens.input_tokens, output: e.tokens.output_tokens, printed: false }
    if (e.type === 'tool_call') toolTimes.push({ tool: e.tool, input: JSON.stringify(e.input), ms: e.durationMs })
  }
  const toolMs = (call: ToolUseBlock | undefined) => {
    const input = JSON.stringify(call?.input)
    let i = toolTimes.findIndex((t) => t.tool === call?.name && t.input === input)
    if (i < 0) i = toolTimes.findIndex((t) => t.tool === call?.name)
    return i < 0 ? '' : ` in ${toolTimes.splice(i, 1)[0].ms} ms`
  }

  let result: AgentRunResult | undefined
  console.log(`turn  ${'model'.padStart(7)}  ${'tokens'.padStart(20)}  tool / answer`)
  for await (const event of agent.stream(task, { onTrace })) {
    switch (event.type) {
      case 'text':
        said = String(event.data)
        break
      case 'tool_use': {
        const block = event.data as ToolUseBlock
        pendingTools.set(block.id, block)
        break
      }
      case 'tool_result': {
        const r = event.data as ToolResultBlock
        const call = pendingTools.get(r.tool_use_id)
        const status = r.is_error ? `error: ${oneLine(r.content, 80)}` : `${size(r.content)}${toolMs(call)}`
        console.log(`${head()}${(call?.name ?? '?').padEnd(11)} ${argsText(call?.input ?? {})}  -> ${status}`)
        said = ''
        break
      }
      case 'done':
        result = event.data as AgentRunResult
        if (said !== '') console.log(`${head()}${'answer'.padEnd(11)} ${oneLine(said, 100)}`)
        break
      case 'error':
        console.error(`run failed: ${(event.data as Error).message}`)
        break
    }
  }
  const elapsed = Date.now() - start

  let ok = result?.success === true
  if (result) {
    const turns = result.messages.filter((m) => m.role === 'assistant').length
    console.log('')
    console.log(`done: success=${result.success}, ${turns} turns, ${result.toolCalls.length} tool calls, ` +
      `${result.tokenUsage.input_tokens} input + ${result.tokenUsage.output_tokens} output tokens, ${elapsed} ms`)
    console.log(`answer: ${result.output}`)
  }
  if (fs.existsSync(summaryPath)) {
    const text = fs.readFileSync(summaryPath, 'utf8')
    console.log('')
    console.log(`${summaryPath} (${Buffer.byteLength(text)} bytes):`)
    for (const line of text.trimEnd().split('\n')) console.log(`  | ${line}`)
  } else {
    console.log(`\nno summary file was written at ${summaryPath}`)
    ok = false
  }
  if (model.server) {
    const n = model.server.requests.length
    console.log(`\nThe scripted server answered ${n} chat request${n === 1 ? '' : 's'} over HTTP (${model.server.baseURL}/chat/completions).`)
  }
  await model.close()
  if (keep) console.log(`Workspace kept: ${workspace}`)
  else fs.rmSync(workspace, { recursive: true, force: true })
  return ok ? 0 : 1
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (e: unknown) => {
    console.error(e)
    process.exitCode = 1
  },
)
