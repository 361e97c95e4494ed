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

module.exports = { residentSplit, v8Spaces }
