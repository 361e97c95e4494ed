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
// A watchdog fails the run (exit 2) if no run completes for 30 s: a deadlock shows as a
// failure, not as a hang. Usage: node bench/soak.js [--quick]   (--quick: a tenth of the work)
const path = require('path')
const v8 = require('v8')
const vm = require('vm')
const kernel = require(path.resolve(__dirname, '..'))
const { Agent, ToolRegistry, ToolExecutor, defineTool } = kernel
const { z } = require('zod')

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')
const quick = process.argv.includes('--quick')
const scale = quick ? 10 : 1

let lastProgress = Date.now()
const watchdog = setInterval(() => {
  if (Date.now() - lastProgress > 30_000) {
    console.error('soak: no run completed for 30 s (deadlock?)')
    process.exit(2)
  }
}, 1000)
watchdog.unref()

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
function sample(label, runs) {
  gc()
  const m = process.memoryUsage()
  return { label, runs, rss: m.rss, heap: m.heapUsed, external: m.external }
}
function check(r) {
  if (!r.success || r.output !== 'ok' || r.toolCalls.length !== 1) throw new Error('soak: bad run ' + JSON.stringify(r))
  lastProgress = Date.now()
}

async function s1() {
  const agents = 1000
  const waves = 20 / scale
  const list = Array.from({ length: agents }, (_, i) => new Agent({ name: 'a' + i, model: 'm', adapter: adapterFor(i), tools: ['add'] }, registry, executor))
  const out = [sample('S1 start', 0)]
  for (let w = 1; w <= waves; w++) {
    const results = await Promise.all(list.map((a) => a.run('go')))
    results.forEach(check)
    if (w % Math.max(1, waves / 10) === 0) out.push(sample('S1', w * agents))
  }
  return out
}

async function s2() {
  const total = 100_000 / scale
  const out = [sample('S2 start', 0)]
  for (let i = 1; i <= total; i++) {
    const agent = new Agent({ name: 's', model: 'm', adapter: adapterFor(i % 1000), tools: ['add'] }, registry, executor)
    check(await agent.run('go'))
    if (i % (total / 10) === 0) out.push(sample('S2', i))
  }
  return out
}

async function s3() {
  const total = 100_000 / scale
  const batch = 16
  const out = [sample('S3 start', 0)]
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
    if (done % (total / 10) < batch) out.push(sample('S3', done))
  }
  return out
}

;(async () => {
  const rows = [...await s1(), ...await s2(), ...await s3()]
  console.log(`| workload | runs / calls | RSS MB | heapUsed MB | external MB |`)
  console.log(`|---|---|---|---|---|`)
  for (const r of rows) console.log(`| ${r.label} | ${r.runs} | ${mb(r.rss)} | ${mb(r.heap)} | ${mb(r.external)} |`)
  clearInterval(watchdog)
})().catch((e) => { console.error(e); process.exit(1) })
