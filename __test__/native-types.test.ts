// Every function the addon exports has a type: the `#[napi]` exports in the generated
// binding.d.ts, the raw callbacks of src/js/fast.rs in the hand-written lib/native.d.ts. A call
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

  test('lib/native.d.ts compiles strictly', () => {
    const program = ts.createProgram([handWritten], { strict: true, noEmit: true, skipLibCheck: false, types: [] })
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    expect(problems).toEqual([])
  })
})
