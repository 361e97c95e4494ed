// Which timers of one length code arms and clears: the deadline tests (an LLM call's, a tool's)
// check that every deadline they arm is cleared. Only timers of the watched length count: a
// process-wide count of active timers also sees other tests' sockets and the run's own timers.

/** Watches `setTimeout(_, ms)` and `clearTimeout` until `restore()`. */
export function watchTimers(ms: number) {
  const realSet = global.setTimeout
  const realClear = global.clearTimeout
  /** The watched timers armed and not cleared yet. */
  const live = new Set<unknown>()
  let armed = 0
  const set = jest.spyOn(global, 'setTimeout').mockImplementation(((fn: (...a: unknown[]) => void, delay?: number, ...args: unknown[]) => {
    const handle = realSet(fn, delay, ...args)
    if (delay === ms) {
      armed++
      live.add(handle)
    }
    return handle
  }) as typeof setTimeout)
  const clear = jest.spyOn(global, 'clearTimeout').mockImplementation(((handle: Parameters<typeof clearTimeout>[0]) => {
    live.delete(handle)
    realClear(handle)
  }) as typeof clearTimeout)
  return {
    live,
    /** How many watched timers were armed. */
    armed: () => armed,
    /** The real functions back. */
    restore() {
      set.mockRestore()
      clear.mockRestore()
    },
    /** Clears the watched timers still live (they stay in `live`). */
    clearLive() {
      for (const h of live) realClear(h as Parameters<typeof clearTimeout>[0])
    },
  }
}
