// Waiting without a clock, and the unhandled-rejection watch of the suites that check that what
// the kernel leaves behind (an abandoned hook, gate or tool, a parked call) is always handled.

/** A promise and its resolver: a condition a test waits on instead of a clock. */
export function signal<T = void>() {
  let fire!: (v: T) => void
  const fired = new Promise<T>((r) => { fire = r })
  return { fire, fired }
}

/** A few macrotask turns: every pending microtask and immediate has run. */
export const turns = async (n = 3) => { for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r)) }

/**
 * Fails every test of the calling file that leaves an unhandled rejection behind. `settle` runs
 * after the test and gives a stray rejection the turns it needs to be reported.
 */
export function failOnUnhandledRejection(settle: () => Promise<unknown> = turns): void {
  let unhandled: unknown[] = []
  const onUnhandled = (e: unknown) => { unhandled.push(e) }
  beforeEach(() => {
    unhandled = []
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    await settle()
    process.off('unhandledRejection', onUnhandled)
    expect(unhandled).toEqual([])
  })
}

/** `read()` once it is defined, asked again every 20 ms (the test's own timeout bounds it). */
export async function until<T>(read: () => T | undefined): Promise<T> {
  for (;;) {
    const v = read()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, 20))
  }
}
