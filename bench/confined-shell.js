'use strict'
// The cost of confinement: one bash command through ConfinedShellExecutor against the same
// command through LocalShellExecutor (today's native shell), side by side in one run, calls
// alternating so that machine load hits both sides alike. Reports the median, p10 and p90 wall
// time per call and the first confined call of a new executor (which builds the Landlock
// ruleset and the seccomp program for its sandbox root).
//
//   node bench/confined-shell.js [--calls N] [--command 'true']
//
// Needs Linux with Landlock ABI 6 or newer (ConfinedShellExecutor.probe()).
const fs = require('fs')
const os = require('os')
const path = require('path')
const { LocalShellExecutor, ConfinedShellExecutor } = require('..')

function arg(name, fallback) {
  const i = process.argv.indexOf(name)
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback
}

const CALLS = Number(arg('--calls', '400'))
const COMMAND = arg('--command', 'true')
const WARMUP = 30

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b)
  return { p10: quantile(s, 0.1), median: quantile(s, 0.5), p90: quantile(s, 0.9) }
}

async function timed(fn) {
  const t0 = process.hrtime.bigint()
  const r = await fn()
  const us = Number(process.hrtime.bigint() - t0) / 1000
  if (r.exitCode !== 0) throw new Error(`the command failed: ${JSON.stringify(r)}`)
  return us
}

async function main() {
  const probe = ConfinedShellExecutor.probe()
  if (probe.platform !== 'linux' || probe.landlockAbi < probe.requiredLandlockAbi) {
    console.error(`needs Linux with Landlock ABI ${probe.requiredLandlockAbi}; this host: ${probe.platform}, ABI ${probe.landlockAbi}`)
    process.exit(1)
  }
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-bench-confined-')))
  const options = { timeoutMs: 10_000, cwd: root, sandboxRoot: root }
  const local = new LocalShellExecutor()
  try {
    const confined = new ConfinedShellExecutor()
    await confined.start()
    for (let i = 0; i < WARMUP; i++) {
      await local.exec(COMMAND, options)
      await confined.exec(COMMAND, options)
    }
    const plain = []
    const boxed = []
    // Every 20th round also times the first command of a new executor (its policy is prepared
    // then: the Landlock ruleset opened and filled, the seccomp program written) next to a
    // steady one, so the two see the same load.
    const firsts = []
    const firstPairs = []
    const pairs = []
    for (let i = 0; i < CALLS; i++) {
      // Alternate which side goes first.
      if (i % 2 === 0) {
        plain.push(await timed(() => local.exec(COMMAND, options)))
        boxed.push(await timed(() => confined.exec(COMMAND, options)))
      } else {
        boxed.push(await timed(() => confined.exec(COMMAND, options)))
        plain.push(await timed(() => local.exec(COMMAND, options)))
      }
      pairs.push(boxed[boxed.length - 1] - plain[plain.length - 1])
      if (i % 20 === 0) {
        const fresh = new ConfinedShellExecutor()
        const first = await timed(() => fresh.exec(COMMAND, options))
        const steady = await timed(() => confined.exec(COMMAND, options))
        await fresh.dispose()
        firsts.push(first)
        firstPairs.push(first - steady)
      }
    }
    await confined.dispose()
    const p = summary(plain)
    const c = summary(boxed)
    const f = summary(firsts)
    const fp = summary(firstPairs)
    const pp = summary(pairs)
    const ms = (us) => (us / 1000).toFixed(2)
    const addon = require.resolve('../oma-kernel.linux-x64-gnu.node')
    console.log(`command \`${COMMAND}\`, ${CALLS} calls per side, Landlock ABI ${probe.landlockAbi}, node ${process.version}, ${os.cpus().length} cores, addon ${path.basename(addon)} (${(fs.statSync(addon).size / 1e6).toFixed(0)} MB)`)
    console.log('')
    console.log('| per call (ms) | p10 | median | p90 |')
    console.log('|---|---:|---:|---:|')
    console.log(`| LocalShellExecutor | ${ms(p.p10)} | ${ms(p.median)} | ${ms(p.p90)} |`)
    console.log(`| ConfinedShellExecutor | ${ms(c.p10)} | ${ms(c.median)} | ${ms(c.p90)} |`)
    console.log(`| ConfinedShellExecutor, first call of a new executor | ${ms(f.p10)} | ${ms(f.median)} | ${ms(f.p90)} |`)
    console.log('')
    console.log(`confined − plain: ${ms(c.median - p.median)} ms between the medians (${((c.median / p.median - 1) * 100).toFixed(1)} %), ${ms(pp.median)} ms as the median of the ${pairs.length} paired differences; first call − the steady call next to it, median of ${firstPairs.length}: ${ms(fp.median)} ms`)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
