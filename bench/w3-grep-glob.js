#!/usr/bin/env node
'use strict'
// W3: grep / glob in-process (ripgrep crates) against the spawned `rg` binary, same tree,
// same run. Usage: node bench/w3-grep-glob.js [--runs N] [--keep]
//
// The tree (~20k files, ~200 MB, with node_modules and .git directories) is generated once
// under os.tmpdir() and reused. `rg` is the Debian package `ripgrep`, installed here with
// apt-get when missing. Equivalent rg flags: our walker skips the SKIP_DIRS at any depth,
// keeps hidden files and ignores .gitignore, hence
//   --no-ignore --hidden -g '!{.git,.svn,.hg,node_modules,.next,dist,build}'
// plus --line-number --no-heading --color=never.
const { execFileSync, spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { grepTool, globTool } = require('../lib/builtin.js')
const { xorshift32 } = require('./xorshift32.js')

const args = process.argv.slice(2)
const RUNS = Number(args[args.indexOf('--runs') + 1]) || 5
const TREE = path.join(os.tmpdir(), 'oma-w3-tree-v2')
const ctx = { agent: { name: 'bench', role: 'bench', model: 'none' }, cwd: TREE }

function ensureRg() {
  const probe = spawnSync('rg', ['--version'])
  if (probe.status === 0) return
  console.error('rg not found: apt-get install -y ripgrep')
  execFileSync('apt-get', ['install', '-y', 'ripgrep'], { stdio: 'inherit' })
}

// Deterministic content.
const rnd = xorshift32(0x9e3779b9)
const WORDS = ('const let function return import export from default class extends value result error handler request response ' +
  'config options data item list map filter reduce async await promise resolve reject string number boolean object array ' +
  'the of and to in is for on with as by this that it be are was not or at').split(' ')

function line(i) {
  const n = 4 + Math.floor(rnd() * 10)
  let s = ''
  for (let j = 0; j < n; j++) s += (j ? ' ' : '') + WORDS[Math.floor(rnd() * WORDS.length)]
  // Rare regex target (~1 line in 20k): fn_<letters>_<3 digits>
  if (rnd() < 0.00002) s += ` fn_${WORDS[i % 10].replace(/[^a-z]/g, '')}_${100 + (i % 900)}`
  return s
}

function fileContent(bytes, rareLiteral) {
  const lines = []
  let size = 0
  let i = 0
  while (size < bytes) {
    const l = line(i++)
    lines.push(l)
    size += l.length + 1
  }
  if (rareLiteral) lines[Math.floor(lines.length / 2)] += ' XYZZY_RARE_LITERAL'
  return lines.join('\n') + '\n'
}

function generate() {
  if (fs.existsSync(path.join(TREE, '.complete'))) return
  fs.rmSync(TREE, { recursive: true, force: true })
  const exts = ['ts', 'ts', 'js', 'json', 'md', 'tsx']
  let files = 0
  let bytes = 0
  const write = (p, content) => {
    fs.mkdirSync(path.dirname(p), { recursive: true })
    fs.writeFileSync(p, content)
    files++
    bytes += content.length
  }
  // Source: 15k files in a 3-level layout, ~10 KB average.
  for (let i = 0; i < 15000; i++) {
    const dir = path.join(TREE, 'src', `pkg${i % 30}`, `mod${Math.floor(i / 30) % 25}`)
    const size = 2000 + Math.floor(rnd() * 18000)
    write(path.join(dir, `file${i}.${exts[i % exts.length]}`), fileContent(size, i % 997 === 0))
  }
  // Skipped by both tools.
  for (let i = 0; i < 4000; i++) {
    write(path.join(TREE, 'node_modules', `dep${i % 80}`, 'lib', `index${i}.js`), fileContent(6000, i % 500 === 0))
  }
  for (let i = 0; i < 1000; i++) write(path.join(TREE, '.git', 'objects', `${i % 256}`.padStart(2, '0'), `obj${i}`), fileContent(3000, false))
  fs.writeFileSync(path.join(TREE, '.complete'), '')
  console.error(`generated ${files} files, ${(bytes / 1e6).toFixed(0)} MB in ${TREE}`)
}

const RG_BASE = ['--no-ignore', '--hidden', '-g', '!{.git,.svn,.hg,node_modules,.next,dist,build}', '--line-number', '--no-heading', '--color=never']

function rg(argv) {
  const t = process.hrtime.bigint()
  const r = spawnSync('rg', argv, { cwd: TREE, maxBuffer: 1 << 30, encoding: 'buffer' })
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  return { ms, lines: r.stdout.length ? r.stdout.toString().trimEnd().split('\n').length : 0 }
}

async function ours(tool, input) {
  const t = process.hrtime.bigint()
  const r = await tool.execute(input, ctx)
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  if (r.isError) throw new Error(r.data)
  const lines = r.data === 'No matches found.' || r.data === 'No files matched.' ? 0 : r.data.split('\n\n(')[0].split('\n').length
  return { ms, lines }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** Runs a and b alternately (so both see the same machine load), medians of each. */
async function measurePair(a, b) {
  await a() // warm-up (page cache, lazy init)
  await b()
  const ra = []
  const rb = []
  let la
  let lb
  for (let i = 0; i < RUNS; i++) {
    la = await a()
    lb = await b()
    ra.push(la.ms)
    rb.push(lb.ms)
  }
  return [{ ms: median(ra), lines: la.lines }, { ms: median(rb), lines: lb.lines }]
}

async function main() {
  ensureRg()
  generate()
  const cases = [
    ['grep literal', () => ours(grepTool, { pattern: 'XYZZY_RARE_LITERAL' }), () => rg([...RG_BASE, '--', 'XYZZY_RARE_LITERAL', '.'])],
    ['grep regex', () => ours(grepTool, { pattern: 'fn_[a-z]+_\\d{3}' }), () => rg([...RG_BASE, '--', 'fn_[a-z]+_\\d{3}', '.'])],
    ['grep literal, *.ts only', () => ours(grepTool, { pattern: 'XYZZY_RARE_LITERAL', glob: '*.ts' }), () => rg([...RG_BASE, '-g', '*.ts', '--', 'XYZZY_RARE_LITERAL', '.'])],
    ['grep common word (default cap 100 vs rg printing all)', () => ours(grepTool, { pattern: 'return' }), () => rg([...RG_BASE, '--', 'return', '.'])],
    ['glob *.ts full listing', () => ours(globTool, { pattern: '*.ts', maxFiles: 1e9 }), () => rg(['--files', '--no-ignore', '--hidden', '-g', '!{.git,.svn,.hg,node_modules,.next,dist,build}', '-g', '*.ts', '.'])],
  ]
  const rows = []
  for (const [name, a, b] of cases) {
    const [o, r] = await measurePair(a, b)
    rows.push({ name, ours: o, rg: r })
    console.error(`${name}: ours ${o.ms.toFixed(1)} ms (${o.lines} lines), rg ${r.ms.toFixed(1)} ms (${r.lines} lines)`)
  }
  const rgVersion = execFileSync('rg', ['--version']).toString().split('\n')[0]
  const table = [
    `W3 on ${os.cpus().length} cores, ${os.cpus()[0].model.trim()}, Node ${process.version}, ${rgVersion}; median of ${RUNS} warm runs, ours and rg alternating; load average at start ${os.loadavg()[0].toFixed(2)}.`,
    '',
    '| case | oma-kernel (ms) | lines | rg spawned (ms) | lines | ratio ours/rg |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${r.ours.ms.toFixed(1)} | ${r.ours.lines} | ${r.rg.ms.toFixed(1)} | ${r.rg.lines} | ${(r.ours.ms / r.rg.ms).toFixed(2)}× |`),
  ].join('\n')
  console.log(table)
  if (!args.includes('--keep')) {
    // The tree is kept between runs by default only with --keep; it is large.
    fs.rmSync(TREE, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
