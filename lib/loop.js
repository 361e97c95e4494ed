'use strict'
const native = require('./native.js')

/** §6: the detector itself is the kernel's; this class only converts blocks to JSON. */
class LoopDetector {
  constructor(config = {}) {
    this._core = new native.LoopDetectorCore(config.maxRepetitions, config.loopDetectionWindow)
  }
  recordToolCalls(blocks) {
    if (blocks.length === 0) return null
    const names = blocks.map((b) => String(b.name))
    const inputs = blocks.map((b) => JSON.stringify(b.input ?? {}))
    return local(this._core.recordToolCalls(names, inputs))
  }
  recordText(text) {
    return local(this._core.recordText(String(text)))
  }
}

// Objects made by the addon belong to Node's main realm; users' tests compare in theirs.
function local(info) {
  return info ? { kind: info.kind, repetitions: info.repetitions, detail: info.detail } : null
}

function estimateTokens(messages) {
  return native.estimateTokensJson(JSON.stringify(messages))
}

module.exports = { LoopDetector, estimateTokens, localLoopInfo: local }
