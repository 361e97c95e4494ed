// The addon returns glibc's free heap memory to the OS while runs end (src/js/memory.rs): a
// second after a run ends, then at most once a second while runs keep ending, from a thread of
// its own that is gone a second after the last trim.
// Observed for real: a child process runs agents with an LD_PRELOAD shim that logs every
// malloc_trim call and the name of the thread that made it, then calls glibc's own.
import { execFileSync, spawnSync } from 'child_process'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'

const glibc = process.platform === 'linux' && !!(process.report?.getReport() as { header?: { glibcVersionRuntime?: string } })?.header?.glibcVersionRuntime
const haveCc = spawnSync('cc', ['--version'], { stdio: 'ignore' }).status === 0
const maybe = glibc && haveCc ? describe : describe.skip

const SHIM = `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int malloc_trim(size_t pad) {
  int (*real)(size_t) = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
  const char *log = getenv("TRIM_LOG");
  if (log) {
    char name[64] = {0};
    int t = open("/proc/thread-self/comm", O_RDONLY);
    if (t >= 0) { ssize_t n = read(t, name, sizeof name - 1); if (n > 0) name[n] = 0; close(t); }
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0) { if (write(fd, name, strlen(name)) < 0) {} close(fd); }
  }
  return real ? real(pad) : 0;
}
`

// Runs agents (one tool round and a final text each) for `ms` milliseconds, or once when `ms`
// is 0, then idles for 4 s; prints how long runs kept ending (first to last end, ms) and
// whether the trimmer thread is still there at the end.
const CHILD = `
const { Agent, ToolRegistry, ToolExecutor, defineTool } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
const { z } = require(${JSON.stringify(require.resolve('zod'))})
const ms = Number(process.argv[2])
const registry = new ToolRegistry()
registry.register(defineTool({ name: 'add', description: 'adds', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ data: String(a + b) }) }))
const executor = new ToolExecutor(registry)
const adapter = { name: 'm', async chat(messages) {
  return messages.length === 1
    ? { id: 'r', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'tool_use', id: 'c', name: 'add', input: { a: 1, b: 2 } }] }
    : { id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text: 'ok' }] }
} }
;(async () => {
  let first = 0, last = 0, runs = 0
  do {
    const r = await new Agent({ name: 'a', model: 'm', adapter, tools: ['add'] }, registry, executor).run('go')
    if (r.output !== 'ok' || r.toolCalls[0].output !== '3') throw new Error('bad run')
    last = Date.now()
    if (runs++ === 0) first = last
  } while (last - first < ms)
  await new Promise((resolve) => setTimeout(resolve, 4000))
  const fs = require('fs')
  const threads = fs.readdirSync('/proc/self/task').map((t) => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim())
  console.log(JSON.stringify({ runs, spanMs: last - first, trimmerLeft: threads.includes('oma-trim') }))
})()
`

maybe('memory: malloc_trim after runs (glibc)', () => {
  let dir: string
  let shim: string
  let script: string

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-trim-'))
    fs.writeFileSync(path.join(dir, 'shim.c'), SHIM)
    shim = path.join(dir, 'shim.so')
    execFileSync('cc', ['-shared', '-fPIC', '-o', shim, path.join(dir, 'shim.c'), '-ldl'])
    script = path.join(dir, 'child.js')
    fs.writeFileSync(script, CHILD)
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  function child(ms: number): { runs: number; spanMs: number; trimmerLeft: boolean; trims: string[] } {
    const log = path.join(dir, `trims-${ms}.log`)
    const out = execFileSync(process.execPath, [script, String(ms)], {
      env: { ...process.env, LD_PRELOAD: shim, TRIM_LOG: log },
      cwd: path.resolve(__dirname, '..'),
      encoding: 'utf8',
    })
    const res = JSON.parse(out.trim().split('\n').pop()!)
    const trims = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') : []
    return { ...res, trims }
  }

  test('runs that keep ending trim once a second at most, from the oma-trim thread, which then ends', () => {
    const r = child(2500)
    expect(r.runs).toBeGreaterThan(1)
    expect(r.trims.length).toBeGreaterThanOrEqual(2)
    for (const name of r.trims) expect(name).toBe('oma-trim')
    // One trim per second while runs end (the first a second after the first run), one more
    // within a second of the last run.
    expect(r.trims.length).toBeLessThanOrEqual(Math.floor(r.spanMs / 1000) + 2)
    expect(r.trimmerLeft).toBe(false)
  })

  test('a single run is trimmed after once, and the thread is gone while the process idles', () => {
    const r = child(0)
    expect(r.runs).toBe(1)
    expect(r.trims).toEqual(['oma-trim'])
    expect(r.trimmerLeft).toBe(false)
  })
})
