// A tool call that waits for an executor slot (issue 18: such a call is a record in the
// semaphore's queue and its steps are chained with `then`, not an async frame). Whatever ends it
// (a result, a tool that throws at once, a schema or an option that throws, a gate), it settles
// its own promise, frees its slot for the next waiter, keeps FIFO order and leaves no unhandled
// rejection behind.
import { z } from 'zod'
import { ToolRegistry, ToolExecutor, defineTool, ToolUseContext } from '../index'
import { failOnUnhandledRejection } from './helpers/async'

const ctx: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' } }

/** A tool that finishes when `release()` is called, so that it holds the only slot meanwhile. */
function holder() {
  let release!: () => void
  const done = new Promise<void>((r) => { release = r })
  const tool = defineTool({
    name: 'hold',
    description: 'holds the slot',
    inputSchema: z.object({}),
    execute: async () => {
      await done
      return { data: 'held' }
    },
  })
  return { tool, release }
}

function setup(extra: any[] = [], options: Record<string, unknown> = {}) {
  const h = holder()
  const order: string[] = []
  const reg = new ToolRegistry()
  reg.register(h.tool)
  reg.register(defineTool({
    name: 'echo',
    description: 'echo',
    inputSchema: z.object({ s: z.string() }),
    execute: async ({ s }) => {
      order.push(s)
      return { data: s }
    },
  }))
  for (const t of extra) reg.register(t)
  const ex = new ToolExecutor(reg, { maxConcurrency: 1, ...options })
  return { ex, h, order }
}

// The executor's semaphore (not in the public types, as upstream's is private).
const sem = (ex: ToolExecutor): { active: number; pending: number } => (ex as any).semaphore

// Any stray rejection gets 20 ms to be reported.
failOnUnhandledRejection(() => new Promise((r) => setTimeout(r, 20)))

test('parked calls run in FIFO order once the slot is free, each with its own result', async () => {
  const { ex, h, order } = setup()
  const first = ex.execute('hold', {}, ctx)
  const waiting = ['a', 'b', 'c'].map((s) => ex.execute('echo', { s }, ctx))
  expect(sem(ex).pending).toBe(3)
  expect(order).toEqual([])
  h.release()
  expect(await first).toEqual({ data: 'held' })
  expect(await Promise.all(waiting)).toEqual([{ data: 'a' }, { data: 'b' }, { data: 'c' }])
  expect(order).toEqual(['a', 'b', 'c'])
  expect(sem(ex).active).toBe(0)
  expect(sem(ex).pending).toBe(0)
})

test('a parked call whose tool throws at once, or rejects, answers isError and frees the slot', async () => {
  const sync = defineTool({ name: 'sync', description: 'd', inputSchema: z.object({}), execute: (() => { throw new Error('at once') }) as any })
  const rejects = defineTool({ name: 'rejects', description: 'd', inputSchema: z.object({}), execute: async () => { throw new Error('later') } })
  const { ex, h } = setup([sync, rejects])
  // The same calls with the slot free: what a parked call must answer too.
  const directA = await ex.execute('sync', {}, ctx)
  const directB = await ex.execute('rejects', {}, ctx)
  expect(directA).toMatchObject({ isError: true })
  expect(directA.data).toContain('at once')
  expect(directB.data).toContain('later')
  const first = ex.execute('hold', {}, ctx)
  const a = ex.execute('sync', {}, ctx)
  const b = ex.execute('rejects', {}, ctx)
  const c = ex.execute('echo', { s: 'after' }, ctx)
  h.release()
  await first
  expect(await a).toEqual(directA)
  expect(await b).toEqual(directB)
  expect(await c).toEqual({ data: 'after' })
})

test('a parked call whose schema throws rejects its own promise; the next waiter still runs', async () => {
  // Zod lets an exception thrown by a refinement out of safeParse.
  const throwing = z.object({}).refine(() => { throw new Error('schema blew up') })
  const bad = defineTool({ name: 'bad', description: 'd', inputSchema: throwing, execute: async () => ({ data: 'never' }) })
  const { ex, h } = setup([bad])
  const direct = ex.execute('bad', {}, ctx) // takes the free slot itself
  await expect(direct).rejects.toThrow('schema blew up')
  const first = ex.execute('hold', {}, ctx)
  const parked = ex.execute('bad', {}, ctx)
  const next = ex.execute('echo', { s: 'next' }, ctx)
  h.release()
  await first
  await expect(parked).rejects.toThrow('schema blew up')
  expect(await next).toEqual({ data: 'next' })
  expect(sem(ex).active).toBe(0)
})

test('a bad per-execution timeout rejects a parked call like a direct one', async () => {
  const { ex, h } = setup()
  const direct = ex.execute('echo', { s: 'x' }, ctx, { toolTimeoutMs: NaN })
  await expect(direct).rejects.toThrow(RangeError)
  const first = ex.execute('hold', {}, ctx)
  const parked = ex.execute('echo', { s: 'y' }, ctx, { toolTimeoutMs: NaN })
  const next = ex.execute('echo', { s: 'z' }, ctx)
  h.release()
  await first
  const [p, d] = await Promise.allSettled([parked, direct])
  expect(p.status).toBe('rejected')
  expect(d.status).toBe('rejected')
  expect(String((p as PromiseRejectedResult).reason)).toBe(String((d as PromiseRejectedResult).reason))
  expect(await next).toEqual({ data: 'z' })
})

test('a parked call goes through the gate once its turn comes; a throwing gate is its error result', async () => {
  const seen: string[] = []
  const gate = async ({ input }: any) => {
    if (input.s === undefined) return { action: 'allow' } // the holder
    seen.push(input.s)
    if (input.s === 'boom') throw new Error('gate failed')
    return input.s === 'no' ? { action: 'deny', reason: 'not this one' } : { action: 'allow' }
  }
  const { ex, h, order } = setup([], { onToolCall: gate })
  const first = ex.execute('hold', {}, ctx)
  const yes = ex.execute('echo', { s: 'yes' }, ctx)
  const no = ex.execute('echo', { s: 'no' }, ctx)
  const boom = ex.execute('echo', { s: 'boom' }, ctx)
  expect(seen).toEqual([])
  h.release()
  await first
  const got = await Promise.all([yes, no, boom])
  expect(seen).toEqual(['yes', 'no', 'boom'])
  expect(order).toEqual(['yes'])
  expect(got[0]).toMatchObject({ data: 'yes', metadata: { toolCallGate: { action: 'allow' } } })
  expect(got[1]).toMatchObject({ isError: true, metadata: { toolCallGate: { action: 'deny', reason: 'not this one' } } })
  expect(got[2].isError).toBe(true)
  expect(got[2].data).toContain('gate failed')
  expect(sem(ex).active).toBe(0)
})
