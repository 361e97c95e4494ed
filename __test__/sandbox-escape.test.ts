// Escape corpus for the filesystem sandbox (CONTRACT §12 + §21): every case asserts the exact
// result text and that nothing outside the root was read, created or changed. Real files and
// symlinks in a temp dir; the corpus runs once with openat2 and once with the
// component-by-component fallback (forced through a native test hook).
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const b = require('../lib/builtin.js')
// eslint-disable-next-line @typescript-eslint/no-var-requires
const native = require('../binding.js')

const SECRET = 'OUTSIDE-SECRET'
const agent = { name: 'a', role: 'r', model: 'm' }

let base: string
let root: string
let outside: string

function outsideMsg(candidate: string, realRoot = root): string {
  return `Path "${candidate}" is outside the agent's working directory "${realRoot}". Built-in filesystem tools are sandboxed to this directory; set OrchestratorConfig.defaultCwd / AgentConfig.cwd to widen it, or AgentConfig.cwd: null to disable the sandbox.`
}
const absMsg = (p: string) => `Path "${p}" must be absolute. Built-in filesystem tools require absolute paths.`
const nulMsg = (p: string) =>
  `The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received '${p.replace(/\0/g, '\\x00')}'`

/** Everything under `base` except the root: type, content, link target, mtime. */
function snapshot(): string {
  const out: string[] = []
  const visit = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const p = path.join(dir, name)
      if (p === root) continue
      const st = fs.lstatSync(p)
      if (st.isSymbolicLink()) out.push(`L ${p} -> ${fs.readlinkSync(p)}`)
      else if (st.isDirectory()) {
        out.push(`D ${p} ${st.mtimeMs}`)
        visit(p)
      } else out.push(`F ${p} ${st.mtimeMs} ${fs.readFileSync(p, 'latin1')}`)
    }
  }
  visit(base)
  return out.join('\n')
}

type Tool = 'read' | 'write' | 'edit' | 'grep' | 'glob'
interface Case {
  name: string
  tool: Tool
  input: () => Record<string, unknown>
  cwd?: () => string | null
  expect: () => { data: string; isError: boolean }
  /** Expected text differs under the fallback resolver. */
  fallback?: () => { data: string; isError: boolean }
  after?: () => void
}

function toolFor(t: Tool) {
  return { read: b.fileReadTool, write: b.fileWriteTool, edit: b.fileEditTool, grep: b.grepTool, glob: b.globTool }[t]
}

const err = (data: string) => ({ data, isError: true })
const ok = (data: string) => ({ data, isError: false })
const long = 'a'.repeat(300)
const latin1Name = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]) // "caf\xe9.txt"

const cases: Case[] = [
  // Relative paths
  { name: 'relative read', tool: 'read', input: () => ({ path: 'a.txt' }), expect: () => err(absMsg('a.txt')) },
  { name: 'relative write with ..', tool: 'write', input: () => ({ path: '../x.txt', content: 'x' }), expect: () => err(absMsg('../x.txt')) },
  { name: 'relative edit ./', tool: 'edit', input: () => ({ path: './a.txt', old_string: 'a', new_string: 'b' }), expect: () => err(absMsg('./a.txt')) },
  { name: 'relative grep path', tool: 'grep', input: () => ({ pattern: 'x', path: 'sub' }), expect: () => err(absMsg('sub')) },
  { name: 'relative glob path', tool: 'glob', input: () => ({ path: '.' }), expect: () => err(absMsg('.')) },
  // `..` traversal
  { name: '.. read', tool: 'read', input: () => ({ path: `${root}/../outside/secret.txt` }), expect: () => err(outsideMsg(`${outside}/secret.txt`)) },
  { name: '.. write', tool: 'write', input: () => ({ path: `${root}/sub/../../outside/new.txt`, content: 'x' }), expect: () => err(outsideMsg(`${outside}/new.txt`)) },
  { name: '.. edit', tool: 'edit', input: () => ({ path: `${root}/../outside/secret.txt`, old_string: SECRET, new_string: 'x' }), expect: () => err(outsideMsg(`${outside}/secret.txt`)) },
  { name: '.. grep', tool: 'grep', input: () => ({ pattern: SECRET, path: `${root}/..` }), expect: () => err(outsideMsg(base)) },
  { name: '.. glob', tool: 'glob', input: () => ({ path: `${root}/../outside` }), expect: () => err(outsideMsg(outside)) },
  // Absolute paths outside
  { name: 'absolute read', tool: 'read', input: () => ({ path: `${outside}/secret.txt` }), expect: () => err(outsideMsg(`${outside}/secret.txt`)) },
  { name: 'absolute write', tool: 'write', input: () => ({ path: `${outside}/new.txt`, content: 'x' }), expect: () => err(outsideMsg(`${outside}/new.txt`)) },
  { name: 'absolute write sibling of root', tool: 'write', input: () => ({ path: `${base}/sibling.txt`, content: 'x' }), expect: () => err(outsideMsg(`${base}/sibling.txt`)) },
  { name: 'prefix-sharing sibling root2', tool: 'read', input: () => ({ path: `${root}2/x.txt` }), expect: () => err(outsideMsg(`${root}2/x.txt`)) },
  { name: 'grep filesystem root', tool: 'grep', input: () => ({ pattern: SECRET, path: '/' }), expect: () => err(outsideMsg('/')) },
  { name: 'glob outside dir', tool: 'glob', input: () => ({ path: outside }), expect: () => err(outsideMsg(outside)) },
  // Symlink to a file outside
  { name: 'symlink file read', tool: 'read', input: () => ({ path: `${root}/link-file` }), expect: () => err(outsideMsg(`${root}/link-file`)) },
  { name: 'symlink file write', tool: 'write', input: () => ({ path: `${root}/link-file`, content: 'pwned' }), expect: () => err(outsideMsg(`${root}/link-file`)) },
  { name: 'symlink file edit', tool: 'edit', input: () => ({ path: `${root}/link-file`, old_string: SECRET, new_string: 'x' }), expect: () => err(outsideMsg(`${root}/link-file`)) },
  { name: 'symlink file grep', tool: 'grep', input: () => ({ pattern: SECRET, path: `${root}/link-file` }), expect: () => err(outsideMsg(`${root}/link-file`)) },
  { name: 'symlink file glob', tool: 'glob', input: () => ({ path: `${root}/link-file` }), expect: () => err(outsideMsg(`${root}/link-file`)) },
  // Symlink to a directory outside
  { name: 'symlink dir read', tool: 'read', input: () => ({ path: `${root}/link-dir/secret.txt` }), expect: () => err(outsideMsg(`${root}/link-dir/secret.txt`)) },
  { name: 'symlink dir write', tool: 'write', input: () => ({ path: `${root}/link-dir/new.txt`, content: 'x' }), expect: () => err(outsideMsg(`${root}/link-dir/new.txt`)) },
  { name: 'symlink dir write deep', tool: 'write', input: () => ({ path: `${root}/link-dir/deep/new.txt`, content: 'x' }), expect: () => err(outsideMsg(`${root}/link-dir/deep/new.txt`)) },
  { name: 'symlink dir grep', tool: 'grep', input: () => ({ pattern: SECRET, path: `${root}/link-dir` }), expect: () => err(outsideMsg(`${root}/link-dir`)) },
  { name: 'symlink dir glob', tool: 'glob', input: () => ({ path: `${root}/link-dir` }), expect: () => err(outsideMsg(`${root}/link-dir`)) },
  { name: 'grep over root does not follow symlinks', tool: 'grep', input: () => ({ pattern: SECRET }), expect: () => ok('No matches found.') },
  {
    name: 'glob over root lists no symlink targets',
    tool: 'glob',
    input: () => ({}),
    expect: () => ok(['..cache', 'caf\uFFFD.txt', 'in-real.txt', 'sub/inner.txt'].join('\n')),
  },
  // Symlink chains
  { name: 'chain to outside', tool: 'read', input: () => ({ path: `${root}/chain1` }), expect: () => err(outsideMsg(`${root}/chain1`)) },
  { name: 'chain staying inside', tool: 'read', input: () => ({ path: `${root}/in1` }), expect: () => ok('1\tinside') },
  { name: 'relative symlink climbing out', tool: 'read', input: () => ({ path: `${root}/rel-up` }), expect: () => err(outsideMsg(`${root}/rel-up`)) },
  { name: 'chain write to outside', tool: 'write', input: () => ({ path: `${root}/chain1`, content: 'x' }), expect: () => err(outsideMsg(`${root}/chain1`)) },
  // Loops
  {
    name: 'self loop read',
    tool: 'read',
    input: () => ({ path: `${root}/loop` }),
    expect: () => err(`Could not read file "${root}/loop": ELOOP: too many symbolic links encountered, open '${root}/loop'`),
    // Without openat2 a symlink at the end is refused rather than followed.
    fallback: () => err(outsideMsg(`${root}/loop`)),
  },
  {
    name: 'two-link loop write',
    tool: 'write',
    input: () => ({ path: `${root}/loopA`, content: 'x' }),
    expect: () => err(`Failed to write file "${root}/loopA": ELOOP: too many symbolic links encountered, open '${root}/loopA'`),
    fallback: () => err(outsideMsg(`${root}/loopA`)),
  },
  { name: 'loop under a directory path', tool: 'write', input: () => ({ path: `${root}/loop/x.txt`, content: 'x' }), expect: () => err(outsideMsg(`${root}/loop/x.txt`)) },
  // Dangling symlink pointing outside (the original would create the target)
  { name: 'dangling write', tool: 'write', input: () => ({ path: `${root}/dangle`, content: 'x' }), expect: () => err(outsideMsg(`${root}/dangle`)) },
  { name: 'dangling read', tool: 'read', input: () => ({ path: `${root}/dangle` }), expect: () => err(outsideMsg(`${root}/dangle`)) },
  { name: 'dangling edit', tool: 'edit', input: () => ({ path: `${root}/dangle`, old_string: 'a', new_string: 'b' }), expect: () => err(outsideMsg(`${root}/dangle`)) },
  // `..name` entries are inside (§21)
  { name: '..name write', tool: 'write', input: () => ({ path: `${root}/..cache`, content: 'c' }), expect: () => ok(`Updated "${root}/..cache" (1 line, 1 bytes).`) },
  { name: '..name read', tool: 'read', input: () => ({ path: `${root}/..cache` }), expect: () => ok('1\tc') },
  { name: 'nested ..name write', tool: 'write', input: () => ({ path: `${root}/sub/..x/y.txt`, content: 'y\n' }), expect: () => ok(`Created "${root}/sub/..x/y.txt" (2 lines, 2 bytes).`), after: () => fs.rmSync(`${root}/sub/..x`, { recursive: true }) },
  // NUL bytes
  { name: 'NUL read', tool: 'read', input: () => ({ path: `${root}/a\0b` }), expect: () => err(`Could not read file "${root}/a\0b": ${nulMsg(`${root}/a\0b`)}`) },
  { name: 'NUL write', tool: 'write', input: () => ({ path: `${root}/a\0b` , content: 'x' }), expect: () => err(`Failed to write file "${root}/a\0b": ${nulMsg(`${root}/a\0b`)}`) },
  { name: 'NUL in directory', tool: 'write', input: () => ({ path: `${root}/d\0/x.txt`, content: 'x' }), expect: () => err(`Failed to create parent directory "${root}/d\0": ${nulMsg(`${root}/d\0`)}`) },
  { name: 'NUL grep', tool: 'grep', input: () => ({ pattern: 'x', path: `${root}/a\0b` }), expect: () => err(`Cannot access path "${root}/a\0b": ${nulMsg(`${root}/a\0b`)}`) },
  { name: 'NUL traversal', tool: 'read', input: () => ({ path: `${root}/../outside\0/secret.txt` }), expect: () => err(outsideMsg(`${base}/outside\0/secret.txt`)) },
  // Over-long names
  { name: 'long name write', tool: 'write', input: () => ({ path: `${root}/${long}`, content: 'x' }), expect: () => err(`Failed to write file "${root}/${long}": ENAMETOOLONG: name too long, open '${root}/${long}'`) },
  { name: 'long name read', tool: 'read', input: () => ({ path: `${root}/${long}` }), expect: () => err(`Could not read file "${root}/${long}": ENAMETOOLONG: name too long, open '${root}/${long}'`) },
  { name: 'long name dir', tool: 'write', input: () => ({ path: `${root}/${long}/x.txt`, content: 'x' }), expect: () => err(`Failed to create parent directory "${root}/${long}": ENAMETOOLONG: name too long, mkdir '${root}/${long}'`) },
  // Non-UTF-8 names
  { name: 'non-UTF-8 name is not reachable by its lossy spelling', tool: 'read', input: () => ({ path: `${root}/caf\uFFFD.txt` }), expect: () => err(`Could not read file "${root}/caf\uFFFD.txt": ENOENT: no such file or directory, open '${root}/caf\uFFFD.txt'`) },
  { name: 'non-UTF-8 name searched by grep', tool: 'grep', input: () => ({ pattern: 'latin' }), expect: () => ok('caf\uFFFD.txt:1:latin name') },
  { name: 'non-UTF-8 name globbed', tool: 'glob', input: () => ({ pattern: 'caf*' }), expect: () => ok('caf\uFFFD.txt') },
  // Missing root
  {
    name: 'missing root read',
    tool: 'read',
    cwd: () => `${base}/missing`,
    input: () => ({ path: `${base}/missing/a.txt` }),
    expect: () => err(`Could not resolve working directory "${base}/missing": ENOENT: no such file or directory, realpath '${base}/missing'`),
    after: () => expect(fs.existsSync(`${base}/missing`)).toBe(false),
  },
  {
    name: 'missing root reported before outside check',
    tool: 'glob',
    cwd: () => `${base}/missing`,
    input: () => ({ path: `${outside}` }),
    expect: () => err(`Could not resolve working directory "${base}/missing": ENOENT: no such file or directory, realpath '${base}/missing'`),
  },
  {
    name: 'missing root edit',
    tool: 'edit',
    cwd: () => `${base}/missing`,
    input: () => ({ path: `${base}/missing/a.txt`, old_string: 'a', new_string: 'b' }),
    expect: () => err(`Could not resolve working directory "${base}/missing": ENOENT: no such file or directory, realpath '${base}/missing'`),
  },
  { name: 'root through a symlink', tool: 'read', cwd: () => `${base}/rootlink`, input: () => ({ path: `${base}/rootlink/in-real.txt` }), expect: () => ok('1\tinside') },
  { name: 'root through a symlink, path via real root', tool: 'read', cwd: () => `${base}/rootlink`, input: () => ({ path: `${root}/in-real.txt` }), expect: () => err(outsideMsg(`${root}/in-real.txt`)) },
]

function setup() {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-escape-')))
  root = path.join(base, 'root')
  outside = path.join(base, 'outside')
  fs.mkdirSync(`${root}/sub`, { recursive: true })
  fs.mkdirSync(outside)
  fs.mkdirSync(`${root}2`)
  fs.writeFileSync(`${root}2/x.txt`, SECRET)
  fs.writeFileSync(`${outside}/secret.txt`, SECRET)
  fs.writeFileSync(`${root}/in-real.txt`, 'inside')
  fs.writeFileSync(`${root}/sub/inner.txt`, 'inner')
  fs.writeFileSync(`${root}/..cache`, 'c')
  fs.writeFileSync(Buffer.from(`${root}/` + latin1Name.toString('latin1'), 'latin1'), 'latin name')
  fs.symlinkSync(`${outside}/secret.txt`, `${root}/link-file`)
  fs.symlinkSync(outside, `${root}/link-dir`)
  fs.symlinkSync(`${root}/chain2`, `${root}/chain1`)
  fs.symlinkSync(`${outside}/secret.txt`, `${root}/chain2`)
  fs.symlinkSync(`${root}/in2`, `${root}/in1`)
  fs.symlinkSync('in-real.txt', `${root}/in2`)
  fs.symlinkSync('../outside/secret.txt', `${root}/rel-up`)
  fs.symlinkSync('loop', `${root}/loop`)
  fs.symlinkSync('loopB', `${root}/loopA`)
  fs.symlinkSync('loopA', `${root}/loopB`)
  fs.symlinkSync(`${outside}/created-by-dangle.txt`, `${root}/dangle`)
  fs.symlinkSync(root, `${base}/rootlink`)
}

beforeAll(setup)
afterAll(() => {
  native.builtinForceComponentWalk(false)
  fs.rmSync(base, { recursive: true, force: true })
})

test('the corpus has at least 40 cases', () => {
  expect(cases.length).toBeGreaterThanOrEqual(40)
})

for (const mode of ['openat2', 'fallback'] as const) {
  describe(`escape corpus (${mode})`, () => {
    beforeAll(() => {
      if (mode === 'fallback') native.builtinForceComponentWalk(true)
      else native.builtinForceComponentWalk(false)
    })
    for (const c of cases) {
      test(c.name, async () => {
        const before = snapshot()
        const ctx = { agent, cwd: c.cwd ? c.cwd() : root }
        const res = await toolFor(c.tool).execute(c.input(), ctx)
        const want = mode === 'fallback' && c.fallback ? c.fallback() : c.expect()
        expect(res).toEqual(want)
        expect(res.data).not.toContain(SECRET)
        expect(snapshot()).toBe(before)
        expect(fs.existsSync(`${outside}/created-by-dangle.txt`)).toBe(false)
        c.after?.()
      })
    }
  })
}

test('with cwd: null the sandbox is disabled (control: the same read succeeds)', async () => {
  const res = await b.fileReadTool.execute({ path: `${outside}/secret.txt` }, { agent, cwd: null })
  expect(res).toEqual(ok(`1\t${SECRET}`))
})
