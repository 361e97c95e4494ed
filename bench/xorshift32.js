'use strict'
// xorshift32 (Marsaglia): numbers in [0, 1) from a seed, the same on every run and machine. For
// generated content that must not change between runs: W3's file tree (its tree is generated
// once and reused) and builtin-redaction's generated inputs.

/** @param {number} seed @returns {() => number} */
function xorshift32(seed) {
  let s = seed >>> 0
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 0x100000000
  }
}

module.exports = { xorshift32 }
