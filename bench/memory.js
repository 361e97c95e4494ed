'use strict'
// Where a process's resident memory is, for bench/run.js (W2) and bench/soak.js (issue 18).

const fs = require('fs')
const v8 = require('v8')

/** Resident bytes of a process's anonymous mappings (V8's heap, malloc arenas, stacks) and of its
 *  file-backed ones (the node binary, the addon's code, shared libraries), summed from
 *  /proc/<pid>/smaps (Linux); null where there is no such file. Reading it allocates megabytes
 *  of text: read another process's, or read your own only once the measured work is over. */
function residentSplit(pid = 'self') {
  let smaps
  try {
    smaps = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8')
  } catch {
    return null
  }
  let anon = 0
  let file = 0
  let fileBacked = false
  for (const line of smaps.split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)/.exec(line)
    if (m) {
      // Inode 0: anonymous (named ones such as [heap] and [stack] included).
      fileBacked = m[1] !== '0'
      continue
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line)
    if (r) {
      if (fileBacked) file += Number(r[1]) * 1024
      else anon += Number(r[1]) * 1024
    }
  }
  return { anon, file }
}

/** This process's V8 heap spaces by physical size in bytes (`{ new_space, old_space, … }`). */
function v8Spaces() {
  const spaces = {}
  for (const sp of v8.getHeapSpaceStatistics()) spaces[sp.space_name] = sp.physical_space_size
  return spaces
}

/** The young generation's capacity in bytes (both semi-spaces): V8 doubles it when the bytes that
 *  survived its scavenges since the last growth exceed one semi-space, and the pages it then
 *  fills stay resident (W2's largest share, see bench/README.md). */
function youngCapacity() {
  return v8.getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space').space_size
}

/** Counts V8's collections from now on: `count(t0, t1)` gives `{ minor, major }` that started in
 *  [t0, t1] (performance.now() times). Node delivers the entries in batches some time after the
 *  collections (not by the next setImmediate, measured): await `settle()` before counting.
 *  `stop()` disconnects. */
function gcCounter() {
  const { PerformanceObserver, constants } = require('perf_hooks')
  const seen = []
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) seen.push({ start: e.startTime, kind: e.detail.kind })
  })
  obs.observe({ entryTypes: ['gc'] })
  return {
    count(t0, t1) {
      let minor = 0
      let major = 0
      for (const e of seen) {
        if (e.start < t0 || e.start > t1) continue
        if (e.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++
        else if (e.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++
      }
      return { minor, major }
    },
    settle() { return new Promise((resolve) => setTimeout(resolve, 200)) },
    stop() { obs.disconnect() },
  }
}

module.exports = { residentSplit, v8Spaces, youngCapacity, gcCounter }
