// defineTool infers execute's input from a schema of the `zod` the project resolves (Zod 3 here,
// Zod 4 under tsconfig.zod4-root.json): each @ts-expect-error line is wrong code that must not compile.
import { z } from 'zod'
import { defineTool, ToolRegistry, ToolExecutor } from '@oma-kernel/core'
import type { ToolDefinition, ToolUseContext, AgentConfig } from '@oma-kernel/core'

declare const ctx: ToolUseContext

const add = defineTool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number(), note: z.string().optional() }),
  execute: async ({ a, b, note }) => {
    const sum: number = a + b
    // @ts-expect-error `note` is optional: possibly undefined
    note.toUpperCase()
    return { data: `${sum}${note ?? ''}` }
  },
})
// The result is typed by the schema: the original's ToolDefinition<TInput>.
export const typed: ToolDefinition<{ a: number; b: number; note?: string }> = add
export const executed = add.execute({ a: 1, b: 2 }, ctx)
// @ts-expect-error `a` must be a number
add.execute({ a: '1', b: 2 }, ctx)
// @ts-expect-error `b` is required
add.execute({ a: 1 }, ctx)
export const parsed: { a: number; b: number; note?: string } = add.inputSchema.parse({ a: 1, b: 2 })

defineTool({
  name: 'bad-destructure',
  description: 'd',
  inputSchema: z.object({ a: z.number() }),
  // @ts-expect-error `c` is not in the schema
  execute: async ({ c }) => ({ data: String(c) }),
})

defineTool({
  name: 'bad-use',
  description: 'd',
  inputSchema: z.object({ a: z.number() }),
  execute: async (input) => {
    // @ts-expect-error `a` is a number, not a string
    return { data: input.a.toUpperCase() }
  },
})

// @ts-expect-error an annotated parameter must match the schema
defineTool({
  name: 'bad-annotation',
  description: 'd',
  inputSchema: z.object({ a: z.number() }),
  execute: async (input: { a: string }) => ({ data: input.a }),
})

defineTool({
  name: 'bad-result',
  description: 'd',
  inputSchema: z.object({ a: z.number() }),
  // @ts-expect-error `data` must be a string
  execute: async ({ a }) => ({ data: a }),
})

// Transforms and defaults: execute receives the parsed (output) type.
defineTool({
  name: 'output-type',
  description: 'd',
  inputSchema: z.object({ n: z.string().transform(Number), limit: z.number().default(10) }),
  execute: async ({ n, limit }) => {
    const total: number = n + limit
    // @ts-expect-error `n` is a number after the transform
    n.toUpperCase()
    return { data: String(total) }
  },
})

// Enums, unions, arrays, nested objects.
defineTool({
  name: 'shapes',
  description: 'd',
  inputSchema: z.object({
    mode: z.enum(['fast', 'slow']),
    tags: z.array(z.string()),
    where: z.object({ lat: z.number(), lon: z.number() }).nullable(),
    id: z.union([z.string(), z.number()]),
  }),
  execute: async ({ mode, tags, where, id }) => {
    const m: 'fast' | 'slow' = mode
    // @ts-expect-error 'medium' is not one of the enum's values
    const wrong: typeof mode = 'medium'
    // @ts-expect-error `where` may be null
    where.lat.toFixed()
    return { data: `${m}${tags.join()}${where?.lat ?? ''}${id}${wrong}` }
  },
})

// The original's explicit type argument keeps working, and is checked against the schema.
export const explicit = defineTool<{ q: string }>({
  name: 'explicit',
  description: 'd',
  inputSchema: z.object({ q: z.string() }),
  execute: async ({ q }) => ({ data: q }),
})
// @ts-expect-error the schema does not produce the declared input
defineTool<{ q: number }>({ name: 'explicit-bad', description: 'd', inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => ({ data: String(q) }) })

// outputSchema is a Zod schema of string.
defineTool({ name: 'out', description: 'd', inputSchema: z.object({}), outputSchema: z.string().min(1), execute: async () => ({ data: 'x' }) })
// @ts-expect-error outputSchema validates the string `data`
defineTool({ name: 'out-bad', description: 'd', inputSchema: z.object({}), outputSchema: z.number(), execute: async () => ({ data: 'x' }) })

// oma-kernel: a plain JSON Schema object is accepted; execute's input is then loosely typed.
export const json = defineTool({
  name: 'json',
  description: 'd',
  inputSchema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
  execute: async ({ a }) => ({ data: String(a + 1) }),
})
// ... and can be given a type explicitly.
export const jsonTyped = defineTool<{ a: number }>({
  name: 'json-typed',
  description: 'd',
  inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
  execute: async ({ a }) => ({ data: a.toFixed(1) }),
})
// ... whether it is a literal, a record or a value of an interface type such as JSONSchema7.
interface JSONSchemaLike { type?: string | string[]; properties?: { [k: string]: JSONSchemaLike }; required?: string[]; description?: string }
declare const record: Record<string, unknown>
declare const typedSchema: JSONSchemaLike
const constant = { type: 'object', properties: { a: { type: 'string' } } } as const
export const fromRecord = defineTool({ name: 'r', description: 'd', inputSchema: record, execute: async () => ({ data: '' }) })
export const fromInterface = defineTool({ name: 'i', description: 'd', inputSchema: typedSchema, execute: async () => ({ data: '' }) })
export const fromConst = defineTool({ name: 'c', description: 'd', inputSchema: constant, execute: async () => ({ data: '' }) })
// @ts-expect-error an inputSchema must be a schema object
defineTool({ name: 'no-schema', description: 'd', inputSchema: 42, execute: async () => ({ data: '' }) })
// @ts-expect-error execute must return a Promise of a ToolResult
defineTool({ name: 'sync', description: 'd', inputSchema: z.object({}), execute: () => ({ data: '' }) })

const registry = new ToolRegistry()
registry.register(add)
registry.register(json)
registry.register(jsonTyped)
export const executor = new ToolExecutor(registry, { maxConcurrency: 2 })

// AgentConfig.outputSchema is a Zod schema, as in the original.
export const config: AgentConfig = { name: 'n', model: 'm', outputSchema: z.object({ answer: z.string() }) }
// @ts-expect-error not a Zod schema
export const badConfig: AgentConfig = { name: 'n', model: 'm', outputSchema: 'answer' }
