'use strict'
// W5: the same tool loop (T tool turns with 2 KB tool results, then a final answer) against a
// loopback OpenAI-compatible server in a separate process, driven by
//   - oma-kernel: the native adapter from createAdapter('openai', key, baseURL) in a minimal JS
//     loop, and the whole Agent.run (provider 'openai', runner, executor, one tool), and
//   - the `ai` SDK: generateText with @ai-sdk/openai's chat model and one tool.
// Each client runs in its own Node process (`--client <name>`), started by this one, so that one
// client's heap, garbage and timers are never collected or run on another's time; the parent
// only asks for warm-ups and samples, one client at a time, interleaved. Reports client CPU
// (user + system of the client's process, all threads) per LLM call and wall time per run:
// medians of the interleaved samples after a warm-up.
//   node bench/w5-openai-loop.js [--quick] [--https] [--stream]
// `--https`: the mock server speaks TLS with the test certificate of crates/uv/testdata/tls (the
// clients trust its CA: SSL_CERT_FILE for oma-kernel, NODE_EXTRA_CA_CERTS for Node's fetch).
// `--stream`: every LLM call streams (oma-kernel: `adapter.stream` and `Agent.stream` with
// `streamDeltas`; the ai SDK: `streamText`). Either one leaves the floor table out.
const { fork, spawn, spawnSync } = require('child_process')
const path = require('path')

const quick = process.argv.includes('--quick')
const HTTPS = process.argv.includes('--https')
const STREAM = process.argv.includes('--stream')
const TEST_CA = path.join(__dirname, '..', 'crates', 'uv', 'testdata', 'tls', 'ca.pem')
const PAYLOAD = 'x'.repeat(2048)
const TOOL_SCHEMA = { type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false }
// Runs per sample; each row is the median of SAMPLES samples, the clients' samples
// interleaved so that changes in machine load hit all of them alike. A sample is ≈ 20–60 ms of
// client CPU for oma-kernel: long enough that one garbage collection is spread over a sample
// rather than making an outlier of it.
const RUNS = quick ? { 1: 20, 5: 10, 20: 4 } : { 1: 300, 5: 120, 20: 36 }
const SAMPLES = quick ? 1 : 9
// Warm-up per client and T, in ms. Measured with back-to-back samples after 1.5 s of warm-up,
// both sides were still getting cheaper for four samples (T=1: the ai SDK ≈ 985 → ≈ 500 µs per
// call, Agent.run ≈ 96 → ≈ 52); after 5 s only the first sample is off.
const WARMUP_MS = quick ? 50 : 5000

async function lookup(input) {
  return `${input.key}:${PAYLOAD}`
}

/** One LLM call as a stream: its events pulled to the end, the final response. */
async function streamed(adapter, messages, options) {
  let res
  for await (const ev of adapter.stream(messages, options)) {
    if (ev.type === 'done') res = ev.data
    else if (ev.type === 'error') throw ev.data
  }
  return res
}

async function omaLoop(adapter, T, stream = false) {
  const tools = [{ name: 'lookup', description: 'Look a key up', inputSchema: TOOL_SCHEMA }]
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'Look up the keys.' }] }]
  let calls = 0
  for (;;) {
    const options = { model: `bench-T${T}`, tools, maxTokens: 256 }
    const res = await (stream ? streamed(adapter, messages, options) : adapter.chat(messages, options))
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

async function agentLoop(index, baseURL, T, stream = false) {
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
  let r
  if (stream) {
    // The runner's own native stream (`streamDeltas`): text deltas, then the result.
    for await (const ev of agent.stream('Look up the keys.', { streamDeltas: true })) {
      if (ev.type === 'done') r = ev.data
      else if (ev.type === 'error') throw ev.data
    }
  } else {
    r = await agent.run('Look up the keys.')
  }
  if (!r.success) throw new Error(r.output)
  return r.messages.filter((m) => m.role === 'assistant').length
}

async function aiSdkLoop(ai, provider, T, stream = false) {
  const { generateText, streamText, tool, jsonSchema, stepCountIs } = ai
  const call = {
    model: provider.chat(`bench-T${T}`),
    tools: { lookup: tool({ description: 'Look a key up', inputSchema: jsonSchema(TOOL_SCHEMA), execute: lookup }) },
    stopWhen: stepCountIs(T + 2),
    maxOutputTokens: 256,
    prompt: 'Look up the keys.',
  }
  if (!stream) return (await generateText(call)).steps.length
  const r = streamText(call)
  await r.consumeStream()
  return (await r.steps).length
}

async function warmUp(runOnce) {
  const t0 = performance.now()
  let n = 0
  while (n < 5 || performance.now() - t0 < WARMUP_MS) { await runOnce(); n++ }
}

async function sample(label, T, runs, runOnce) {
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

/** Warm-up of every client (one after the other), then SAMPLES interleaved samples; medians per client. */
async function measureT(T, clients) {
  for (const c of clients) await c.ask({ cmd: 'warmup', T })
  const got = clients.map(() => [])
  for (let s = 0; s < SAMPLES; s++) {
    for (let i = 0; i < clients.length; i++) got[i].push(await clients[i].ask({ cmd: 'sample', T, runs: RUNS[T] }))
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

// ---------------------------------------------------------------------------------------
// Clients, each in its own process.
//
// The mock server runs on CPU 1 and every client on CPU 0 (with `taskset`, when there are two
// CPUs or more). Unpinned, the scheduler sometimes keeps client and server on one CPU, where the
// reply is often there before the client has gone to sleep: the same client then measured
// ≈ 20 or ≈ 38 µs per call from one sample to the next. Against a real provider a client always
// sleeps while it waits and is woken by the reply, which is what the pinned layout measures.
const PIN = require('os').cpus().length >= 2 && spawnSync('taskset', ['-c', '0', process.execPath, '-e', '0']).status === 0

/** `fork`, on CPU `cpu` when pinning is available. */
function forkOn(cpu, script, args) {
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc']
  // The test CA, for the clients of an `--https` run (the server ignores them).
  const env = HTTPS ? { ...process.env, SSL_CERT_FILE: TEST_CA, NODE_EXTRA_CA_CERTS: TEST_CA } : process.env
  if (!PIN) return fork(script, args, { stdio, env })
  return spawn('taskset', ['-c', String(cpu), process.execPath, script, ...args], { stdio, env })
}

const CLIENTS = {
  'oma-adapter': { label: 'oma-kernel' },
  'oma-agent': { label: 'oma-kernel Agent.run' },
  'ai-sdk': { label: 'ai SDK' },
  'floor-native': { label: 'oma-kernel native adapter (`adapter.chat`)' },
  'floor-net': { label: 'node:net, hand-written HTTP/1.1 (main thread)' },
  'floor-http': { label: 'node:http `http.request`, keep-alive agent' },
  'floor-fetch': { label: '`fetch` (undici, what the ai SDK uses)' },
}

/** The child side: builds its one client, then answers the parent's warm-up and sample requests. */
async function clientMain(name, port) {
  const baseURL = `${HTTPS ? 'https' : 'http'}://127.0.0.1:${port}/v1`
  let runFor // T → () => Promise<number of LLM calls>
  if (name === 'oma-adapter' || name === 'floor-native') {
    const adapter = await require('../lib/llm.js').createAdapter('openai', 'bench-key', baseURL)
    runFor = name === 'oma-adapter'
      ? (T) => () => omaLoop(adapter, T, STREAM)
      : () => () => adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'bench-T0', maxTokens: 5 }).then(() => 1)
  } else if (name === 'oma-agent') {
    const index = require('../index.js')
    runFor = (T) => () => agentLoop(index, baseURL, T, STREAM)
  } else if (name === 'ai-sdk') {
    const ai = require('ai')
    const provider = require('@ai-sdk/openai').createOpenAI({ baseURL, apiKey: 'bench-key' })
    runFor = (T) => () => aiSdkLoop(ai, provider, T, STREAM)
  } else if (name === 'floor-net') {
    const raw = await rawSocketClient(port)
    runFor = () => raw.run
  } else if (name === 'floor-http') {
    const viaHttp = httpRequestClient(port)
    runFor = () => viaHttp.run
  } else if (name === 'floor-fetch') {
    runFor = () => () => fetch(`${baseURL}/chat/completions`, { method: 'POST', body: FLOOR_BODY, headers: { 'content-type': 'application/json' } }).then((r) => r.json()).then(() => 1)
  } else {
    throw new Error(`unknown client ${name}`)
  }
  process.on('message', async (m) => {
    try {
      if (m.cmd === 'warmup') {
        await warmUp(runFor(m.T))
        process.send({ ok: true })
      } else if (m.cmd === 'sample') {
        process.send({ ok: true, value: await sample(name, m.T, m.runs, runFor(m.T)) })
      }
    } catch (e) {
      process.send({ ok: false, error: String(e && e.stack || e) })
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ ready: true })
}

/** Starts client `name` in its own process; `ask(msg)` resolves with its reply's value. */
async function startClient(name, port) {
  const proc = forkOn(0, __filename, ['--client', name, String(port), ...(HTTPS ? ['--https'] : []), ...(STREAM ? ['--stream'] : [])])
  const first = await new Promise((resolve, reject) => {
    proc.once('message', resolve)
    proc.once('exit', (code) => reject(new Error(`client ${name} exited with code ${code} before it was ready`)))
  })
  if (!first.ready) throw new Error(`client ${name}: unexpected first message`)
  const ask = (msg) => new Promise((resolve, reject) => {
    proc.once('message', (r) => (r.ok ? resolve(r.value) : reject(new Error(`client ${name}: ${r.error}`))))
    proc.send(msg)
  })
  return { label: CLIENTS[name].label, ask, close: () => proc.disconnect() }
}

/** A client that cannot start (e.g. the ai SDK not installed) is left out with a note. */
async function startAll(names, port) {
  const out = []
  for (const n of names) {
    try {
      out.push(await startClient(n, port))
    } catch (e) {
      console.error(`${CLIENTS[n].label} skipped: ${e.message.split('\n')[0]}`)
    }
  }
  return out
}

async function main() {
  const child = forkOn(1, path.join(__dirname, 'w5-mock-server.js'), HTTPS ? ['--https'] : [])
  const { port } = await new Promise((resolve) => child.once('message', resolve))
  const loops = await startAll(['oma-adapter', 'oma-agent', 'ai-sdk'], port)
  const rows = []
  for (const T of [1, 5, 20]) rows.push(...(await measureT(T, loops)))
  for (const c of loops) c.close()
  // T=0: one call per run.
  RUNS[0] = quick ? 50 : 1000
  const plain = !HTTPS && !STREAM
  const floors = plain ? await startAll(['floor-native', 'floor-net', 'floor-http', 'floor-fetch'], port) : []
  const floor = plain ? await measureT(0, floors) : []
  for (const c of floors) c.close()
  child.disconnect()
  const variant = [HTTPS ? 'HTTPS' : 'HTTP', STREAM ? 'streaming' : 'chat'].join(', ')
  console.log(`node ${process.version}, ${require('os').cpus().length} CPUs, ${quick ? 'quick' : 'full'} run, ${variant}; each client in its own process${PIN ? ' on CPU 0, the server on CPU 1' : ' (not pinned: taskset or a second CPU missing)'}; medians of ${SAMPLES} interleaved samples after ${WARMUP_MS} ms of warm-up per client`)
  console.log('| client | T | runs (all samples) | client CPU µs per LLM call | wall ms per run | CPU ratio vs ai SDK |')
  console.log('|---|---|---|---|---|---|')
  for (const r of rows) {
    const base = rows.find((x) => x.T === r.T && x.label === 'ai SDK')
    const ratio = base ? (r.cpuPerCallUs / base.cpuPerCallUs).toFixed(3) : '–'
    console.log(`| ${r.label} | ${r.T} | ${r.runs} | ${r.cpuPerCallUs.toFixed(1)} | ${r.wallPerRunMs.toFixed(2)} | ${ratio} |`)
  }
  if (!plain) return
  console.log('')
  console.log('Floor: one call with no history (no tools, no agent), same medians')
  console.log('| client | calls (all samples) | client CPU µs per call | wall µs per call |')
  console.log('|---|---|---|---|')
  for (const r of floor) console.log(`| ${r.label} | ${r.runs} | ${r.cpuPerCallUs.toFixed(1)} | ${(r.wallPerRunMs * 1000).toFixed(0)} |`)
}

module.exports = { omaLoop, agentLoop }

if (require.main === module) {
  const at = process.argv.indexOf('--client')
  const entry = at >= 0 ? clientMain(process.argv[at + 1], Number(process.argv[at + 2])) : main()
  entry.catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
