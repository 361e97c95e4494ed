#!/usr/bin/env node
'use strict'
// `npm run package`: the npm tarballs of @oma-kernel/core and of the platform package this host
// can build (@oma-kernel/core-linux-x64-gnu), written to dist-npm/.
//
// napi's release steps, run on a staged copy so the work tree is never touched and nothing goes
// to the network (no registry, no GitHub):
//   1. napi build --release -x --target x86_64-unknown-linux-gnu.2.17: cargo-zigbuild links
//      against glibc 2.17's symbols, so the binary loads on old distributions (checked below);
//      the generated binding.js of this same build goes into the main package;
//   2. napi artifacts copies the .node into the staged npm/linux-x64-gnu/ (from npm/, made by
//      `napi create-npm-dirs`);
//   3. napi prepublish --skip-optional-publish --no-gh-release writes the main package's
//      optionalDependencies; with napi.targets narrowed to what was built, the tarball only names
//      platform packages it ships alongside (the release workflow publishes all of them);
//   4. npm pack --ignore-scripts of both.
// npm pack fixes file times, so equal inputs give byte-equal tarballs; the sha256 of each is
// printed.
//
// Needs: zig (`pip install ziglang`) and cargo-zigbuild (`cargo install cargo-zigbuild`), as
// .ci/run installs them. OMA_PACKAGE_NODE=/path/to/file.node skips the build and packs that file
// (then the work tree's binding.js is used); it must still pass the glibc check.

const { execFileSync } = require('child_process')
const crypto = require('crypto')
const fs = require('fs')
const os = require('os')
const path = require('path')

const ROOT = path.resolve(__dirname, '..')
const OUT = path.join(ROOT, 'dist-npm')
const TARGET = 'x86_64-unknown-linux-gnu'
const { GLIBC_FLOOR, maxGlibc, withinFloor } = require('./glibc.js')
const NAPI = path.join(ROOT, 'node_modules', '.bin', 'napi')

function run(cmd, args, opts = {}) {
  console.log(`$ ${[cmd, ...args].join(' ')}`)
  return execFileSync(cmd, args, { stdio: opts.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8', ...opts })
}

function main() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error('npm run package builds linux-x64-gnu only; the other platforms are built by .github/workflows/release.yml')
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  const suffix = 'linux-x64-gnu'
  const binaryFile = `${pkg.napi.binaryName}.${suffix}.node`
  const platformDir = path.join(ROOT, 'npm', suffix)
  const platformPkg = JSON.parse(fs.readFileSync(path.join(platformDir, 'package.json'), 'utf8'))
  if (platformPkg.version !== pkg.version) {
    throw new Error(`npm/${suffix}/package.json has version ${platformPkg.version}, package.json ${pkg.version}: run \`napi version\``)
  }

  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-package-'))
  try {
    // 1. The binary (and the loader generated with it).
    const artifacts = path.join(stage, 'artifacts')
    fs.mkdirSync(artifacts)
    let bindingJs = path.join(ROOT, 'binding.js')
    if (process.env.OMA_PACKAGE_NODE) {
      fs.copyFileSync(process.env.OMA_PACKAGE_NODE, path.join(artifacts, binaryFile))
    } else {
      const t0 = Date.now()
      run(NAPI, ['build', '--platform', '--release', '-x', '--target', `${TARGET}.${GLIBC_FLOOR}`,
        '--output-dir', artifacts, '--js', 'binding.js', '--dts', 'binding.d.ts'], { cwd: ROOT })
      console.log(`release build (zig, glibc ${GLIBC_FLOOR}): ${((Date.now() - t0) / 1000).toFixed(0)} s`)
      bindingJs = path.join(artifacts, 'binding.js')
      if (fs.readFileSync(bindingJs, 'utf8') !== fs.readFileSync(path.join(ROOT, 'binding.js'), 'utf8')) {
        console.warn('note: the committed binding.js differs from the one this build generated; the generated one is packed')
      }
    }
    const glibc = maxGlibc(path.join(artifacts, binaryFile))
    console.log(`${binaryFile}: highest GLIBC_ symbol version ${glibc}`)
    if (!withinFloor(glibc)) {
      throw new Error(`${binaryFile} needs GLIBC_${glibc}, more than the ${GLIBC_FLOOR} floor`)
    }

    // The main package's files, as npm pack would take them from the work tree.
    const core = path.join(stage, 'core')
    fs.mkdirSync(core)
    const listing = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, capture: true }))
    for (const { path: rel } of listing[0].files) {
      if (rel === 'package.json') continue
      fs.mkdirSync(path.dirname(path.join(core, rel)), { recursive: true })
      fs.copyFileSync(path.join(ROOT, rel), path.join(core, rel))
    }
    fs.copyFileSync(bindingJs, path.join(core, 'binding.js'))
    const staged = { ...pkg, napi: { ...pkg.napi, targets: [TARGET] } }
    fs.writeFileSync(path.join(core, 'package.json'), JSON.stringify(staged, null, 2) + '\n')
    const npmDir = path.join(core, 'npm')
    fs.mkdirSync(path.join(npmDir, suffix), { recursive: true })
    for (const f of fs.readdirSync(platformDir)) {
      if (!f.endsWith('.node')) fs.copyFileSync(path.join(platformDir, f), path.join(npmDir, suffix, f))
    }
    fs.copyFileSync(path.join(ROOT, 'LICENSE'), path.join(npmDir, suffix, 'LICENSE'))

    // 2. + 3. napi's own steps.
    run(NAPI, ['artifacts', '--output-dir', artifacts, '--npm-dir', 'npm'], { cwd: core })
    run(NAPI, ['prepublish', '-t', 'npm', '--skip-optional-publish', '--no-gh-release'], { cwd: core })
    const prepared = JSON.parse(fs.readFileSync(path.join(core, 'package.json'), 'utf8'))
    const expected = { [`${pkg.name}-${suffix}`]: pkg.version }
    if (JSON.stringify(prepared.optionalDependencies) !== JSON.stringify(expected)) {
      throw new Error(`unexpected optionalDependencies: ${JSON.stringify(prepared.optionalDependencies)}`)
    }
    // The published manifest keeps the full target list (napi's config, not read at run time).
    prepared.napi.targets = pkg.napi.targets
    fs.writeFileSync(path.join(core, 'package.json'), JSON.stringify(prepared, null, 2) + '\n')
    // napi artifacts also drops a copy next to package.json; the main package does not ship it.
    fs.rmSync(path.join(core, binaryFile), { force: true })

    // 4. The tarballs.
    fs.rmSync(OUT, { recursive: true, force: true })
    fs.mkdirSync(OUT, { recursive: true })
    for (const dir of [path.join(npmDir, suffix), core]) {
      const [{ filename }] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', OUT], { cwd: dir, capture: true }))
      const file = path.join(OUT, path.basename(filename))
      const bytes = fs.readFileSync(file)
      const sha = crypto.createHash('sha256').update(bytes).digest('hex')
      console.log(`${path.relative(ROOT, file)}  ${(bytes.length / 1e6).toFixed(1)} MB  sha256 ${sha}`)
    }
  } finally {
    fs.rmSync(stage, { recursive: true, force: true })
  }
}

try {
  main()
} catch (err) {
  console.error(`package: ${err.message}`)
  process.exit(1)
}
