'use strict'
// W5: the same tool loop (T tool turns with 2 KB tool results, then a final answer) against a
// loopback OpenAI-compatible server in a separate process, driven by
//   - oma-kernel: the native adapter from createAdapter('openai', key, baseURL) in a minimal JS
//     loop, and the whole Agent.run (provider 'openai', runner, executor, one tool), and
//   - the `ai` SDK: generateText with @ai-sdk/openai's chat model and one tool.
// Reports client CPU (user + system of this process, all threads) per LLM call and wall time
// per run: medians of interleaved samples after a warm-up. Usage: node bench/w5-openai-loop.js [--quick]
const { fork } = require('child_process')
const path = require('path')

const quick = process.argv.includes('--quick')
const PAYLOAD = 'x'.repeat(2048)
const TOOL_SCHEMA = { type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false }
// Runs per sample; each row is the median of SAMPLES samples, the clients' samples
// interleaved so that changes in machine load hit all of them alike.
const RUNS = quick ? { 1: 20, 5: 10, 20: 4 } : { 1: 100, 5: 40, 20: 12 }
const SAMPLES = quick ? 1 : 7
// Warm-up per client and T, in ms: both the addon's JS and the ai SDK's JIT state settle well
// after 30 runs (measured: the ai SDK's T=5 cost halved between a 30- and a 300-run warm-up).
const WARMUP_MS = quick ? 50 : 1500

async function lookup(input) {
  return `${input.key}:${PAYLOAD}`
}

async function omaLoop(adapter, T) {
  const tools = [{ name: 'lookup', description: 'Look a key up', inputSchema: TOOL_SCHEMA }]
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'Look up the keys.' }] }]
  let calls = 0
  for (;;) {
    const res = await adapter.chat(messages, { model: `bench-T${T}`, tools, maxTokens: 256 })
    calls++
    messages.push({ role: 'assistant', content: res.content })
    if (res.stop_reason !== 'tool_use') return calls
    const results = []
    for (const b of res.content) {
      if (b.type === 'tool_use') results.push({ type: 'tool_result', tool_use_id: b.id, content: await lookup(b.input) })
    }
    messages.push({ role: 'user', content: results })
  }
}

function agentLoop(index, baseURL, T) {
  // A fresh Agent per run, as an application would for one task.
  const { Agent, ToolRegistry, ToolExecutor } = index
  const registry = new ToolRegistry()
  registry.register({
    name: 'lookup',
    description: 'Look a key up',
    inputSchema: { safeParse: (v) => ({ success: true, data: v }) },
    llmInputSchema: TOOL_SCHEMA,
    execute: async (input) => ({ data: await lookup(input) }),
  })
  const agent = new Agent(
    { name: 'w5', model: `bench-T${T}`, provider: 'openai', apiKey: 'bench-key', baseURL, tools: ['lookup'], maxTurns: T + 2, maxTokens: 256 },
    registry,
    new ToolExecutor(registry),
  )
  return agent.run('Look up the keys.').then((r) => {
    if (!r.success) throw new Error(r.output)
    return r.messages.filter((m) => m.role === 'assistant').length
  })
}

function aiSdkLoop(ai, provider, T) {
  const { generateText, tool, jsonSchema, stepCountIs } = ai
  return generateText({
    model: provider.chat(`bench-T${T}`),
    tools: { lookup: tool({ description: 'Look a key up', inputSchema: jsonSchema(TOOL_SCHEMA), execute: lookup }) },
    stopWhen: stepCountIs(T + 2),
    maxOutputTokens: 256,
    prompt: 'Look up the keys.',
  }).then((r) => r.steps.length)
}

async function warmUp(runOnce) {
  const t0 = performance.now()
  let n = 0
  while (n < 5 || performance.now() - t0 < WARMUP_MS) { await runOnce(); n++ }
}

async function sample(label, T, runOnce) {
  const runs = RUNS[T]
  let calls = 0
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < runs; i++) calls += await runOnce()
  const wallNs = Number(process.hrtime.bigint() - t0)
  const cpu = process.cpuUsage(cpu0)
  if (calls !== runs * (T + 1)) throw new Error(`${label}: expected ${runs * (T + 1)} LLM calls, got ${calls}`)
  return { cpuPerCallUs: (cpu.user + cpu.system) / calls, wallPerRunMs: wallNs / 1e6 / runs }
}

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b)
  const m = v.length >> 1
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2
}

/** Warm-up of every client, then SAMPLES interleaved samples; medians per client. */
async function measureT(T, clients) {
  for (const c of clients) await warmUp(c.run)
  const got = clients.map(() => [])
  for (let s = 0; s < SAMPLES; s++) {
    for (let i = 0; i < clients.length; i++) got[i].push(await sample(clients[i].label, T, clients[i].run))
  }
  return clients.map((c, i) => ({
    label: c.label,
    T,
    runs: RUNS[T] * SAMPLES,
    cpuPerCallUs: median(got[i].map((x) => x.cpuPerCallUs)),
    wallPerRunMs: median(got[i].map((x) => x.wallPerRunMs)),
  }))
}

// ---------------------------------------------------------------------------------------
// Floor: one request/response with no history (the mock answers model `bench-T0` with text),
// per way of making it. Not a loop, no tools: what one call over loopback costs a client
// before any agent work. `node:net` writes a hand-made HTTP/1.1 request on one keep-alive
// socket and parses the reply minimally, the least any main-thread JS client can do.
// ---------------------------------------------------------------------------------------
const FLOOR_BODY = JSON.stringify({ model: 'bench-T0', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })

async function rawSocketClient(port) {
  const net = require('net')
  const sock = net.connect(port, '127.0.0.1')
  await new Promise((resolve, reject) => sock.once('connect', resolve).once('error', reject))
  sock.setNoDelay(true)
  let pending = null
  let buf = ''
  sock.on('data', (d) => {
    buf += d.toString('latin1')
    const end = buf.indexOf('\r\n\r\n')
    if (end < 0) return
    const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))[1])
    if (buf.length - end - 4 < len) return
    const body = buf.slice(end + 4, end + 4 + len)
    buf = buf.slice(end + 4 + len)
    const p = pending
    pending = null
    p(JSON.parse(body))
  })
  const req = `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(FLOOR_BODY)}\r\n\r\n${FLOOR_BODY}`
  return { run: () => new Promise((resolve) => { pending = resolve; sock.write(req) }).then(() => 1), close: () => sock.destroy() }
}

function httpRequestClient(port) {
  const http = require('http')
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const run = () => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(FLOOR_BODY) } }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => { JSON.parse(Buffer.concat(chunks).toString('utf8')); resolve(1) })
    })
    req.on('error', reject)
    req.end(FLOOR_BODY)
  })
  return { run, close: () => agent.destroy() }
}

async function floorRows(port, adapter) {
  const raw = await rawSocketClient(port)
  const viaHttp = httpRequestClient(port)
  const clients = [
    { label: 'oma-kernel native adapter (`adapter.chat`)', run: () => adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'bench-T0', maxTokens: 5 }).then(() => 1) },
    { label: 'node:net, hand-written HTTP/1.1 (main thread)', run: raw.run },
    { label: 'node:http `http.request`, keep-alive agent', run: viaHttp.run },
    { label: '`fetch` (undici, what the ai SDK uses)', run: () => fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', body: FLOOR_BODY, headers: { 'content-type': 'application/json' } }).then((r) => r.json()).then(() => 1) },
  ]
  // T=0: one call per run.
  RUNS[0] = quick ? 50 : 1000
  const rows = await measureT(0, clients)
  raw.close()
  viaHttp.close()
  return rows
}

async function main() {
  const child = fork(path.join(__dirname, 'w5-mock-server.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const { port } = await new Promise((resolve) => child.once('message', resolve))
  const baseURL = `http://127.0.0.1:${port}/v1`
  const { createAdapter } = require('../lib/llm.js')
  const adapter = await createAdapter('openai', 'bench-key', baseURL)
  let ai = null
  let provider = null
  try {
    ai = require('ai')
    provider = require('@ai-sdk/openai').createOpenAI({ baseURL, apiKey: 'bench-key' })
  } catch (e) {
    console.error(`ai SDK column skipped: ${e.message.split('\n')[0]}`)
  }
  let index = null
  try {
    index = require('../index.js')
  } catch (e) {
    console.error(`Agent.run row skipped: ${e.message.split('\n')[0]}`)
  }
  const rows = []
  for (const T of [1, 5, 20]) {
    const clients = [{ label: 'oma-kernel', run: () => omaLoop(adapter, T) }]
    if (index) clients.push({ label: 'oma-kernel Agent.run', run: () => agentLoop(index, baseURL, T) })
    if (provider) clients.push({ label: 'ai SDK', run: () => aiSdkLoop(ai, provider, T) })
    rows.push(...(await measureT(T, clients)))
  }
  const floor = await floorRows(port, adapter)
  child.disconnect()
  console.log(`node ${process.version}, ${require('os').cpus().length} CPUs, ${quick ? 'quick' : 'full'} run; medians of ${SAMPLES} interleaved samples after ${WARMUP_MS} ms of warm-up per client`)
  console.log('| client | T | runs (all samples) | client CPU µs per LLM call | wall ms per run | CPU ratio vs ai SDK |')
  console.log('|---|---|---|---|---|---|')
  for (const r of rows) {
    const base = rows.find((x) => x.T === r.T && x.label === 'ai SDK')
    const ratio = base ? (r.cpuPerCallUs / base.cpuPerCallUs).toFixed(2) : '–'
    console.log(`| ${r.label} | ${r.T} | ${r.runs} | ${r.cpuPerCallUs.toFixed(0)} | ${r.wallPerRunMs.toFixed(2)} | ${ratio} |`)
  }
  console.log('')
  console.log('Floor: one call with no history (no tools, no agent), same medians')
  console.log('| client | calls (all samples) | client CPU µs per call | wall µs per call |')
  console.log('|---|---|---|---|')
  for (const r of floor) console.log(`| ${r.label} | ${r.runs} | ${r.cpuPerCallUs.toFixed(1)} | ${(r.wallPerRunMs * 1000).toFixed(0)} |`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
