'use strict'
// The glibc floor of the released Linux binary, defined once for the build (scripts/package.js)
// and the install test (scripts/test-packed.js), and the one way both read it off a binary.
const { execFileSync } = require('child_process')

const GLIBC_FLOOR = '2.17'

function cmpVersion(a, b) {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] || 0) - (pb[i] || 0)
    if (d !== 0) return d
  }
  return 0
}

/** The highest GLIBC_x.y symbol version a shared object asks for (null if none). */
function maxGlibc(file) {
  const dump = execFileSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const versions = [...new Set(dump.match(/GLIBC_[0-9.]+/g) || [])].map((v) => v.slice(6))
  versions.sort(cmpVersion)
  return versions.length ? versions[versions.length - 1] : null
}

/** Whether `version` (null: no glibc symbols at all) is within the floor. */
const withinFloor = (version) => !version || cmpVersion(version, GLIBC_FLOOR) <= 0

module.exports = { GLIBC_FLOOR, maxGlibc, withinFloor }
