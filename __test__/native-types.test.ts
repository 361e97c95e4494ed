// Every function the addon exports has a type: the `#[napi]` exports in the generated
// binding.d.ts, the raw callbacks of src/js/fast.rs in lib/native.d.ts (generated from their
// declarations in crates/core/src/boundary/raw.rs). A call
// added on the Rust side without a declaration (or a declaration left behind by a removed call)
// fails here.
import * as fs from 'fs'
import * as path from 'path'
import * as ts from 'typescript'

const root = path.join(__dirname, '..')
const generated = path.join(root, 'binding.d.ts')
const handWritten = path.join(root, 'lib', 'native.d.ts')

function declaredNames(file: string): Set<string> {
  const text = fs.readFileSync(file, 'utf8')
  return new Set([...text.matchAll(/^export declare (?:function|class|const|enum) (\w+)/gm)].map((m) => m[1]))
}

describe('types of the native binding', () => {
  const binding = require('../binding.js')
  const exported = Object.keys(binding).filter((k) => typeof binding[k] === 'function')
  const raw = declaredNames(handWritten)
  const napi = declaredNames(generated)

  test('every exported function is declared', () => {
    expect(exported.filter((name) => !raw.has(name) && !napi.has(name))).toEqual([])
  })

  test('lib/native.d.ts declares only functions the binding has, and none napi already types', () => {
    expect([...raw].filter((name) => typeof binding[name] !== 'function')).toEqual([])
    expect([...raw].filter((name) => napi.has(name))).toEqual([])
  })

  test('the raw callbacks fast.rs registers are exactly those lib/native.d.ts declares', () => {
    const rawExported = exported.filter((name) => !napi.has(name)).sort()
    const declaredFunctions = [...fs.readFileSync(handWritten, 'utf8').matchAll(/^export declare function (\w+)/gm)].map((m) => m[1])
    expect(rawExported).toEqual(declaredFunctions.sort())
  })

  test('lib/native.d.ts compiles strictly', () => {
    const program = ts.createProgram([handWritten], { strict: true, noEmit: true, skipLibCheck: false, types: [] })
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    expect(problems).toEqual([])
  })
})

describe('constants the binding hands over', () => {
  test('TOOL_PRESETS and AGENT_FRAMEWORK_DISALLOWED: frozen, one object, the 1.7.0 values', () => {
    const index = require('../index.js')
    const wire = require('../lib/wire.js')
    expect(index.TOOL_PRESETS).toBe(wire.TOOL_PRESETS)
    expect(index.AGENT_FRAMEWORK_DISALLOWED).toBe(wire.AGENT_FRAMEWORK_DISALLOWED)
    expect(Object.keys(index.TOOL_PRESETS)).toEqual(['readonly', 'readwrite', 'full'])
    expect(index.TOOL_PRESETS).toEqual({
      readonly: ['file_read', 'grep', 'glob'],
      readwrite: ['file_read', 'file_write', 'file_edit', 'grep', 'glob'],
      full: ['file_read', 'file_write', 'file_edit', 'grep', 'glob', 'bash'],
    })
    expect(Object.isFrozen(index.TOOL_PRESETS)).toBe(true)
    for (const list of Object.values(index.TOOL_PRESETS)) expect(Object.isFrozen(list)).toBe(true)
    expect(index.AGENT_FRAMEWORK_DISALLOWED).toEqual([])
    expect(Object.isFrozen(index.AGENT_FRAMEWORK_DISALLOWED)).toBe(true)
  })

  test('the action codes are distinct and fit the numeric layout', () => {
    const { OP } = require('../lib/wire.js')
    const { kindBits } = require('../lib/generated/boundary.js').wire
    const codes = Object.values(OP) as number[]
    expect(new Set(codes).size).toBe(codes.length)
    for (const c of codes) expect(c).toBeLessThan(1 << kindBits)
  })
})
