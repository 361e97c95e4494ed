// Worker-thread lifecycles that users' test runners and pools produce. Each scenario runs in a
// child process, so a crash of the addon shows as an exit status (139 = SIGSEGV) instead of
// killing this Jest worker. Issue 12: the first worker to load the addon used to become
// mimalloc v3's "main thread"; when it exited, the next thread reusing its thread id adopted
// the torn-down main heap and the process died on its first allocation.
import { spawnSync } from 'child_process'
import * as path from 'path'

const root = path.resolve(__dirname, '..')
const entry = path.join(root, 'index.js')
const fixtures = path.join(__dirname, 'fixtures', 'workers')
const expected = (tag: string) => ({ output: 'done ' + tag, results: ['2', '3', '4'] })

function run(cmd: string, args: string[], opts: { cwd?: string } = {}) {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd ?? root,
    encoding: 'utf8',
    env: { ...process.env, OMA_ENTRY: entry, CI: 'true', NO_COLOR: '1' },
    timeout: 180_000,
  })
  // Runners colour their summaries even when told not to in some versions: compare plain text.
  const plain = (t: string) => t.replace(/\x1b\[[0-9;]*m/g, '')
  const detail = `status ${r.status} signal ${r.signal}\n${r.stdout}\n${r.stderr}`
  return { ...r, stdout: plain(r.stdout), stderr: plain(r.stderr), detail }
}

function scenario(name: string, count: number) {
  const r = run(process.execPath, [path.join(fixtures, 'lifecycle.cjs'), name, entry, String(count)])
  if (r.status !== 0) throw new Error(`scenario ${name} failed: ${r.detail}`)
  return JSON.parse(r.stdout)
}

test('20 sequential workers load and run the addon with nothing on the main thread', () => {
  const out = scenario('sequential', 20)
  expect(out).toEqual(Array.from({ length: 20 }, (_, i) => expected('w' + i)))
})

test('workers terminated with a run in flight leave the process and later workers intact', () => {
  const out = scenario('terminate', 8)
  expect(out).toEqual([expected('after')])
})

test('the main thread and three workers at a time, over several rounds', () => {
  const out = scenario('main-and-workers', 4)
  expect(out).toHaveLength(16)
  for (let round = 0; round < 4; round++) {
    expect(out.slice(round * 4, round * 4 + 4)).toEqual([
      expected('main' + round), expected(`r${round}k0`), expected(`r${round}k1`), expected(`r${round}k2`),
    ])
  }
})

test('Jest with workerThreads: true over several files', () => {
  const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js')
  const r = run(process.execPath, [jest, '--config', path.join(fixtures, 'pool', 'jest.config.cjs'), '-w', '2', '--ci'])
  expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null })
  expect(r.stderr).toMatch(/Tests:\s+4 passed, 4 total/)
})

test('Vitest threads pool over several files', () => {
  const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs')
  const r = run(process.execPath, [vitest, 'run', '--config', path.join(fixtures, 'pool', 'vitest.config.mjs'), '--maxWorkers', '2', '--minWorkers', '1'], { cwd: path.join(fixtures, 'pool') })
  expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null })
  expect(r.stdout).toMatch(/Tests\s+4 passed \(4\)/)
})
