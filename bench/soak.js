'use strict'
// Soak benchmark (issue 13): does memory stay flat and does nothing deadlock under long use?
// Not a test: it prints a markdown table of RSS and V8 heap samples for bench/README.md.
//
//   S1  1000 agents, each run repeatedly (1 tool round + final text per run), all agents
//       advancing together in waves; RSS / heapUsed sampled after every wave.
//   S2  100k sequential `Agent.run` calls (1 tool round + final text), sampled every 10k runs
//       (the steady-state workload of issue 18).
//   S3  100k tool calls through one ToolExecutor (`executeBatch` of 16), sampled every 10k.
//
// Each workload runs in a fresh child process, so one workload's peak does not count in the
// next one's RSS. At each sample the child pauses and the parent reads the child's
// /proc/<pid>/smaps (Linux): RSS split into V8's heap (physical pages of its spaces, new space
// apart, as the child reports them), the other anonymous memory (malloc arenas of every thread,
// the addon's mimalloc segments, thread stacks) and file-backed pages (the node binary, the
// addon, shared libraries). The child itself neither forces a GC nor reads smaps: either
// changes what it measures (a `gc()` per sample, or the megabytes of text smaps is, grew V8's
// new space from 8 to 32 MiB over S2's 100k runs, RSS 68 → 102 MB; bench/README.md, issue 18).
//
// A watchdog fails the run (exit 2) if no run completes for 30 s: a deadlock shows as a
// failure, not as a hang. Usage: node bench/soak.js [--quick] [--only s2] [--s2-runs N]
// (--quick: a tenth of the work; --only: one workload; --s2-runs: S2's length, say 500000 to
// see where V8's young generation settles; --child s1|s2|s3: internal, one workload)
const path = require('path')
const { fork } = require('child_process')
const { residentSplit, v8Spaces } = require('./memory.js')
const kernel = require(path.resolve(__dirname, '..'))
const { Agent, ToolRegistry, ToolExecutor, defineTool } = kernel
const { z } = require('zod')

const quick = process.argv.includes('--quick')
const scale = quick ? 10 : 1
const argAfter = (flag) => {
  const i = process.argv.indexOf(flag)
  return i < 0 ? undefined : process.argv[i + 1]
}
const s2Runs = Number(argAfter('--s2-runs') ?? 100_000 / scale)
if (!(Number.isInteger(s2Runs) && s2Runs >= 10)) throw new Error('soak: --s2-runs wants an integer ≥ 10')

// The workload's process (the parent only starts the children, one after the other).
const child = process.argv.indexOf('--child')
let lastProgress = Date.now()
const watchdog = child < 0 ? undefined : setInterval(() => {
  if (Date.now() - lastProgress > 30_000) {
    console.error('soak: no run completed for 30 s (deadlock?)')
    process.exit(2)
  }
}, 1000)
if (watchdog !== undefined) watchdog.unref()

const registry = new ToolRegistry()
registry.register(defineTool({
  name: 'add',
  description: 'adds two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ data: String(a + b) }),
}))
const executor = new ToolExecutor(registry)

// One tool round, then a final text; the model checks it was handed the tool's result.
function adapterFor(i) {
  return {
    name: 'soak',
    async chat(messages) {
      const last = messages[messages.length - 1]
      if (last.role === 'user' && typeof last.content[0]?.text === 'string' && messages.length === 1) {
        return { id: 'r', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 2 }, content: [{ type: 'tool_use', id: 'c' + i, name: 'add', input: { a: i, b: 1 } }] }
      }
      const result = last.content.find((b) => b.type === 'tool_result')
      if (!result || result.content !== String(i + 1)) throw new Error('soak: wrong tool result ' + JSON.stringify(last))
      return { id: 'r', model: 'm', stop_reason: 'end_turn', usage: { input_tokens: 5, output_tokens: 1 }, content: [{ type: 'text', text: 'ok' }] }
    },
  }
}

const mb = (n) => (n / 1048576).toFixed(1)
/** The child's view of a sample; the parent adds what it reads from the child's smaps. The
 *  child waits for the parent (no run progresses while its memory is read). */
function sample(label, runs) {
  const m = process.memoryUsage()
  const spaces = v8Spaces()
  const v8Heap = Object.values(spaces).reduce((a, b) => a + b, 0)
  const newSpace = spaces.new_space
  const row = { label, runs, rss: m.rss, heap: m.heapUsed, external: m.external, v8Heap, newSpace }
  return new Promise((resolve) => {
    process.once('message', resolve)
    process.send(row)
  })
}

function check(r) {
  if (!r.success || r.output !== 'ok' || r.toolCalls.length !== 1) throw new Error('soak: bad run ' + JSON.stringify(r))
  lastProgress = Date.now()
}

async function s1() {
  const agents = 1000
  const waves = 20 / scale
  const list = Array.from({ length: agents }, (_, i) => new Agent({ name: 'a' + i, model: 'm', adapter: adapterFor(i), tools: ['add'] }, registry, executor))
  await sample('S1 start', 0)
  for (let w = 1; w <= waves; w++) {
    const results = await Promise.all(list.map((a) => a.run('go')))
    results.forEach(check)
    if (w % Math.max(1, waves / 10) === 0) await (sample('S1', w * agents))
  }
}

async function s2() {
  const total = s2Runs
  const every = Math.floor(total / 10)
  await sample('S2 start', 0)
  for (let i = 1; i <= total; i++) {
    const agent = new Agent({ name: 's', model: 'm', adapter: adapterFor(i % 1000), tools: ['add'] }, registry, executor)
    check(await agent.run('go'))
    if (i % every === 0) await (sample('S2', i))
  }
}

async function s3() {
  const total = 100_000 / scale
  const batch = 16
  await sample('S3 start', 0)
  let done = 0
  while (done < total) {
    const calls = Array.from({ length: batch }, (_, k) => ({ id: 'x' + k, name: 'add', input: { a: done + k, b: 1 } }))
    const results = await executor.executeBatch(calls, { agent: { name: 's', role: 'r', model: 'm' } })
    for (let k = 0; k < batch; k++) {
      const r = results.get('x' + k)
      if (!r || r.isError || r.data !== String(done + k + 1)) throw new Error('soak: bad tool result ' + JSON.stringify(r))
    }
    done += batch
    lastProgress = Date.now()
    if (done % (total / 10) < batch) await (sample('S3', done))
  }
}

if (child >= 0) {
  const work = { s1, s2, s3 }[process.argv[child + 1]]
  work().then(() => {
    clearInterval(watchdog)
    process.disconnect()
  }).catch((e) => { console.error(e); process.exit(1) })
} else {
  ;(async () => {
    const rows = []
    const only = argAfter('--only')
    if (only !== undefined && !['s1', 's2', 's3'].includes(only)) throw new Error('soak: --only wants s1, s2 or s3')
    for (const w of only === undefined ? ['s1', 's2', 's3'] : [only]) {
      const args = ['--child', w, '--s2-runs', String(s2Runs)]
      if (quick) args.push('--quick')
      const c = fork(__filename, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      c.on('message', (row) => {
        const { anon, file } = residentSplit(c.pid) ?? { anon: NaN, file: NaN }
        rows.push({ ...row, otherAnon: anon - row.v8Heap, file })
        c.send('go on')
      })
      const code = await new Promise((resolve) => c.on('exit', resolve))
      if (code !== 0) process.exit(code ?? 1)
    }
    console.log('| workload | runs / calls | RSS MB | V8 heap MB (new space) | other anonymous MB | file-backed MB | heapUsed MB | external MB |')
    console.log('|---|---|---|---|---|---|---|---|')
    for (const r of rows) {
      console.log(`| ${r.label} | ${r.runs} | ${mb(r.rss)} | ${mb(r.v8Heap)} (${mb(r.newSpace)}) | ${mb(r.otherAnon)} | ${mb(r.file)} | ${mb(r.heap)} | ${mb(r.external)} |`)
    }
  })()
}
