// bash (CONTRACT §11.3) with real processes: layout, environment, exit codes, and the
// process table after a timeout or an abort (nothing the command started survives,
// setsid / double-fork / nohup included).
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { abortTree, runTree, uniqueMarker, withMarker } from './helpers/procs'
import { allowedNames, withForeignVars } from './helpers/shell-env'
import type { ToolResult } from '../index'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { bashTool } = require('../lib/builtin.js')

const ctx = { agent: { name: 'a', role: 'r', model: 'm' } }
let dir: string

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-bash-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))


describe('output layout and exit codes', () => {
  test('stdout then stderr', async () => {
    expect(await bashTool.execute({ command: 'echo out; echo err >&2' }, ctx)).toEqual({ data: 'out\n\n--- stderr ---\nerr\n', isError: false })
  })
  test('stderr only with a non-zero exit', async () => {
    expect(await bashTool.execute({ command: 'echo err >&2; exit 3' }, ctx)).toEqual({ data: 'err\n\n\n(exit code: 3)', isError: true })
  })
  test('no output', async () => {
    expect(await bashTool.execute({ command: 'true' }, ctx)).toEqual({ data: '(command completed with no output)', isError: false })
    expect(await bashTool.execute({ command: 'exit 7' }, ctx)).toEqual({ data: '(command exited with code 7, no output)', isError: true })
  })
  test('timeout → 124', async () => {
    expect(await bashTool.execute({ command: 'sleep 30', timeout: 100 }, ctx)).toEqual({ data: '(command exited with code 124, no output)', isError: true })
  })
  test('abort → 130, output so far kept', async () => {
    const ac = new AbortController()
    const flag = path.join(dir, 'started-flag')
    const p = bashTool.execute({ command: `echo started; touch ${flag}; sleep 30` }, { ...ctx, abortSignal: ac.signal })
    // Abort once the command has certainly written its output.
    for (let i = 0; i < 3000 && !fs.existsSync(flag); i++) await new Promise((res) => setTimeout(res, 10))
    ac.abort()
    expect(await p).toEqual({ data: 'started\n\n\n(exit code: 130)', isError: true })
  })
  test('spawn failure: missing cwd', async () => {
    expect(await bashTool.execute({ command: 'true', cwd: path.join(dir, 'nope') }, ctx)).toEqual({
      data: 'spawn bash ENOENT\n\n(exit code: 127)',
      isError: true,
    })
  })
  test('spawn failure: bash not on PATH', async () => {
    const saved = process.env.PATH
    process.env.PATH = path.join(dir, 'empty-bin')
    try {
      expect(await bashTool.execute({ command: 'true' }, ctx)).toEqual({ data: 'spawn bash ENOENT\n\n(exit code: 127)', isError: true })
    } finally {
      process.env.PATH = saved
    }
  })
  test('cwd input is used', async () => {
    expect(await bashTool.execute({ command: 'pwd -P', cwd: dir }, ctx)).toEqual({ data: fs.realpathSync(dir) + '\n', isError: false })
  })
  test('invalid input uses the Zod texts', async () => {
    expect(await bashTool.execute({ timeout: 5 }, ctx)).toEqual({ data: 'Invalid input for tool "bash":\n  \u2022 command: Required', isError: true })
  })
})

describe('environment', () => {
  test('only the allowlist reaches the shell, read at call time; output is redacted', async () => {
    await withForeignVars('OMA_TEST_VISIBLE', async () => {
      process.env.LANG = 'C.UTF-8'
      const r = await bashTool.execute({ command: 'env | sort' }, ctx)
      expect(r.isError).toBe(false)
      allowedNames(r.data)
      expect(r.data).toContain('LANG=C.UTF-8')
      expect(r.data).toContain('PWD=[redacted]')
      expect(r.data).not.toContain('OPENAI')
      expect(r.data).not.toContain('OMA_TEST_VISIBLE')
    })
  })
  test('secrets printed by the command are redacted', async () => {
    const r = await bashTool.execute({ command: 'echo "password=hunter2"; echo "Authorization: Bearer abcdefghijkl"' }, ctx)
    expect(r).toEqual({ data: 'password=[redacted]\nAuthorization: [redacted]\n', isError: false })
  })
})

describe('nothing survives a timeout or an abort', () => {
  // The command starts: a background child in bash's group, a setsid'd double-forked
  // daemon, a nohup'd setsid child with its output redirected, and a child ignoring
  // SIGTERM/SIGHUP; it records their pids, then blocks.
  function command(marker: string, pidFile: string): string {
    return [
      `sleep ${marker} & echo $! >> ${pidFile}`,
      `( setsid bash -c 'sleep ${marker} & echo $! >> ${pidFile}; exec sleep ${marker}' & )`,
      `setsid nohup sleep ${marker} >/dev/null 2>&1 < /dev/null & echo $! >> ${pidFile}`,
      `bash -c 'trap "" TERM HUP; echo $$ >> ${pidFile}; exec sleep ${marker}' &`,
      // Wait until all four pids are recorded, then block.
      `while [ "$(wc -l < ${pidFile})" -lt 4 ]; do sleep 0.01; done`,
      `echo ready`,
      `sleep ${marker}`,
    ].join('\n')
  }

  test('after a timeout', async () => {
    const { result, pids } = await runTree(dir, (marker, pidFile) => bashTool.execute({ command: command(marker, pidFile), timeout: 3000 }, ctx))
    expect(result).toEqual({ data: 'ready\n\n\n(exit code: 124)', isError: true })
    expect(pids.length).toBeGreaterThanOrEqual(4)
  })

  test('after an abort', async () => {
    const r = await abortTree<ToolResult>(dir, 4, (marker, pidFile, abortSignal) => bashTool.execute({ command: command(marker, pidFile) }, { ...ctx, abortSignal }))
    expect(r.isError).toBe(true)
    // The abort can land before or after `echo ready`.
    expect(r.data).toMatch(/^(ready\n\n\n\(exit code: 130\)|\(command exited with code 130, no output\))$/)
  })

  test('returns while a setsid descendant holds stdout open, and kills it', async () => {
    const marker = uniqueMarker()
    const r = await bashTool.execute({ command: `setsid sleep ${marker} & echo bg`, timeout: 800 }, ctx)
    // bash itself exited 0; the timer then killed the holder of the pipe.
    expect(r).toEqual({ data: 'bg\n', isError: false })
    expect(withMarker(marker)).toEqual([])
  })
})

test('output kept in memory is bounded', async () => {
  const r = await bashTool.execute({ command: 'head -c 12000000 /dev/zero | tr "\\0" x' }, ctx)
  expect(r.isError).toBe(false)
  expect(r.data.length).toBeLessThan(10 * 1024 * 1024 + 100)
  expect(r.data.startsWith('xxxx')).toBe(true)
  expect(r.data.endsWith('\n[output truncated: more than 10485760 bytes]')).toBe(true)
})
