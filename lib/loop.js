'use strict'
const native = require('./native.js')

/** §6: the detector itself is the kernel's; this class only converts blocks to JSON. */
class LoopDetector {
  /** @param {import('../index.js').LoopDetectionConfig} [config] */
  constructor(config = {}) {
    // `match` (beyond the original) is checked by the kernel; unset it costs nothing.
    const m = config.match
    this._core =
      m === undefined
        ? new native.LoopDetectorCore(config.maxRepetitions, config.loopDetectionWindow)
        : new native.LoopDetectorCore(config.maxRepetitions, config.loopDetectionWindow, JSON.stringify(m) ?? 'null')
  }
  /** @param {ReadonlyArray<{ readonly name: string, readonly input: unknown }>} blocks */
  recordToolCalls(blocks) {
    if (blocks.length === 0) return null
    const names = blocks.map((b) => String(b.name))
    const inputs = blocks.map((b) => JSON.stringify(b.input ?? {}))
    return local(this._core.recordToolCalls(names, inputs))
  }
  /** @param {string} text */
  recordText(text) {
    return local(this._core.recordText(String(text)))
  }
}

// Objects made by the addon belong to Node's main realm; users' tests compare in theirs.
/** @param {import('../binding').LoopInfoOut | null} info */
function local(info) {
  return info ? { kind: info.kind, repetitions: info.repetitions, detail: info.detail } : null
}

/** @param {import('../index.js').LLMMessage[]} messages */
function estimateTokens(messages) {
  return native.estimateTokensJson(JSON.stringify(messages))
}

module.exports = { LoopDetector, estimateTokens, localLoopInfo: local }
