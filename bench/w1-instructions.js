'use strict'
// W1 in instructions instead of seconds: instructions per tool call of one side of W1 (the
// kernel or the AI SDK, the same runs as bench/run.js), counted by valgrind's callgrind over
// every thread of the process. Wall time on this 2-vCPU VM moves ±15 % from run to run (see
// bench/README.md); the count repeats to within about 1 %, so it tells builds apart and gives
// a ratio to the AI SDK that does not depend on the machine's load.
//
//   node bench/w1-instructions.js [kernel|ai|both] [K] [T] [warm-up tool calls] [measured tool calls]
//
// Defaults: both 16 10 200000 9600 (whole runs of K×T tool calls each). The long warm-up is for
// the functions called once per run (the Agent's driver, the runner's setup): V8 optimises a
// function after a budget that grows with its size, so at 1×10 a 48,000-call warm-up left them
// unoptimised in one build and not in the other (106k vs 43k instructions per call; 41.4k vs
// 42.1k after 200,000). A short window would also count a major GC against few calls. V8 runs with `--single-threaded`, so its optimising compiler
// works on the main thread during the warm-up instead of lagging behind on background threads
// into the measured window (under valgrind it otherwise still compiles thousands of runs later;
// bench/w5-instructions.js shows that effect). Needs `valgrind` and a release build.
const { spawn, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

async function child(side, K, T, warm, runs) {
  const { SIDES } = require('./run.js')
  const run = SIDES[side]
  if (!run) throw new Error(`unknown side ${side}`)
  // callgrind_control needs the guest running to take a command: an idle timer keeps it so.
  const toggle = (what) => new Promise((resolve) => {
    const keepAwake = setInterval(() => {}, 1)
    spawn('callgrind_control', ['-i', what, String(process.pid)], { stdio: 'ignore' }).on('exit', () => {
      clearInterval(keepAwake)
      resolve()
    })
  })
  for (let i = 0; i < warm; i++) await run(K, T)
  await toggle('on')
  for (let i = 0; i < runs; i++) await run(K, T)
  await toggle('off')
  process.send({ calls: runs * K * T })
}

function measure(side, K, T, warm, runs) {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'w1-cg-')), 'callgrind.out')
  const vg = spawn('valgrind', [
    '-q', '--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
    process.execPath, '--single-threaded', __filename, '--child', side, String(K), String(T), String(warm), String(runs),
  ], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    let calls = null
    vg.once('message', (m) => { calls = m.calls })
    vg.once('exit', (code) => {
      if (calls === null) return reject(new Error(`valgrind exited with ${code} before reporting`))
      const totals = /^totals: (\d+)/m.exec(fs.readFileSync(out, 'utf8'))
      if (!totals) return reject(new Error(`no totals in ${out}`))
      resolve({ perCall: Number(totals[1]) / calls, compilePerCall: inclusive(out, COMPILER) / calls, gcPerCall: inclusive(out, MAJOR_GC) / calls, out })
    })
  })
}

/**
 * Inclusive instructions of the functions named `names`, from callgrind_annotate. Two V8 shares
 * fall into a window or not whatever the warm-up: its optimising compiler (a function called once
 * per run, the Agent's driver, becomes hot only after thousands of runs) and a major GC (the
 * incremental marking steps and the mark-compact: one cycle adds up to ≈ 7k instructions per
 * call to the 9,600-call window it lands in). The count is given with and without them.
 */
function inclusive(out, names) {
  const r = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', out], { encoding: 'utf8', maxBuffer: 1 << 28 })
  let sum = 0
  for (const name of names) {
    const line = (r.stdout || '').split('\n').find((l) => l.includes(name))
    if (line) sum += Number(/^\s*([\d,]+)/.exec(line)[1].replace(/,/g, ''))
  }
  return sum
}
const COMPILER = ['v8::internal::Compiler::CompileOptimized(']
const MAJOR_GC = ['v8::internal::IncrementalMarking::Step(', 'v8::internal::MarkCompactCollector::CollectGarbage(']

async function main() {
  const [which = 'both', k = '16', t = '10', warmCalls = '200000', calls = '9600'] = process.argv.slice(2)
  const K = Number(k)
  const T = Number(t)
  const warm = Math.ceil(Number(warmCalls) / (K * T))
  const runs = Math.ceil(Number(calls) / (K * T))
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed')
  const sides = which === 'both' ? ['kernel', 'ai'] : [which]
  const got = {}
  for (const side of sides) {
    got[side] = await measure(side, K, T, warm, runs)
    const g = got[side]
    console.log(`${side} W1 ${K}×${T}: ${Math.round(g.perCall)} instructions per tool call, ` +
      `${Math.round(g.perCall - g.compilePerCall - g.gcPerCall)} without V8's optimising compiler ` +
      `(${Math.round(g.compilePerCall)}) and major GC (${Math.round(g.gcPerCall)}) (${g.out})`)
  }
  if (got.kernel && got.ai) {
    const net = (g) => g.perCall - g.compilePerCall - g.gcPerCall
    console.log(`ai/kernel: ${(got.ai.perCall / got.kernel.perCall).toFixed(1)}× (without them: ${(net(got.ai) / net(got.kernel)).toFixed(1)}×)`)
  }
}

const at = process.argv.indexOf('--child')
const entry = at >= 0
  ? child(process.argv[at + 1], ...process.argv.slice(at + 2, at + 6).map(Number))
  : main()
entry.catch((e) => {
  console.error(e)
  process.exit(1)
})
