'use strict'
// The loader's text when the binary is missing: a copy of the installed @oma-kernel/core alone
// (no platform package beside it) is required (1) as is, (2) with process.platform faked to a
// platform we publish nothing for.
const assert = require('assert')
const { execFileSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-loader-'))
try {
  const pkgDir = path.join(root, 'node_modules', '@oma-kernel', 'core')
  fs.cpSync(path.dirname(require.resolve('@oma-kernel/core/package.json')), pkgDir, { recursive: true })
  const probe = (pre) => {
    try {
      execFileSync(process.execPath, ['-e', `${pre}; require('@oma-kernel/core')`], { cwd: root, stdio: 'pipe', encoding: 'utf8' })
    } catch (err) {
      return err.stderr
    }
    throw new Error('the package loaded without its binary')
  }

  const missing = probe('')
  assert.match(missing, /@oma-kernel\/core: the native binary for this platform \(linux-x64-gnu\) did not load\./)
  assert.match(missing, /optional dependency @oma-kernel\/core-linux-x64-gnu@\d/)
  assert.match(missing, /npm ls @oma-kernel\/core-linux-x64-gnu/)
  assert.match(missing, /serverExternalPackages/)
  assert.doesNotMatch(missing, /npm has a bug/)

  const unsupported = probe(`Object.defineProperty(process, 'platform', { value: 'freebsd' })`)
  assert.match(unsupported, /no prebuilt native binary for this platform \(freebsd-x64\)/)
  assert.match(unsupported, /Prebuilt binaries exist for:\n {2}linux-x64-gnu \(glibc >= 2\.17\)/)
  assert.match(unsupported, /To build it from source .*Rust/)
  assert.match(unsupported, /npm run build/)
  assert.match(unsupported, /NAPI_RS_NATIVE_LIBRARY_PATH=/)
  assert.doesNotMatch(unsupported, /npm has a bug/)

  // The override the message points to works: the platform package's binary, by path.
  const binary = require.resolve('@oma-kernel/core-linux-x64-gnu')
  const out = execFileSync(process.execPath, ['-e', `console.log(Object.keys(require('@oma-kernel/core')).length)`], {
    cwd: root, encoding: 'utf8', env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: binary },
  })
  assert.ok(Number(out) >= 40, out)
  console.log('loader: ok (missing platform package, unsupported platform, NAPI_RS_NATIVE_LIBRARY_PATH)')
} finally {
  fs.rmSync(root, { recursive: true, force: true })
}
