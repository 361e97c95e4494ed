'use strict'
// npm run test:types: compiles the type-level tests in src/ and esm/ with `tsc --strict` once
// per tsconfig.*.json here (module / moduleResolution = commonjs/node10, node16, nodenext,
// bundler, and nodenext with Zod 4 as the `zod` main entry). The files import the package by
// name through node_modules/@oma-kernel/core, a symlink to the repository made here, so the
// package.json `exports` map (index.d.ts / index.d.mts) is what resolves them. Every
// `@ts-expect-error` line must be an error, every other line must compile.
const { spawn } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const here = __dirname
const repo = path.resolve(here, '..', '..')
const tsc = require.resolve('typescript/bin/tsc', { paths: [repo] })

function linkPackage() {
  const scope = path.join(here, 'node_modules', '@oma-kernel')
  const link = path.join(scope, 'core')
  fs.mkdirSync(scope, { recursive: true })
  let target
  try {
    target = fs.realpathSync(link)
  } catch {
    target = undefined
  }
  if (target === fs.realpathSync(repo)) return
  fs.rmSync(link, { recursive: true, force: true })
  fs.symlinkSync(path.relative(scope, repo), link, 'dir')
}

function run(config) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, [tsc, '-p', path.join(here, config), '--pretty', 'false'], { cwd: here })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.on('close', (code) => resolve({ config, code, out, ms: Date.now() - started }))
  })
}

async function main() {
  linkPackage()
  const configs = fs.readdirSync(here).filter((f) => /^tsconfig\..+\.json$/.test(f) && f !== 'tsconfig.base.json').sort()
  const only = process.argv.slice(2)
  const todo = only.length > 0 ? configs.filter((c) => only.some((o) => c.includes(o))) : configs
  const results = []
  const queue = todo.slice()
  const workers = Array.from({ length: Math.max(1, Math.min(queue.length, os.cpus().length)) }, async () => {
    while (queue.length > 0) results.push(await run(queue.shift()))
  })
  await Promise.all(workers)
  let failed = 0
  for (const r of results.sort((a, b) => a.config.localeCompare(b.config))) {
    const ok = r.code === 0
    if (!ok) failed += 1
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${r.config} (${(r.ms / 1000).toFixed(1)} s)`)
    if (!ok) console.log(r.out.trimEnd().replace(/^/gm, '     '))
  }
  console.log(`types: ${results.length - failed} passed, ${failed} failed`)
  process.exitCode = failed === 0 ? 0 : 1
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
