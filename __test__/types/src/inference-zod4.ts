// defineTool infers execute's input from Zod 4 schemas too, whatever `zod` resolves to: here the
// `zod/v4` (classic) and `zod/v4-mini` entries that zod 3.25 ships with Zod 4's types.
import { z } from 'zod/v4'
import * as zm from 'zod/v4-mini'
import { defineTool, ToolRegistry } from '@oma-kernel/core'
import type { ToolUseContext } from '@oma-kernel/core'

declare const ctx: ToolUseContext

const classic = defineTool({
  name: 'classic',
  description: 'Zod 4 classic',
  inputSchema: z.object({ city: z.string(), days: z.number().int().optional(), unit: z.enum(['c', 'f']).default('c') }),
  execute: async ({ city, days, unit }) => {
    const u: 'c' | 'f' = unit
    // @ts-expect-error `days` is optional: possibly undefined
    days.toFixed()
    return { data: `${city}${days ?? 1}${u}` }
  },
})
export const out = classic.execute({ city: 'Bern', unit: 'c' }, ctx)
// @ts-expect-error `city` must be a string
classic.execute({ city: 1, unit: 'c' }, ctx)
export const parsed: { city: string; days?: number; unit: 'c' | 'f' } = classic.inputSchema.parse({ city: 'x' })

defineTool({
  name: 'classic-bad',
  description: 'd',
  inputSchema: z.object({ a: z.number() }),
  // @ts-expect-error `c` is not in the Zod 4 schema
  execute: async ({ c }) => ({ data: String(c) }),
})

defineTool({
  name: 'classic-transform',
  description: 'd',
  inputSchema: z.object({ n: z.string().transform((s) => s.length) }),
  execute: async ({ n }) => {
    // @ts-expect-error `n` is a number after the transform
    n.toUpperCase()
    return { data: String(n + 1) }
  },
})

// @ts-expect-error an annotated parameter must match the Zod 4 schema
defineTool({ name: 'classic-annotated', description: 'd', inputSchema: z.object({ a: z.number() }), execute: async (input: { a: string }) => ({ data: input.a }) })

const mini = defineTool({
  name: 'mini',
  description: 'Zod 4 mini',
  inputSchema: zm.object({ q: zm.string(), limit: zm.optional(zm.number()) }),
  execute: async ({ q, limit }) => {
    // @ts-expect-error `q` is a string
    const n: number = q
    return { data: `${q}${limit ?? ''}${n}` }
  },
})
// @ts-expect-error `q` is required
mini.execute({}, ctx)

const registry = new ToolRegistry()
registry.register(classic)
registry.register(mini)
