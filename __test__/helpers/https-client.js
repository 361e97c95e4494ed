// The client side of __test__/llm-https.test.ts, run in a child process (so that SSL_CERT_FILE
// and the proxy variables are read by a fresh addon): `node https-client.js <scenario> <json>`.
// Runs the scenario on the main thread, then the same in a worker thread (which keeps the LLM
// I/O thread), and prints one JSON line: both outcomes and the requests the main thread's own
// event loop sent (`llmLoopRequests`) during each.
'use strict'
const path = require('path')
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads')
const ENTRY = path.resolve(__dirname, '..', '..', 'index.js')
const kernel = require(ENTRY)
const binding = require(path.resolve(__dirname, '..', '..', 'binding.js'))

const ask = (text) => [{ role: 'user', content: [{ type: 'text', text }] }]

/** An outcome as plain data: `{ ok }` or `{ error: { name, message, status } }`. */
async function outcome(f) {
  try {
    return { ok: await f() }
  } catch (e) {
    return { error: { name: e && e.name, message: e && e.message, status: e && e.status } }
  }
}

/** A stream's events as plain data (errors by name and message). */
async function events(it, onEvent) {
  const out = []
  for await (const ev of it) {
    if (ev.type === 'error') out.push({ type: 'error', message: ev.data.message })
    else if (ev.type === 'done') out.push({ type: 'done', text: ev.data.content.map((b) => b.text).join('') })
    else out.push({ type: ev.type, data: ev.data })
    if (onEvent && onEvent(ev) === 'stop') break
  }
  return out
}

const scenarios = {
  async chat({ url }) {
    const a = await kernel.createAdapter('openai', 'k', url)
    const r = await a.chat(ask('abc'), { model: 'm' })
    return r.content.map((b) => b.text).join('')
  },
  async stream({ url }) {
    const a = await kernel.createAdapter('openai', 'k', url)
    return events(a.stream(ask('abc'), { model: 'm' }))
  },
  async streamAbort({ url }) {
    const a = await kernel.createAdapter('openai', 'k', url)
    const ac = new AbortController()
    return events(a.stream(ask('abc'), { model: 'm', abortSignal: ac.signal }), (ev) => {
      if (ev.type === 'text') ac.abort()
    })
  },
  async streamReturn({ url }) {
    const a = await kernel.createAdapter('openai', 'k', url)
    return events(a.stream(ask('abc'), { model: 'm' }), (ev) => (ev.type === 'text' ? 'stop' : undefined))
  },
  async agentStream({ url }) {
    // The runner's own native stream (streamDeltas): the text deltas, then the result.
    const registry = new kernel.ToolRegistry()
    const a = new kernel.Agent({ name: 'a', model: 'm', provider: 'openai', apiKey: 'k', baseURL: url }, registry, new kernel.ToolExecutor(registry))
    const out = []
    for await (const ev of a.stream('abc', { streamDeltas: true })) {
      if (ev.type === 'text_delta' || ev.type === 'text') out.push(`${ev.type}:${ev.data}`)
      if (ev.type === 'done') out.push(`done:${ev.data.output}`)
      if (ev.type === 'error') out.push(`error:${ev.data.message}`)
    }
    return out
  },
  async egress({ url, allowed }) {
    const a = await kernel.createAdapter('openai', 'k', url, undefined, { mode: 'allowlist', allowedOrigins: allowed })
    const r = await a.chat(ask('abc'), { model: 'm' })
    return r.content.map((b) => b.text).join('')
  },
}

async function run(name, args) {
  const before = binding.llmLoopRequests()
  const result = await outcome(() => scenarios[name](args))
  return { result, loopRequests: binding.llmLoopRequests() - before }
}

if (isMainThread) {
  const [name, json] = process.argv.slice(2)
  const args = JSON.parse(json)
  ;(async () => {
    const main = await run(name, args)
    const w = new Worker(__filename, { workerData: { name, args } })
    const worker = await new Promise((resolve, reject) => {
      w.once('message', resolve)
      w.once('error', reject)
    })
    await w.terminate()
    process.stdout.write(JSON.stringify({ main, worker }) + '\n')
  })()
} else {
  run(workerData.name, workerData.args).then((r) => parentPort.postMessage(r))
}
