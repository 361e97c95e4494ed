'use strict'
// worker_threads: sequential workers with nothing loaded on the main thread (each loads the addon
// and exits; a recycled thread id must not crash), then workers running the scenario at once,
// then the main thread loads it too and runs alongside more workers.
const assert = require('assert')
const { Worker } = require('worker_threads')

const SEQUENTIAL = Number(process.env.OMA_PACKED_SEQUENTIAL || 20)
const body = (label) => `
  const core = require('@oma-kernel/core')
  const { scenario } = require(${JSON.stringify(require.resolve('./scenario.cjs'))})
  scenario(core, ${JSON.stringify(label)}).then(() => process.exit(0), (err) => { console.error(err); process.exit(1) })
`

function runWorker(label, code = body(label)) {
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true })
    w.on('error', reject)
    w.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`worker ${label} exited with ${c}`))))
  })
}

async function main() {
  assert.ok(!Object.keys(require.cache).some((f) => f.endsWith('.node')))
  for (let i = 0; i < SEQUENTIAL; i++) {
    await runWorker(`seq${i}`, i % 2 ? `require('@oma-kernel/core')` : body(`seq${i}`))
  }
  await Promise.all([1, 2, 3, 4].map((i) => runWorker(`par${i}`)))
  const core = require('@oma-kernel/core')
  const { scenario } = require('./scenario.cjs')
  await Promise.all([scenario(core, 'main'), runWorker('mix1'), runWorker('mix2')])
  // A worker terminated while its run is in flight does not disturb the others.
  const doomed = new Worker(body('doomed'), { eval: true })
  await new Promise((resolve) => setTimeout(resolve, 20))
  await Promise.all([doomed.terminate(), runWorker('after-terminate')])
  console.log(`workers: ok (${SEQUENTIAL} sequential, 4 concurrent, main + 2, terminate; node ${process.version})`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
