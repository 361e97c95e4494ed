// Process probes for the tests that check what a shell command leaves behind (bash, the
// ShellExecutor seam, the confined shell, tool timeouts): read from /proc, so Linux only.
import * as fs from 'fs'
import * as path from 'path'

function isZombie(pid: number | string): boolean {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z'
}

/** Whether a process runs (a zombie still answers kill(0); it is dead for our purpose). */
export function alive(pid: number): boolean {
  try {
    return !isZombie(pid)
  } catch {
    return false
  }
}

/** Processes whose command line contains `marker` (zombies included unless `liveOnly`). */
export function withMarker(marker: string, liveOnly = false): number[] {
  const out: number[] = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (liveOnly && isZombie(name)) continue
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) out.push(Number(name))
    } catch {
      // gone
    }
  }
  return out
}

/** A string no other process's command line contains, to find a test's processes by. */
export function uniqueMarker(): string {
  return `${1000 + Math.floor(Math.random() * 1000)}.${process.pid}${Math.floor(Math.random() * 1e6)}`
}

/** A fresh marker and an empty file in `dir` named after it, for a command to list its pids in. */
export function markedPidFile(dir: string): { marker: string; pidFile: string } {
  const marker = uniqueMarker()
  const pidFile = path.join(dir, `pids-${marker}`)
  fs.writeFileSync(pidFile, '')
  return { marker, pidFile }
}

/** The pids listed in `file`, one a line. */
export function pidsIn(file: string): number[] {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number)
}

/** Until `file` lists `n` pids, asked every 10 ms; gives up after 10 s (the assertions then tell). */
export async function waitForPids(file: string, n: number): Promise<void> {
  for (let i = 0; i < 1000 && pidsIn(file).length < n; i++) await new Promise((r) => setTimeout(r, 10))
}

/** Every one of `pids` is dead, and no process with `marker` in its command line is left. */
export function expectTreeGone(pids: number[], marker: string): void {
  for (const pid of pids) expect(alive(pid)).toBe(false)
  expect(withMarker(marker)).toEqual([])
}

/** Runs a command that lists its process tree's pids in a fresh pid file (`markedPidFile`) to
 *  its end (its timeout), then checks the tree is gone (`expectTreeGone`). Returns the result and
 *  the pids the command listed. */
export async function runTree<R>(dir: string, run: (marker: string, pidFile: string) => Promise<R>): Promise<{ result: R; pids: number[] }> {
  const { marker, pidFile } = markedPidFile(dir)
  const result = await run(marker, pidFile)
  const pids = pidsIn(pidFile)
  expectTreeGone(pids, marker)
  return { result, pids }
}

/** The same, aborted through `signal` once the command has listed `n` pids and at least `n`
 *  marked processes run; every one of those is then gone. Returns the result. */
export async function abortTree<R>(dir: string, n: number, run: (marker: string, pidFile: string, signal: AbortSignal) => Promise<R>): Promise<R> {
  const { marker, pidFile } = markedPidFile(dir)
  const ac = new AbortController()
  const pending = run(marker, pidFile, ac.signal)
  // Abort once everything is running (the pid file is complete).
  await waitForPids(pidFile, n)
  const running = withMarker(marker)
  expect(running.length).toBeGreaterThanOrEqual(n)
  ac.abort()
  const result = await pending
  expectTreeGone(running, marker)
  return result
}
