// ESM: the namespace has exactly the CommonJS names, the same objects (one module instance),
// every name imports statically (esm-names.mjs is generated from the CommonJS export list by
// the test driver), and the scenario runs.
import assert from 'node:assert'
import { createRequire } from 'node:module'
import * as ns from '@oma-kernel/core'
import core, { Agent, ToolRegistry, registerBuiltInTools, TokenBudgetExceededError } from '@oma-kernel/core'
import { names } from './esm-names.mjs'

const require = createRequire(import.meta.url)
const cjs = require('@oma-kernel/core')
const { scenario } = require('./scenario.cjs')

const esmNames = Object.keys(ns).filter((k) => k !== 'default').sort()
assert.deepStrictEqual(esmNames, Object.keys(cjs).sort())
assert.deepStrictEqual(Object.keys(names).sort(), esmNames)
for (const k of esmNames) {
  assert.strictEqual(ns[k], cjs[k], k)
  assert.strictEqual(names[k], cjs[k], k)
}
assert.strictEqual(core, cjs)
assert.strictEqual(Agent, cjs.Agent)
assert.strictEqual(typeof registerBuiltInTools, 'function')
assert.ok(new TokenBudgetExceededError('a', 1, 2) instanceof cjs.TokenBudgetExceededError)
assert.ok(new ToolRegistry() instanceof cjs.ToolRegistry)

await scenario(ns, 'esm')
console.log(`esm: ok (${esmNames.length} names, node ${process.version})`)
