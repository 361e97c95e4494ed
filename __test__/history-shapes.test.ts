// One history (issue 31): every message and block the kernel adds to a conversation has one
// shape, declared in Rust (crates/core/src/kernel/message.rs, `shapes`), written by the machine
// and built on the JS side only by the builders generated from it (lib/generated/boundary.js,
// `history`; crates/core/tests/boundary.rs holds them to the Rust writer). So no object literal
// in lib/*.js may build a message (a `role` member) or a text / tool_result block.
import * as ts from 'typescript'
import { findInLib, findNodes, type Found } from './helpers/lib-sources'

/** The object literals of `source` that build a message or a text / tool_result block. */
function messageLiterals(file: string, source: string): Found[] {
  return findNodes(file, source, (n, sf) => {
    if (!ts.isObjectLiteralExpression(n)) return null
    const keys = new Map<string, ts.Expression | null>()
    for (const p of n.properties) {
      if ((ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) {
        keys.set(p.name.text, ts.isPropertyAssignment(p) ? p.initializer : null)
      }
    }
    const type = keys.get('type')
    const tag = type && ts.isStringLiteral(type) ? type.text : null
    // A message has a role and a content; a block is tagged by its type and has its own
    // members (a stream event `{ type: 'text', data }` has no `text`, an agent's `{ name, role,
    // model }` no `content`).
    const builds = (keys.has('role') && keys.has('content')) || (tag === 'text' && keys.has('text')) || (tag === 'tool_result' && keys.has('tool_use_id'))
    return builds ? n.getText(sf) : null
  })
}

describe('one history', () => {
  test('lib/*.js builds no message or text / tool_result block but through the generated builders', () => {
    expect(findInLib(messageLiterals)).toEqual([])
  })

  test('the check finds message and block literals, and not stream events', () => {
    const source = [
      "const m = { role: 'user', content: [] }",
      "const b = { type: 'text', text: 'x' }",
      "const r = { type: 'tool_result', tool_use_id: id, content: c }",
      "const e = { type: 'text', data: 'x' }",
      "const f = { type: 'tool_result', data: block }",
      "const a = { name, role: 'assistant', model }",
      "const u = { type: 'tool_use', id, name, input }",
      'const p = { role, content }',
    ].join('\n')
    expect(messageLiterals('x.js', source).map((f) => f.line)).toEqual([1, 2, 3, 8])
  })

  test('the generated builders build the literals lib/ built before, key for key', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { history } = require('../lib/generated/boundary.js')
    expect(Object.keys(history.toolResultBlock('id', 'out', undefined))).toEqual(['type', 'tool_use_id', 'content', 'is_error'])
    expect(JSON.stringify(history.toolResultBlock('id', 'out', true))).toBe('{"type":"tool_result","tool_use_id":"id","content":"out","is_error":true}')
    expect(JSON.stringify(history.userText('hi'))).toBe('{"role":"user","content":[{"type":"text","text":"hi"}]}')
    const content: unknown[] = []
    expect(history.userMessage(content).content).toBe(content)
    expect(Object.keys(history.assistantMessage(content))).toEqual(['role', 'content'])
    expect(history.message('assistant', content)).toEqual({ role: 'assistant', content })
    expect(Object.isFrozen(history)).toBe(true)
  })
})
