'use strict'
// CommonJS: require() the installed package, check where the binary came from, run the scenario.
const assert = require('assert')
const path = require('path')
const core = require('@oma-kernel/core')
const { scenario } = require('./scenario.cjs')

const main = require.resolve('@oma-kernel/core')
assert.ok(main.includes(`${path.sep}node_modules${path.sep}@oma-kernel${path.sep}core${path.sep}`), main)
// The addon comes from the platform package, not from a stray .node next to the entry.
const loaded = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
assert.deepStrictEqual(loaded.map((f) => path.relative(process.cwd(), f)), [
  path.join('node_modules', '@oma-kernel', 'core-linux-x64-gnu', 'oma-kernel.linux-x64-gnu.node'),
])
assert.ok(Object.keys(core).length >= 40, Object.keys(core).join(','))

scenario(core, 'cjs').then(() => console.log(`cjs: ok (${Object.keys(core).length} exports, node ${process.version})`), (err) => {
  console.error(err)
  process.exit(1)
})
