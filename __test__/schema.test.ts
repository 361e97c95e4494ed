// zodToJsonSchema (CONTRACT §8.3, key order per §7.1) for Zod 3, Zod 4 and plain JSON Schema.
import { z } from 'zod'
import { z as z4 } from 'zod/v4'
import { z as zm } from 'zod/v4-mini'
import { X_STRING_SCHEMA_TEXT } from './helpers/golden'

const { zodToJsonSchema, isZodSchema } = require('../lib/schema.js')

/** Deep equality AND identical key order (JSON text), since key order reaches the prompt. */
function expectSchema(actual: unknown, expected: Record<string, unknown>) {
  expect(actual).toStrictEqual(expected)
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected))
}

enum Num {
  A,
  B,
}
enum Str {
  Red = 'red',
  Green = 'green',
}
enum Mixed {
  X = 'x',
  Y = 5,
}

type Row = {
  name: string
  v3: () => any
  /** The equivalent Zod 4 schema(s); each must give the same output. */
  v4: Array<() => any>
  expected: Record<string, unknown>
}

// One row per line of the §8.3 table (plus variants). Expected literals are written in the
// contract's key order.
const rows: Row[] = [
  { name: 'string', v3: () => z.string(), v4: [() => z4.string()], expected: { type: 'string' } },
  {
    name: 'string with checks (dropped)',
    v3: () => z.string().email().min(3),
    v4: [() => z4.email(), () => z4.string().min(3).max(9)],
    expected: { type: 'string' },
  },
  { name: 'number', v3: () => z.number(), v4: [() => z4.number()], expected: { type: 'number' } },
  {
    name: 'number .int() (checks dropped)',
    v3: () => z.number().int().min(0),
    v4: [() => z4.number().int(), () => z4.int(), () => z4.int32()],
    expected: { type: 'number' },
  },
  { name: 'bigint', v3: () => z.bigint(), v4: [() => z4.bigint(), () => z4.int64()], expected: { type: 'integer' } },
  { name: 'boolean', v3: () => z.boolean(), v4: [() => z4.boolean()], expected: { type: 'boolean' } },
  { name: 'null', v3: () => z.null(), v4: [() => z4.null()], expected: { type: 'null' } },
  { name: 'undefined', v3: () => z.undefined(), v4: [() => z4.undefined()], expected: { type: 'null' } },
  { name: 'void', v3: () => z.void(), v4: [() => z4.void()], expected: { type: 'null' } },
  { name: 'date', v3: () => z.date(), v4: [() => z4.date()], expected: { type: 'string', format: 'date-time' } },
  { name: 'literal string', v3: () => z.literal('a'), v4: [() => z4.literal('a')], expected: { const: 'a' } },
  { name: 'literal number', v3: () => z.literal(3), v4: [() => z4.literal(3)], expected: { const: 3 } },
  { name: 'literal boolean', v3: () => z.literal(false), v4: [() => z4.literal(false)], expected: { const: false } },
  {
    name: 'enum',
    v3: () => z.enum(['b', 'a']),
    v4: [() => z4.enum(['b', 'a'])],
    expected: { type: 'string', enum: ['b', 'a'] },
  },
  {
    name: 'nativeEnum numeric (reverse mapping, integer-like keys first)',
    v3: () => z.nativeEnum(Num),
    v4: [() => z4.enum(Num), () => z4.nativeEnum(Num)],
    expected: { enum: ['A', 'B', 0, 1] },
  },
  {
    name: 'nativeEnum string',
    v3: () => z.nativeEnum(Str),
    v4: [() => z4.enum(Str)],
    expected: { enum: ['red', 'green'] },
  },
  {
    name: 'nativeEnum mixed',
    v3: () => z.nativeEnum(Mixed),
    v4: [() => z4.enum(Mixed)],
    expected: { enum: ['Y', 'x', 5] },
  },
  {
    name: 'array',
    v3: () => z.array(z.string()),
    v4: [() => z4.array(z4.string()), () => z4.string().array()],
    expected: { type: 'array', items: { type: 'string' } },
  },
  {
    name: 'tuple (rest ignored)',
    v3: () => z.tuple([z.string(), z.number()]).rest(z.boolean()),
    v4: [() => z4.tuple([z4.string(), z4.number()], z4.boolean())],
    expected: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] },
  },
  {
    name: 'object: required rules and shape order',
    v3: () =>
      z.object({
        req: z.string(),
        opt: z.string().optional(),
        def: z.number().default(1),
        nul: z.boolean().nullable(),
        nullish: z.string().nullish(),
        // A wrapper on top of optional hides it from the top-level rule: still "required".
        optRefined: z.string().optional().refine(() => true),
        last: z.number(),
      }),
    v4: [
      () =>
        z4.object({
          req: z4.string(),
          opt: z4.string().optional(),
          def: z4.number().default(1),
          nul: z4.boolean().nullable(),
          nullish: z4.string().nullish(),
          optRefined: z4.string().optional().transform((x) => x),
          last: z4.number(),
        }),
    ],
    expected: {
      type: 'object',
      properties: {
        req: { type: 'string' },
        opt: { type: 'string' },
        def: { type: 'number', default: 1 },
        nul: { type: ['boolean', 'null'] },
        nullish: { type: ['string', 'null'] },
        optRefined: { type: 'string' },
        last: { type: 'number' },
      },
      required: ['req', 'optRefined', 'last'],
    },
  },
  {
    name: 'object: required omitted when empty; unknown-key policy not reflected',
    v3: () => z.object({ a: z.string().optional() }).strict(),
    v4: [() => z4.strictObject({ a: z4.string().optional() }), () => z4.looseObject({ a: z4.string().optional() })],
    expected: { type: 'object', properties: { a: { type: 'string' } } },
  },
  {
    name: 'object: passthrough, partial',
    v3: () => z.object({ a: z.string(), b: z.number() }).partial().passthrough(),
    v4: [() => z4.object({ a: z4.string(), b: z4.number() }).partial().passthrough()],
    expected: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } },
  },
  {
    name: 'empty object',
    v3: () => z.object({}),
    v4: [() => z4.object({})],
    expected: { type: 'object', properties: {} },
  },
  {
    name: 'record',
    v3: () => z.record(z.number()),
    v4: [() => z4.record(z4.string(), z4.number())],
    expected: { type: 'object', additionalProperties: { type: 'number' } },
  },
  { name: 'optional', v3: () => z.number().optional(), v4: [() => z4.number().optional()], expected: { type: 'number' } },
  {
    name: 'nullable: string type becomes [type, null] in place',
    v3: () => z.enum(['a']).nullable(),
    v4: [() => z4.enum(['a']).nullable()],
    expected: { type: ['string', 'null'], enum: ['a'] },
  },
  {
    name: 'nullable object keeps type first',
    v3: () => z.object({ a: z.string() }).nullable(),
    v4: [() => z4.object({ a: z4.string() }).nullable()],
    expected: { type: ['object', 'null'], properties: { a: { type: 'string' } }, required: ['a'] },
  },
  {
    name: 'nullable without a string type → anyOf',
    v3: () => z.union([z.string(), z.number()]).nullable(),
    v4: [() => z4.union([z4.string(), z4.number()]).nullable()],
    expected: { anyOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { type: 'null' }] },
  },
  {
    name: 'nullable of any → anyOf',
    v3: () => z.any().nullable(),
    v4: [() => z4.any().nullable()],
    expected: { anyOf: [{}, { type: 'null' }] },
  },
  {
    name: 'nullable of nullable (type already an array) → anyOf',
    v3: () => z.string().nullable().nullable(),
    v4: [() => z4.string().nullable().nullable()],
    expected: { anyOf: [{ type: ['string', 'null'] }, { type: 'null' }] },
  },
  {
    name: 'default',
    v3: () => z.string().default('x'),
    v4: [() => z4.string().default('x')],
    expected: { type: 'string', default: 'x' },
  },
  {
    name: 'default of default overwrites in place',
    v3: () => z.string().default('a').default('b'),
    v4: [() => z4.string().default('a').default('b')],
    expected: { type: 'string', default: 'b' },
  },
  {
    name: 'default object value',
    v3: () => z.object({ n: z.number() }).default({ n: 1 }),
    v4: [() => z4.object({ n: z4.number() }).default({ n: 1 })],
    expected: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], default: { n: 1 } },
  },
  {
    name: 'union',
    v3: () => z.union([z.string(), z.number()]),
    v4: [() => z4.union([z4.string(), z4.number()]), () => z4.string().or(z4.number())],
    expected: { anyOf: [{ type: 'string' }, { type: 'number' }] },
  },
  {
    name: 'discriminatedUnion',
    v3: () => z.discriminatedUnion('k', [z.object({ k: z.literal('a') }), z.object({ k: z.literal('b'), n: z.number() })]),
    v4: [
      () => z4.discriminatedUnion('k', [z4.object({ k: z4.literal('a') }), z4.object({ k: z4.literal('b'), n: z4.number() })]),
    ],
    expected: {
      anyOf: [
        { type: 'object', properties: { k: { const: 'a' } }, required: ['k'] },
        { type: 'object', properties: { k: { const: 'b' }, n: { type: 'number' } }, required: ['k', 'n'] },
      ],
    },
  },
  {
    name: 'intersection',
    v3: () => z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })),
    v4: [() => z4.intersection(z4.object({ a: z4.string() }), z4.object({ b: z4.number() }))],
    expected: {
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'number' } }, required: ['b'] },
      ],
    },
  },
  {
    name: 'effects: refine',
    v3: () => z.string().refine((s) => s.length > 0),
    v4: [() => z4.string().refine((s) => s.length > 0)],
    expected: { type: 'string' },
  },
  {
    name: 'effects: transform (input side)',
    v3: () => z.string().transform((s) => s.length),
    v4: [() => z4.string().transform((s) => s.length)],
    expected: { type: 'string' },
  },
  {
    name: 'effects: preprocess (the target schema)',
    v3: () => z.preprocess((x) => x, z.number()),
    v4: [() => z4.preprocess((x) => x, z4.number())],
    expected: { type: 'number' },
  },
  { name: 'branded', v3: () => z.string().brand<'Id'>(), v4: [() => z4.string().brand<'Id'>()], expected: { type: 'string' } },
  {
    name: 'readonly',
    v3: () => z.array(z.string()).readonly(),
    v4: [() => z4.array(z4.string()).readonly()],
    expected: { type: 'array', items: { type: 'string' } },
  },
  { name: 'catch', v3: () => z.number().catch(0), v4: [() => z4.number().catch(0)], expected: { type: 'number' } },
  {
    name: 'pipeline (input side)',
    v3: () => z.string().pipe(z.coerce.number()),
    v4: [() => z4.string().pipe(z4.coerce.number())],
    expected: { type: 'string' },
  },
  { name: 'any', v3: () => z.any(), v4: [() => z4.any()], expected: {} },
  { name: 'unknown', v3: () => z.unknown(), v4: [() => z4.unknown()], expected: {} },
  { name: 'never', v3: () => z.never(), v4: [() => z4.never()], expected: { not: {} } },
  { name: 'fallback: lazy', v3: () => z.lazy(() => z.string()), v4: [() => z4.lazy(() => z4.string())], expected: {} },
  {
    name: 'fallback: map',
    v3: () => z.map(z.string(), z.number()),
    v4: [() => z4.map(z4.string(), z4.number())],
    expected: {},
  },
  { name: 'fallback: set', v3: () => z.set(z.string()), v4: [() => z4.set(z4.string())], expected: {} },
  { name: 'fallback: promise', v3: () => z.promise(z.string()), v4: [() => z4.promise(z4.string())], expected: {} },
  { name: 'fallback: nan', v3: () => z.nan(), v4: [() => z4.nan()], expected: {} },
  { name: 'fallback: symbol', v3: () => z.symbol(), v4: [() => z4.symbol()], expected: {} },
  {
    name: 'fallback: custom / instanceof',
    v3: () => z.instanceof(Date),
    v4: [() => z4.instanceof(Date), () => z4.custom<string>(() => true)],
    expected: {},
  },
  { name: 'fallback: function', v3: () => z.function(), v4: [], expected: {} },
]

describe('zodToJsonSchema — §8.3 table', () => {
  describe.each(rows)('$name', (row) => {
    test('Zod 3', () => {
      expectSchema(zodToJsonSchema(row.v3()), row.expected)
    })
    test('Zod 3 + describe(): description appended last (or in place)', () => {
      expectSchema(zodToJsonSchema(row.v3().describe('X')), { ...row.expected, description: 'X' })
    })
    if (row.v4.length > 0) {
      test('Zod 4 equivalent(s) give the same output', () => {
        for (const make of row.v4) expectSchema(zodToJsonSchema(make()), row.expected)
      })
      test('Zod 4 + describe() / meta()', () => {
        for (const make of row.v4) {
          expectSchema(zodToJsonSchema(make().describe('X')), { ...row.expected, description: 'X' })
          expectSchema(zodToJsonSchema(make().meta({ description: 'M' })), { ...row.expected, description: 'M' })
        }
      })
    }
  })

  test('the Zod 4 rows really are Zod 4 schemas and the Zod 3 rows Zod 3 ones', () => {
    // Guards the table: a row built with the wrong `z` would make the comparison meaningless.
    for (const row of rows) {
      expect(typeof row.v3()._def.typeName).toBe('string')
      expect(row.v3()._zod).toBeUndefined()
      for (const make of row.v4) expect(typeof make()._zod.def.type).toBe('string')
    }
  })
})

describe('zodToJsonSchema — key order examples (§7.1, §8.3)', () => {
  test('§7.1: object with one string, pretty-printed', () => {
    expect(JSON.stringify(zodToJsonSchema(z.object({ x: z.string() })), null, 2)).toBe(X_STRING_SCHEMA_TEXT)
    expect(JSON.stringify(zodToJsonSchema(z4.object({ x: z4.string() })), null, 2)).toBe(X_STRING_SCHEMA_TEXT)
  })

  test('string with description → {type, description}', () => {
    const want = '{"type":"string","description":"d"}'
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('d')))).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.string().describe('d')))).toBe(want)
  })

  test('object → {type, properties, required, description}', () => {
    const want = '{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"description":"O"}'
    expect(JSON.stringify(zodToJsonSchema(z.object({ a: z.string() }).describe('O')))).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.object({ a: z4.string() }).describe('O')))).toBe(want)
  })

  test('z.string().default("q").describe("O") → {type, default, description}', () => {
    const want = '{"type":"string","default":"q","description":"O"}'
    expect(JSON.stringify(zodToJsonSchema(z.string().default('q').describe('O')))).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.string().default('q').describe('O')))).toBe(want)
  })

  test('z.string().describe("D").default("x") → {type, description, default}', () => {
    const want = '{"type":"string","description":"D","default":"x"}'
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('D').default('x')))).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.string().describe('D').default('x')))).toBe(want)
  })

  test('nullable of described inner → {type: [.., "null"], description}', () => {
    const want = '{"type":["string","null"],"description":"d"}'
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('d').nullable()))).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.string().describe('d').nullable()))).toBe(want)
  })

  test('z.string().describe("d").or(z.number()): Zod 3 copies the description onto the union', () => {
    const s = zodToJsonSchema(z.string().describe('d').or(z.number()))
    expect(s).toStrictEqual({ anyOf: [{ type: 'string', description: 'd' }, { type: 'number' }], description: 'd' })
    expect(JSON.stringify(s)).toBe('{"anyOf":[{"type":"string","description":"d"},{"type":"number"}],"description":"d"}')
  })

  test('z.string().describe("d").array(): description stays on the element', () => {
    const want = '{"type":"array","items":{"type":"string","description":"d"}}'
    const s3 = zodToJsonSchema(z.string().describe('d').array())
    expect(s3).toStrictEqual({ type: 'array', items: { type: 'string', description: 'd' } })
    expect(JSON.stringify(s3)).toBe(want)
    expect(JSON.stringify(zodToJsonSchema(z4.string().describe('d').array()))).toBe(want)
  })
})

describe('zodToJsonSchema — Zod 3 description propagation', () => {
  test('.and() copies the description onto the intersection', () => {
    expectSchema(zodToJsonSchema(z.string().describe('d').and(z.string())), {
      allOf: [{ type: 'string', description: 'd' }, { type: 'string' }],
      description: 'd',
    })
  })

  test('.optional() / .nullish() / .catch() / .brand() / .transform() keep the inner description', () => {
    const d = z.string().describe('d')
    expectSchema(zodToJsonSchema(d.optional()), { type: 'string', description: 'd' })
    expectSchema(zodToJsonSchema(d.nullish()), { type: ['string', 'null'], description: 'd' })
    expectSchema(zodToJsonSchema(d.catch('c')), { type: 'string', description: 'd' })
    expectSchema(zodToJsonSchema(d.brand<'B'>()), { type: 'string', description: 'd' })
    expectSchema(zodToJsonSchema(d.transform((s) => s.length)), { type: 'string', description: 'd' })
    expectSchema(zodToJsonSchema(d.refine(() => true)), { type: 'string', description: 'd' })
    expectSchema(zodToJsonSchema(d.readonly()), { type: 'string', description: 'd' })
  })

  test('an outer description overwrites the inner one in place', () => {
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('in').optional().describe('out')))).toBe(
      '{"type":"string","description":"out"}',
    )
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('in').refine(() => true).describe('out')))).toBe(
      '{"type":"string","description":"out"}',
    )
    // Default: the inner description keeps its slot before `default`, the outer value wins.
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('in').default('x').describe('out')))).toBe(
      '{"type":"string","description":"out","default":"x"}',
    )
    expect(JSON.stringify(zodToJsonSchema(z.string().describe('in').nullable().describe('out')))).toBe(
      '{"type":["string","null"],"description":"out"}',
    )
  })

  test('descriptions on nested properties', () => {
    const s = z.object({ a: z.string().describe('A'), b: z.number().optional().describe('B') }).describe('root')
    expect(JSON.stringify(zodToJsonSchema(s))).toBe(
      '{"type":"object","properties":{"a":{"type":"string","description":"A"},"b":{"type":"number","description":"B"}},"required":["a"],"description":"root"}',
    )
  })
})

describe('zodToJsonSchema — defaults are evaluated on every conversion', () => {
  test('Zod 3 factory', () => {
    let n = 0
    const s = z.object({ id: z.string().default(() => `id-${++n}`) })
    expect(zodToJsonSchema(s).properties.id.default).toBe('id-1')
    expect(zodToJsonSchema(s).properties.id.default).toBe('id-2')
  })

  test('Zod 4 factory', () => {
    let n = 0
    const s = z4.object({ id: z4.string().default(() => `id-${++n}`) })
    expect(zodToJsonSchema(s).properties.id.default).toBe('id-1')
    expect(zodToJsonSchema(s).properties.id.default).toBe('id-2')
  })

  test('a fresh result each call (mutating one does not affect the next)', () => {
    const s = z.enum(['a', 'b'])
    const first = zodToJsonSchema(s)
    first.enum.push('c')
    expect(zodToJsonSchema(s)).toStrictEqual({ type: 'string', enum: ['a', 'b'] })
    expect(s.options).toStrictEqual(['a', 'b'])
  })
})

describe('zodToJsonSchema — Zod 4 specifics (mapped by judgement)', () => {
  test('multi-value literal → anyOf of consts (what the Zod 3 union of literals gives)', () => {
    expectSchema(zodToJsonSchema(z4.literal(['a', 2])), { anyOf: [{ const: 'a' }, { const: 2 }] })
    expectSchema(zodToJsonSchema(z.union([z.literal('a'), z.literal(2)])), { anyOf: [{ const: 'a' }, { const: 2 }] })
  })

  test('enum from an object whose keys differ from its values → native-enum form', () => {
    expectSchema(zodToJsonSchema(z4.enum({ first: 'a', second: 'b' })), { enum: ['a', 'b'] })
  })

  test('prefault behaves like default (value shown, key not required)', () => {
    const s = z4.object({ p: z4.string().prefault('x'), q: z4.string() })
    expectSchema(zodToJsonSchema(s), {
      type: 'object',
      properties: { p: { type: 'string', default: 'x' }, q: { type: 'string' } },
      required: ['q'],
    })
  })

  test('nonoptional unwraps and makes the key required again', () => {
    const s = z4.object({ a: z4.string().optional().nonoptional() })
    expectSchema(zodToJsonSchema(s), { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })
  })

  test('template literal → string', () => {
    expectSchema(zodToJsonSchema(z4.templateLiteral(['id-', z4.number()])), { type: 'string' })
  })

  test('success, bare transform and file accept anything → {}', () => {
    expectSchema(zodToJsonSchema(z4.success(z4.string())), {})
    expectSchema(zodToJsonSchema(z4.transform((x: unknown) => x)), {})
    expectSchema(zodToJsonSchema(z4.file().describe('f')), { description: 'f' })
  })

  test('a def type "int" (not produced by this Zod, but in its type list) → number', () => {
    const fake = { _zod: { def: { type: 'int' } }, safeParse: () => ({ success: true }) }
    expectSchema(zodToJsonSchema(fake), { type: 'number' })
  })

  test('descriptions are per node: Zod 4 .or() does not copy one onto the union', () => {
    // Zod 4 builds `a.or(b)` as `z.union([a, b])`, so there is nothing to copy from.
    expectSchema(zodToJsonSchema(z4.string().describe('d').or(z4.number())), {
      anyOf: [{ type: 'string', description: 'd' }, { type: 'number' }],
    })
  })

  test('recursive object via a getter: the back-reference becomes {}', () => {
    const Cat: any = z4.object({
      name: z4.string(),
      get sub(): any {
        return z4.array(Cat).optional()
      },
    })
    expectSchema(zodToJsonSchema(Cat), {
      type: 'object',
      properties: { name: { type: 'string' }, sub: { type: 'array', items: {} } },
      required: ['name'],
    })
  })

  test('the same schema used twice (not a cycle) is converted both times', () => {
    const S = z4.string().describe('s')
    expectSchema(zodToJsonSchema(z4.object({ a: S, b: z4.array(S) })), {
      type: 'object',
      properties: { a: { type: 'string', description: 's' }, b: { type: 'array', items: { type: 'string', description: 's' } } },
      required: ['a', 'b'],
    })
    const S3 = z.number()
    expectSchema(zodToJsonSchema(z.tuple([S3, S3])), { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }] })
  })
})

describe('zodToJsonSchema — Zod 4 mini (same defs, no methods)', () => {
  test('object with optional / nullable / default members', () => {
    const s = zm.object({ a: zm.optional(zm.string()), b: zm.nullable(zm.number()), c: zm._default(zm.string(), 'x'), d: zm.boolean() })
    expectSchema(zodToJsonSchema(s), {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: ['number', 'null'] }, c: { type: 'string', default: 'x' }, d: { type: 'boolean' } },
      required: ['d'],
    })
  })
})

describe('zodToJsonSchema — Zod 3 recursive shapes', () => {
  test('a getter in the shape that refers back to the object', () => {
    const Node: any = z.object({
      v: z.number(),
      get next(): any {
        return Node.nullable()
      },
    })
    expectSchema(zodToJsonSchema(Node), {
      type: 'object',
      properties: { v: { type: 'number' }, next: { anyOf: [{}, { type: 'null' }] } },
      required: ['v'],
    })
  })
})

describe('zodToJsonSchema — non-Zod input', () => {
  test('a plain JSON Schema object is returned as the same reference', () => {
    const js = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }
    expect(zodToJsonSchema(js)).toBe(js)
    expect(js).toStrictEqual({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })
    const empty = {}
    expect(zodToJsonSchema(empty)).toBe(empty)
  })

  test('an object with safeParse but no introspectable definition → {}', () => {
    const opaque = { safeParse: () => ({ success: true, data: 1 }) }
    expect(zodToJsonSchema(opaque)).toStrictEqual({})
  })
})

describe('isZodSchema', () => {
  test('true for Zod 3 and Zod 4 schemas', () => {
    expect(isZodSchema(z.string())).toBe(true)
    expect(isZodSchema(z.object({}))).toBe(true)
    expect(isZodSchema(z4.string())).toBe(true)
    expect(isZodSchema({ safeParse() {} })).toBe(true)
  })

  test('false for anything without a callable safeParse', () => {
    expect(isZodSchema({ type: 'object' })).toBe(false)
    expect(isZodSchema({ safeParse: true })).toBe(false)
    expect(isZodSchema({ _def: { typeName: 'ZodString' } })).toBe(false)
    expect(isZodSchema(null)).toBe(false)
    expect(isZodSchema(undefined)).toBe(false)
    expect(isZodSchema('z.string()')).toBe(false)
    expect(isZodSchema(42)).toBe(false)
  })
})
