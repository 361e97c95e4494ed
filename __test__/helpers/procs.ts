// Process probes for the tests that check what a shell command leaves behind (bash, the
// ShellExecutor seam, the confined shell, tool timeouts): read from /proc, so Linux only.
import * as fs from 'fs'

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
