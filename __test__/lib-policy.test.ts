// lib/ holds no policy (issue 31): every user-visible text of the JS glue comes from the Rust
// side through lib/generated/boundary.js (crates/core/src/boundary.rs), never from a string
// literal in lib/*.js. The check is a heuristic precise enough for this code: a literal (or the
// fixed parts of a template literal) with a letter and a space is a text, unless it is a
// property key, a require path or a Symbol's description (never shown to a user). Type tags,
// event names and keys have no space.
import * as fs from 'fs'
import * as path from 'path'
import * as ts from 'typescript'
import { findInLib, findNodes, type Found, LIB } from './helpers/lib-sources'

// Literals allowed where they are, each with why.
const ALLOWED: Array<{ file: string; text?: string; why: string }> = [
  // The loader's messages run before the binding (and so the generated module's source of
  // truth) is known to load: they explain why it did not.
  { file: 'native.js', why: 'the loader, before the binding loads' },
  // Compared with Object.prototype.toString's output; a tag of the engine, not a text we write.
  { file: 'errors.js', text: '[object Error]', why: "the engine's tag for an Error" },
]

/** The literal texts of `source` (a lib/ file), as the rule above defines them. */
function literalTexts(file: string, source: string): Found[] {
  const isText = (t: string) => /[A-Za-z]/.test(t) && / /.test(t)
  const exempt = (n: ts.Node) => {
    const p = n.parent
    if (ts.isExpressionStatement(p) && (n as ts.StringLiteral).text === 'use strict') return true
    if ((ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p) || ts.isMethodDeclaration(p)) && p.name === n) return true
    if (ts.isCallExpression(p) && ts.isIdentifier(p.expression) && (p.expression.text === 'require' || p.expression.text === 'Symbol')) return true
    return false
  }
  return findNodes(file, source, (n) => {
    let text: string | null = null
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) text = n.text
    else if (ts.isTemplateExpression(n)) text = n.head.text + n.templateSpans.map((s) => '${…}' + s.literal.text).join('')
    return text !== null && isText(text) && !exempt(n) ? text : null
  })
}

const allowed = (f: Found) => ALLOWED.some((a) => a.file === f.file && (a.text === undefined || a.text === f.text))

describe('lib/ holds no policy', () => {
  test('no user-visible text is a string literal in lib/*.js', () => {
    expect(findInLib((file, source) => literalTexts(file, source).filter((f) => !allowed(f)))).toEqual([])
  })

  test('the check finds texts in literals and templates, and not in keys, requires or symbols', () => {
    const source = [
      "'use strict'",
      "const a = require('./some file.js')",
      "const s = Symbol('a symbol description')",
      "const o = { 'a key with spaces': 1, type: 'tool_use' }",
      "throw new Error('Tool failed badly')",
      'const t = (n) => `Tool "${n}" was aborted.`',
      "console.warn(\"double quoted text\")",
    ].join('\n')
    expect(literalTexts('x.js', source).map((f) => [f.line, f.text])).toEqual([
      [5, 'Tool failed badly'],
      [6, 'Tool "${…}" was aborted.'],
      [7, 'double quoted text'],
    ])
  })

  test('the generated module is the one lib/ reads, frozen all the way down', () => {
    const boundary = require('../lib/generated/boundary.js')
    const frozen = (v: unknown): boolean =>
      v === null || typeof v !== 'object' ? true : Object.isFrozen(v) && Object.values(v as object).every(frozen)
    expect(frozen(boundary)).toBe(true)
    // A template is a function of its placeholders that fills them in.
    expect(boundary.executor.abortedDuringExecution('t')).toBe('Tool "t" was aborted during execution.')
  })

  test('its declarations compile strictly and name every value it exports', () => {
    const dts = path.join(LIB, 'generated', 'boundary.d.ts')
    const program = ts.createProgram([dts], { strict: true, noEmit: true, skipLibCheck: false, types: [] })
    expect(ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([])
    const declared = [...fs.readFileSync(dts, 'utf8').matchAll(/^export declare const (\w+)/gm)].map((m) => m[1])
    expect(declared.sort()).toEqual(Object.keys(require('../lib/generated/boundary.js')).sort())
  })
})
