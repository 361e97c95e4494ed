'use strict'
// W5 in instructions instead of seconds: the client's instructions per LLM call, counted by
// valgrind's callgrind (user space, all threads of the client process; the kernel's network
// work is not counted). Unlike CPU time on a shared VM (±3–8 µs per call from run to run) the
// count repeats to within ≈ 1 % for the same build, so it can tell builds apart by a few
// percent. The mock server runs outside valgrind.
//
//   node bench/w5-instructions.js [agent|adapter] [T] [warm-up calls] [measured calls] [--https] [--stream]
//
// `--https` and `--stream` as in w5-openai-loop.js (TLS to the mock server with the test
// certificate; every LLM call streamed).
// Defaults: agent 1, 15000 LLM calls of warm-up, 2000 measured (whole runs of T + 1 calls each;
// ≈ 15–30 s). Under valgrind V8 still compiles for thousands of calls: with 3600 calls of
// warm-up at T=5, half of the count was the optimizing compiler. Needs `valgrind` (a Debian
// package) and a release build.
const { spawn, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const HTTPS = process.argv.includes('--https')
const STREAM = process.argv.includes('--stream')
const FLAGS = [...(HTTPS ? ['--https'] : []), ...(STREAM ? ['--stream'] : [])]

async function child(name, T, warm, runs, port) {
  const { omaLoop, agentLoop } = require('./w5-openai-loop.js')
  const baseURL = `${HTTPS ? 'https' : 'http'}://127.0.0.1:${port}/v1`
  let runOnce
  if (name === 'agent') {
    const index = require('../index.js')
    runOnce = () => agentLoop(index, baseURL, T, STREAM)
  } else {
    const adapter = await require('../lib/llm.js').createAdapter('openai', 'bench-key', baseURL)
    runOnce = () => omaLoop(adapter, T, STREAM)
  }
  // callgrind_control needs the guest running to take a command: an idle timer keeps it so.
  const toggle = (what) => new Promise((resolve) => {
    const keepAwake = setInterval(() => {}, 1)
    spawn('callgrind_control', ['-i', what, String(process.pid)], { stdio: 'ignore' }).on('exit', () => {
      clearInterval(keepAwake)
      resolve()
    })
  })
  for (let i = 0; i < warm; i++) await runOnce()
  await toggle('on')
  let calls = 0
  for (let i = 0; i < runs; i++) calls += await runOnce()
  await toggle('off')
  process.send({ calls })
}

async function main() {
  const [name = 'agent', t = '1', warmCalls = '15000', calls = '2000'] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
  const T = Number(t)
  const warm = String(Math.ceil(Number(warmCalls) / (T + 1)))
  const runs = String(Math.ceil(Number(calls) / (T + 1)))
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed')
  const server = spawn(process.execPath, [path.join(__dirname, 'w5-mock-server.js'), ...FLAGS], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const { port } = await new Promise((resolve) => server.once('message', resolve))
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'w5-cg-')), 'callgrind.out')
  const vg = spawn('valgrind', [
    '--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
    process.execPath, __filename, '--child', name, String(T), warm, runs, String(port), ...FLAGS,
  ], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    // The test CA, for an `--https` run.
    env: HTTPS ? { ...process.env, SSL_CERT_FILE: path.join(__dirname, '..', 'crates', 'uv', 'testdata', 'tls', 'ca.pem') } : process.env,
  })
  const { calls: counted } = await new Promise((resolve, reject) => {
    vg.once('message', resolve)
    vg.once('exit', (code) => reject(new Error(`valgrind exited with ${code} before reporting`)))
  })
  await new Promise((resolve) => vg.once('exit', resolve))
  server.disconnect()
  const totals = /^totals: (\d+)/m.exec(fs.readFileSync(out, 'utf8'))
  if (!totals) throw new Error(`no totals in ${out}`)
  console.log(`${name} T=${T}${FLAGS.length ? ` ${FLAGS.join(' ')}` : ''}: ${counted} LLM calls, ${Math.round(Number(totals[1]) / counted)} instructions per call (${out})`)
}

const at = process.argv.indexOf('--child')
const entry = at >= 0
  ? child(process.argv[at + 1], Number(process.argv[at + 2]), Number(process.argv[at + 3]), Number(process.argv[at + 4]), Number(process.argv[at + 5]))
  : main()
entry.catch((e) => {
  console.error(e)
  process.exit(1)
})
