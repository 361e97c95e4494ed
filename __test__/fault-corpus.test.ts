// The fault corpus of issue 13: misbehaving JS adapters, tools and callbacks (helpers/fault-child.js),
// run in child processes with Node's default `--unhandled-rejections=throw`, so that a crash or
// an unhandled rejection kills the child, not Jest. Every case must end, leave a replayable
// history (every tool_use answered) and pass its own check; every child must exit 0.
import { spawn } from 'node:child_process'
import path from 'node:path'

const CHILD = path.join(__dirname, 'helpers', 'fault-child.js')
// eslint-disable-next-line @typescript-eslint/no-var-requires
const NAMES: string[] = require('./helpers/fault-child.js').CASE_NAMES
const BATCHES = 4
// Only a bound that ends a hang: each case has its own 10 s watchdog inside the child.
const KILL_AFTER_MS = 150_000

interface CaseOutcome { name: string; ended: boolean; hung?: boolean; replayable: boolean; failures: string[]; summary?: unknown }
interface ChildRun { names: string[]; code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; done: boolean; killed: boolean }

function runChild(names: string[]): Promise<ChildRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--unhandled-rejections=throw', CHILD, ...names], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let killed = false
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => { killed = true; child.kill('SIGKILL') }, KILL_AFTER_MS)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ names, code, signal, stdout, stderr, done: stdout.includes('\nFAULT-DONE\n') || stdout.startsWith('FAULT-DONE\n'), killed })
    })
  })
}

const outcomes = new Map<string, CaseOutcome>()
/** Which child ran a case, and the case it was running when it died (if it did). */
const childOf = new Map<string, ChildRun>()
let runs: ChildRun[] = []

function lastStarted(run: ChildRun): string | undefined {
  const starts = run.stdout.split('\n').filter((l) => l.startsWith('FAULT-START ')).map((l) => JSON.parse(l.slice(12)) as string)
  return starts[starts.length - 1]
}

beforeAll(async () => {
  const batches: string[][] = Array.from({ length: BATCHES }, () => [])
  NAMES.forEach((n, i) => batches[i % BATCHES].push(n))
  runs = await Promise.all(batches.map(runChild))
  for (const run of runs) {
    for (const n of run.names) childOf.set(n, run)
    for (const line of run.stdout.split('\n')) {
      if (line.startsWith('FAULT-CASE ')) {
        const o = JSON.parse(line.slice(11)) as CaseOutcome
        outcomes.set(o.name, o)
      }
    }
  }
}, KILL_AFTER_MS + 30_000)

test('the corpus holds at least 40 misbehaving adapters, tools and callbacks', () => {
  expect(NAMES.length).toBeGreaterThanOrEqual(40)
  expect(new Set(NAMES).size).toBe(NAMES.length)
})

test('no child process dies: no crash, no unhandled rejection, no hang', () => {
  for (const run of runs) {
    const died = !run.done || run.code !== 0 || run.signal !== null
    // A late rejection surfaces in whichever case runs next: the name is a hint, the stderr the proof.
    const report = died ? `child died (code ${run.code}, signal ${run.signal}${run.killed ? ', killed after the bound' : ''}) while running ${JSON.stringify(lastStarted(run))}:\n${run.stderr.slice(0, 4000)}` : ''
    expect(report).toBe('')
    expect(run.stderr).not.toMatch(/Unhandled|uncaught|unhandledRejection/i)
  }
})

test.each(NAMES)('%s', (name) => {
  const o = outcomes.get(name)
  if (o === undefined) {
    const run = childOf.get(name)!
    throw new Error(`no outcome: its child died while running ${JSON.stringify(lastStarted(run))} (code ${run.code}, signal ${run.signal})\n${run.stderr.slice(0, 2000)}`)
  }
  expect(o.failures).toEqual([])
  expect(o.hung ?? false).toBe(false)
  expect(o.ended).toBe(true)
  expect(o.replayable).toBe(true)
})
