// A delay longer than Node's timers hold (2^31 - 1 ms; a longer one fires after 1 ms) is armed in
// pieces: the one rule behind callTimeoutMs, toolTimeoutMs and an Agent's timeoutMs.
const { armTimer, MAX_TIMER_MS } = require('../lib/deadline.js')

describe('armTimer', () => {
  test('arms pieces no longer than a Node timer holds and ends once, after the whole delay', () => {
    const armed: number[] = []
    let due: (() => void) | null = null
    const set = (fn: (...a: unknown[]) => void, ms: number, ...args: unknown[]) => {
      armed.push(ms)
      due = () => fn(...args)
      return { piece: armed.length }
    }
    let ended = 0
    const owner: any = { timer: null, arm(r: number) { armTimer(owner, set, r) }, timeUp() { ended += 1 } }
    owner.arm(2 * MAX_TIMER_MS + 5)
    expect(armed).toEqual([MAX_TIMER_MS])
    expect(owner.timer).toEqual({ piece: 1 })
    due!()
    due!()
    expect(armed).toEqual([MAX_TIMER_MS, MAX_TIMER_MS, 5])
    expect(ended).toBe(0)
    due!()
    expect(ended).toBe(1)
    expect(owner.timer).toBeNull()
  })

  test('a delay a Node timer holds is one piece', () => {
    const armed: number[] = []
    let ended = 0
    const owner: any = { timer: null, arm(r: number) { armTimer(owner, set, r) }, timeUp() { ended += 1 } }
    function set(fn: (...a: unknown[]) => void, ms: number, ...args: unknown[]) {
      armed.push(ms)
      fn(...args)
      return 't'
    }
    owner.arm(MAX_TIMER_MS)
    expect(armed).toEqual([MAX_TIMER_MS])
    expect(ended).toBe(1)
  })
})
