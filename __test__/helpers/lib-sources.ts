// lib/'s hand-written modules, read and parsed for the checks that hold lib/ to a rule over its
// source text (history-shapes: no message literal; lib-policy: no user-visible text).
import * as fs from 'fs'
import * as path from 'path'
import * as ts from 'typescript'

export const LIB = path.join(__dirname, '..', '..', 'lib')

/** A node a check found in a file. */
export interface Found {
  file: string
  line: number
  text: string
}

/** lib/*.js in name order, each with its text (the generated modules live in lib/generated). */
export function libSources(): Array<{ file: string; source: string }> {
  return fs
    .readdirSync(LIB)
    .filter((f) => f.endsWith('.js'))
    .sort()
    .map((file) => ({ file, source: fs.readFileSync(path.join(LIB, file), 'utf8') }))
}

/** The nodes of `source`, parsed as JS, that `text` names a text for (null: not one), with the
 *  line each starts on. Every node is visited, those inside a found one too. */
export function findNodes(file: string, source: string, text: (n: ts.Node, sf: ts.SourceFile) => string | null): Found[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const found: Found[] = []
  const visit = (n: ts.Node): void => {
    const t = text(n, sf)
    if (t !== null) found.push({ file, line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, text: t })
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return found
}

/** What a check found in lib/*.js (more than ten files, so that a wrong folder cannot pass), as
 *  `file:line: text`. */
export function findInLib(check: (file: string, source: string) => Found[]): string[] {
  const sources = libSources()
  expect(sources.length).toBeGreaterThan(10)
  return sources.flatMap(({ file, source }) => check(file, source)).map((f) => `${f.file}:${f.line}: ${f.text}`)
}
