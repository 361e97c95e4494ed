// The fault corpus of misbehaving HTTP endpoints (stalls, trickles, cut streams, endless
// bodies, heads and SSE lines, redirects to another origin and loops, broken framing, invalid
// UTF-8, huge error bodies, …) against the native adapters: openai and anthropic, `chat` on the
// JS thread's HTTP client, `chat` on the I/O thread (a worker thread), and `stream`. The corpus
// (helpers/fault-http-child.js) runs in a child process: a crash or abort of the process is
// seen as such. Every call must end with its expected result or clear error, nothing may reach
// another origin, and the process's peak memory stays bounded.
import * as path from 'path'
import { spawn } from 'child_process'

const CHILD = path.resolve(__dirname, 'helpers', 'fault-http-child.js')

interface Line {
  start?: string
  fault?: string
  provider?: string
  mode?: string
  outcome?: string
  message?: string
  problems?: string[]
  done?: boolean
  calls?: number
  faults?: number
  peakRssKiB?: number | null
  crashed?: string
}

let lines: Line[] = []
let exit: { code: number | null; signal: NodeJS.Signals | null; stderr: string }

beforeAll(async () => {
  const child = spawn(process.execPath, [CHILD], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])))
  lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  exit = { code, signal, stderr: stderr.slice(-2000) }
}, 600_000)

test('the process ran the whole corpus and exited normally', () => {
  const started = lines.filter((l) => l.start !== undefined)
  const ended = lines.filter((l) => l.fault !== undefined)
  // If the process died, the calls started and never ended name the culprits.
  const unfinished = started.filter((s) => !ended.some((e) => e.fault === s.start && e.provider === s.provider && e.mode === s.mode))
  expect({ ...exit, unfinished }).toEqual({ code: 0, signal: null, stderr: expect.any(String), unfinished: [] })
  const done = lines.find((l) => l.done)
  expect(done).toBeDefined()
  expect(done!.faults).toBeGreaterThanOrEqual(40)
  expect(ended.length).toBe(done!.calls)
})

test('every call ends with its expected result or error, nothing reaches another origin', () => {
  const failures = lines
    .filter((l) => l.fault !== undefined && (l.problems?.length ?? 0) > 0)
    .map((l) => `${l.fault} [${l.provider} ${l.mode}]: ${l.outcome} ${JSON.stringify(l.message ?? '')} — ${l.problems!.join('; ')}`)
  expect(failures).toEqual([])
})

test('memory stays bounded while servers send without end', () => {
  const done = lines.find((l) => l.done)
  // Linux reports the peak RSS; the limits keep it to a few hundred MB (a body of at most
  // 64 MiB at a time) where servers sending 256 MiB each grew it past a gigabyte.
  if (done?.peakRssKiB == null) return
  expect(done.peakRssKiB).toBeLessThan(1024 * 1024)
})
