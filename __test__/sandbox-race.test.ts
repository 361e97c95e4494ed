// The swap race: a separate process flips `<root>/d` between a real directory and a symlink
// to a directory outside the root in a tight loop, while file_write, file_read, file_edit,
// grep and glob work on paths under `<root>/d`. A check-then-open-by-path implementation
// writes outside within seconds; here nothing outside may ever be created, changed or read.
import { spawn, ChildProcess } from 'child_process'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const b = require('../lib/builtin.js')
// eslint-disable-next-line @typescript-eslint/no-var-requires
const native = require('../binding.js')

const agent = { name: 'a', role: 'r', model: 'm' }
const SECRET = 'OUTSIDE-SECRET'
const ROUNDS = 400

let base: string
let root: string
let outside: string
let swapper: ChildProcess | undefined

// renameat2(RENAME_EXCHANGE) swaps the real directory and the symlink atomically, so the
// name `d` never goes missing (a missing `d` would be re-created by file_write's mkdir -p and
// end the race). Node has no binding for it; Python's ctypes reaches glibc's renameat2.
const SWAPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
root = sys.argv[1]
a, b = (root + '/d').encode(), (root + '/link').encode()
n = 0
while True:
    if libc.renameat2(-100, a, -100, b, 2) == 0:
        n += 1
        if n % 256 == 0:
            with open(root + '/../swaps.tmp', 'w') as f:
                f.write(str(n))
            os.rename(root + '/../swaps.tmp', root + '/../swaps')
            if os.path.exists(root + '/../stop'):
                sys.exit(0)
`

function startSwapper(): ChildProcess {
  fs.writeFileSync(`${base}/swap.py`, SWAPPER)
  const child = spawn('python3', [`${base}/swap.py`, root], { stdio: 'ignore' })
  child.on('error', (e) => {
    throw e
  })
  return child
}

async function stopSwapper(): Promise<number> {
  const exited = new Promise((r) => swapper!.once('exit', r))
  fs.writeFileSync(`${base}/stop`, '')
  await exited
  return Number(fs.readFileSync(`${base}/swaps`, 'utf8'))
}

function outsideState(): string {
  return fs
    .readdirSync(outside)
    .sort()
    .map((n) => {
      const st = fs.statSync(path.join(outside, n))
      return `${n} ${st.mtimeMs} ${fs.readFileSync(path.join(outside, n), 'utf8')}`
    })
    .join('\n')
}

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-race-')))
  root = path.join(base, 'root')
  outside = path.join(base, 'outside')
  fs.mkdirSync(`${root}/d`, { recursive: true })
  fs.mkdirSync(outside)
  fs.writeFileSync(`${root}/d/file.txt`, 'inside')
  fs.writeFileSync(`${outside}/file.txt`, `inside ${SECRET}`)
  fs.symlinkSync(outside, `${root}/link`)
})

afterEach(() => {
  if (swapper && swapper.exitCode === null) swapper.kill('SIGKILL')
  swapper = undefined
  native.builtinForceComponentWalk(false)
  fs.rmSync(base, { recursive: true, force: true })
})

async function waitForSwaps(min: number) {
  for (let i = 0; i < 2000; i++) {
    const n = fs.existsSync(`${base}/swaps`) ? Number(fs.readFileSync(`${base}/swaps`, 'utf8')) : 0
    if (n >= min) return n
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error('swapper made no progress')
}

for (const mode of ['openat2', 'fallback'] as const) {
  test(`tools never touch the outside while <root>/d is swapped (${mode})`, async () => {
    if (mode === 'fallback') native.builtinForceComponentWalk(true)
    const before = outsideState()
    swapper = startSwapper()
    await waitForSwaps(1024)
    const ctx = { agent, cwd: root }
    let landed = 0
    const seen = new Set<string>()
    for (let i = 0; i < ROUNDS; i++) {
      const w = await b.fileWriteTool.execute({ path: `${root}/d/new-${i}.txt`, content: 'x' }, ctx)
      if (!w.isError) landed++
      else seen.add(w.data.replace(/new-\d+/, 'new-N'))
      const r = await b.fileReadTool.execute({ path: `${root}/d/file.txt` }, ctx)
      expect(r.data).not.toContain(SECRET)
      if (r.isError) seen.add(r.data)
      const e = await b.fileEditTool.execute({ path: `${root}/d/file.txt`, old_string: 'inside', new_string: 'inside', replace_all: true }, ctx)
      expect(e.data).not.toContain(SECRET)
      if (i % 20 === 0) {
        const g = await b.grepTool.execute({ pattern: SECRET, path: root }, ctx)
        expect(g).toEqual({ data: 'No matches found.', isError: false })
        const l = await b.globTool.execute({ path: root }, ctx)
        expect(l.data).not.toContain(SECRET)
      }
      expect(fs.readdirSync(outside)).toEqual(['file.txt'])
    }
    const swaps = await stopSwapper()
    // The race really ran: many swaps happened while the tools worked.
    expect(swaps).toBeGreaterThan(2048)
    expect(outsideState()).toBe(before)
    expect(landed).toBeGreaterThan(0)
    // Every failure is one of the sandbox's own texts, never a write that went elsewhere.
    for (const msg of seen) {
      expect(msg).toMatch(/is outside the agent's working directory|ENOENT|ENOTDIR/)
    }
    // Whatever landed, landed inside (in whichever directory held the name at that moment).
    const found: string[] = []
    const visit = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) visit(path.join(dir, e.name))
        else if (e.isFile() && e.name.startsWith('new-')) found.push(e.name)
      }
    }
    visit(root)
    expect(found.length).toBe(landed)
  }, 120000)
}

// Control: the harness does detect an escape. A check-then-open-by-path writer (what the
// original does: realpath, stat, mkdir -p, writeFile) lands files outside under the same loop.
test('control: check-then-open by path escapes under the same swap loop', async () => {
  const fsp = fs.promises
  swapper = startSwapper()
  await waitForSwaps(1024)
  for (let i = 0; i < ROUNDS && fs.readdirSync(outside).length === 1; i++) {
    const p = `${root}/d/naive-${i}.txt`
    let real: string
    try {
      real = await fsp.realpath(path.dirname(p))
    } catch {
      continue
    }
    if (!real.startsWith(root + path.sep)) continue
    try {
      await fsp.mkdir(path.dirname(p), { recursive: true })
      await fsp.writeFile(p, 'x')
    } catch {
      // swapped mid-way
    }
  }
  await stopSwapper()
  expect(fs.readdirSync(outside).length).toBeGreaterThan(1)
}, 120000)
