'use strict'
// Zod → JSON Schema for the LLM (CONTRACT §8.3). Runs in JS because the schema objects belong
// to the user's own Zod instance; we only read their definitions and never `require('zod')`,
// so any Zod 3.x or 4.x copy the user has works.
//
// Key order is observable (the schema is pretty-printed into prompts, §7.1), so every rule
// builds its result with spreads in the exact order the contract gives.

/**
 * Where a built-in tool keeps the plain JSON Schema the kernel works with (a non-enumerable
 * property): its `inputSchema` is a Zod view built lazily for users (lib/builtin.js), while
 * the registry shows this schema to the LLM and the executor validates with it natively, so
 * the run never needs `zod` and its texts do not depend on the Zod version installed.
 */
const NATIVE_INPUT_SCHEMA = Symbol.for('oma-kernel.native-input-schema')

/**
 * The built-in tools' schemas, which the executor checks with the kernel's check for that
 * tool (Zod 3's texts for the original's Zod schema) instead of the generic JSON Schema
 * validator: `describe(input)` gives the description of `input` the check reads
 * (lib/builtin.js, `describeInput`); `accept(description)` tells the tool that the kernel
 * found it valid.
 */
/** @type {WeakMap<object, { describe(input: unknown): Float64Array, accept(description: Float64Array): void }>} */
const INPUT_CHECKS = new WeakMap()

/**
 * A JSON Schema object as this file builds it.
 * @typedef {Record<string, unknown>} JsonSchema
 */
/**
 * A value of the user's Zod (either version) as this file reads it: the user's objects, so
 * nothing here is checked beyond the guards each rule makes (a missing field reads undefined).
 * @typedef {{ _def?: Zod3Def, _zod?: { def?: Zod4Def }, description?: string, safeParse?: unknown }} ZodNode
 */
/**
 * The fields of a Zod 3 `_def` that the §8.3 rules read (each rule those of its `typeName`).
 * @typedef {{
 *   typeName?: string, description?: string, value?: unknown, values: Iterable<unknown>,
 *   type: unknown, items: unknown[], shape(): Record<string, unknown>, valueType: unknown,
 *   innerType: unknown, schema: unknown, defaultValue(): unknown, options: Iterable<unknown>,
 *   left: unknown, right: unknown, in: unknown,
 * }} Zod3Def
 */
/**
 * The fields of a Zod 4 `_zod.def` that the rules read (each rule those of its `type`).
 * @typedef {{
 *   type?: string, values: unknown[], entries: Record<string, unknown>, element: unknown,
 *   items: unknown[], shape: Record<string, unknown>, valueType: unknown, innerType: unknown,
 *   defaultValue: unknown, options: Iterable<unknown>, left: unknown, right: unknown,
 *   in: unknown, out: unknown,
 * }} Zod4Def
 */

/**
 * The schema the kernel validates a tool's input with and converts for the LLM.
 * @param {import('../index.js').ToolDefinition<unknown, unknown> & { [NATIVE_INPUT_SCHEMA]?: JsonSchema }} tool
 */
function toolInputSchema(tool) {
  const s = tool[NATIVE_INPUT_SCHEMA]
  return s === undefined ? tool.inputSchema : s
}

/**
 * True iff `x` can validate on its own, i.e. has a callable `safeParse`.
 * @param {unknown} x
 * @returns {x is import('../index.js').ZodLikeSchema}
 */
function isZodSchema(x) {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof (/** @type {ZodNode} */ (x).safeParse) === 'function'
}

/**
 * @param {unknown} x
 * @returns {Zod4Def | undefined}
 */
function zod4Def(x) {
  const internals = x !== null && (typeof x === 'object' || typeof x === 'function') ? /** @type {ZodNode} */ (x)._zod : undefined
  return internals && typeof internals === 'object' && internals.def && typeof internals.def === 'object' ? internals.def : undefined
}

/**
 * @param {unknown} x
 * @returns {Zod3Def | undefined}
 */
function zod3Def(x) {
  const def = x !== null && (typeof x === 'object' || typeof x === 'function') ? /** @type {ZodNode} */ (x)._def : undefined
  return def && typeof def === 'object' ? def : undefined
}

/**
 * Converts a Zod 3 or Zod 4 schema. Anything that is neither (a plain JSON Schema object, or
 * any other value) is handed back untouched so callers may pass JSON Schema directly.
 * @param {unknown} schema
 * @returns {unknown}
 */
function zodToJsonSchema(schema) {
  if (!isZodSchema(schema) && zod4Def(schema) === undefined && zod3Def(schema) === undefined) return schema
  return convert(schema, new Set())
}

// `path` holds the schemas being converted on the way down. Zod 4 (getter shapes) and Zod 3
// (getters in a shape object) can build truly recursive schemas without `lazy`; a node met
// again on its own path becomes `{}` (+desc), the same answer Zod 3 gives for `z.lazy`.
/**
 * @param {unknown} schema
 * @param {Set<unknown>} path
 * @returns {JsonSchema}
 */
function convert(schema, path) {
  if (path.has(schema)) return withDesc({}, ownDescription(schema))
  path.add(schema)
  try {
    if (zod4Def(schema) !== undefined) return convert4(/** @type {ZodNode & { _zod: { def: Zod4Def } }} */ (schema), path)
    if (zod3Def(schema) !== undefined) return convert3(/** @type {ZodNode & { _def: Zod3Def }} */ (schema), path)
    // Has `safeParse` but nothing we can introspect: "accept anything" is the table's fallback.
    return {}
  } finally {
    path.delete(schema)
  }
}

/** @param {unknown} schema */
function ownDescription(schema) {
  if (zod4Def(schema) !== undefined) return /** @type {ZodNode} */ (schema).description
  const def = zod3Def(schema)
  return def === undefined ? undefined : def.description
}

/**
 * The "+desc" rule: a new key is appended last; an existing `description` keeps its place.
 * @param {JsonSchema} result
 * @param {unknown} d
 * @returns {JsonSchema}
 */
function withDesc(result, d) {
  return d !== undefined ? { ...result, description: d } : result
}

/**
 * §8.3 ZodNullable: widen a single `type` in place, otherwise wrap in `anyOf`.
 * @param {JsonSchema} inner
 */
function nullableOf(inner) {
  return typeof inner.type === 'string' ? { ...inner, type: [inner.type, 'null'] } : { anyOf: [inner, { type: 'null' }] }
}

// ---------------------------------------------------------------------------------------------
// Zod 3: dispatch on `_def.typeName`, exactly the §8.3 table.

/** @type {Set<string | undefined>} */
const ZOD3_NOT_REQUIRED = new Set(['ZodOptional', 'ZodDefault', 'ZodNullable'])

/**
 * @param {ZodNode & { _def: Zod3Def }} schema
 * @param {Set<unknown>} path
 * @returns {JsonSchema}
 */
function convert3(schema, path) {
  const def = schema._def
  const d = def.description
  const sub = (/** @type {unknown} */ s) => convert(s, path)
  switch (def.typeName) {
    case 'ZodString':
      return withDesc({ type: 'string' }, d)
    case 'ZodNumber':
      return withDesc({ type: 'number' }, d)
    case 'ZodBigInt':
      return withDesc({ type: 'integer' }, d)
    case 'ZodBoolean':
      return withDesc({ type: 'boolean' }, d)
    case 'ZodNull':
    case 'ZodUndefined':
    case 'ZodVoid':
      return withDesc({ type: 'null' }, d)
    case 'ZodDate':
      return withDesc({ type: 'string', format: 'date-time' }, d)
    case 'ZodLiteral':
      return withDesc({ const: def.value }, d)
    case 'ZodEnum':
      // A copy, so that editing the produced schema cannot alter the user's enum.
      return withDesc({ type: 'string', enum: Array.from(def.values) }, d)
    case 'ZodNativeEnum':
      return withDesc({ enum: nativeEnumValues(def.values) }, d)
    case 'ZodArray':
      return withDesc({ type: 'array', items: sub(def.type) }, d)
    case 'ZodTuple':
      return withDesc({ type: 'array', prefixItems: def.items.map((s) => sub(s)) }, d)
    case 'ZodObject':
      return withDesc(
        objectOf(def.shape(), sub, (v) => !ZOD3_NOT_REQUIRED.has(zod3TypeName(v))),
        d,
      )
    case 'ZodRecord':
      return withDesc({ type: 'object', additionalProperties: sub(def.valueType) }, d)
    case 'ZodOptional':
      return withDesc(sub(def.innerType), d)
    case 'ZodEffects':
      return withDesc(sub(def.schema), d)
    case 'ZodNullable':
      return withDesc(nullableOf(sub(def.innerType)), d)
    case 'ZodDefault':
      // The factory runs on every conversion (a changing default shows up each time).
      return withDesc({ ...sub(def.innerType), default: def.defaultValue() }, d)
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion':
      return withDesc({ anyOf: Array.from(def.options, (s) => sub(s)) }, d)
    case 'ZodIntersection':
      return withDesc({ allOf: [sub(def.left), sub(def.right)] }, d)
    case 'ZodBranded':
      return withDesc(sub(def.type), d)
    case 'ZodReadonly':
    case 'ZodCatch':
      return withDesc(sub(def.innerType), d)
    case 'ZodPipeline':
      return withDesc(sub(def.in), d)
    case 'ZodAny':
    case 'ZodUnknown':
      return withDesc({}, d)
    case 'ZodNever':
      return withDesc({ not: {} }, d)
    default:
      return withDesc({}, d)
  }
}

/** @param {unknown} s */
function zod3TypeName(s) {
  const def = zod3Def(s)
  return def === undefined ? undefined : def.typeName
}

/**
 * `Object.values` keeps JS property order (integer-like keys first), as §8.3 requires.
 * @param {object} obj
 */
function nativeEnumValues(obj) {
  return Object.values(obj).filter((v) => typeof v === 'string' || typeof v === 'number')
}

/**
 * @param {Record<string, unknown>} shape
 * @param {(s: unknown) => JsonSchema} sub
 * @param {(v: unknown) => boolean} isRequired
 */
function objectOf(shape, sub, isRequired) {
  /** @type {Record<string, JsonSchema>} */
  const properties = {}
  /** @type {string[]} */
  const required = []
  for (const [key, value] of Object.entries(shape)) {
    properties[key] = sub(value)
    if (isRequired(value)) required.push(key)
  }
  /** @type {JsonSchema} */
  const result = { type: 'object', properties }
  if (required.length > 0) result.required = required
  return result
}

// ---------------------------------------------------------------------------------------------
// Zod 4: dispatch on `_zod.def.type`. Each case produces what the §8.3 table gives for the
// equivalent Zod 3 schema, so switching Zod versions does not change what the LLM sees.
// Descriptions live in Zod 4's global registry and are read through the `description` getter.

// Mirrors the Zod 3 rule (nullable counts as optional); `prefault` is Zod 4's input-side
// default, which Zod also lets the caller omit.
/** @type {Set<string | undefined>} */
const ZOD4_NOT_REQUIRED = new Set(['optional', 'default', 'prefault', 'nullable'])

/**
 * @param {ZodNode & { _zod: { def: Zod4Def } }} schema
 * @param {Set<unknown>} path
 * @returns {JsonSchema}
 */
function convert4(schema, path) {
  const def = schema._zod.def
  const d = schema.description
  const sub = (/** @type {unknown} */ s) => convert(s, path)
  switch (def.type) {
    case 'string':
      return withDesc({ type: 'string' }, d)
    case 'number':
    case 'int':
      // `z.int()` and friends are numbers with a format check; Zod 3 drops checks too.
      return withDesc({ type: 'number' }, d)
    case 'bigint':
      return withDesc({ type: 'integer' }, d)
    case 'boolean':
      return withDesc({ type: 'boolean' }, d)
    case 'null':
    case 'undefined':
    case 'void':
      return withDesc({ type: 'null' }, d)
    case 'date':
      return withDesc({ type: 'string', format: 'date-time' }, d)
    case 'literal':
      // Zod 4 literals may hold several values; Zod 3 spells that as a union of literals.
      return withDesc(def.values.length === 1 ? { const: def.values[0] } : { anyOf: def.values.map((v) => ({ const: v })) }, d)
    case 'enum':
      return withDesc(enum4(def.entries), d)
    case 'array':
      return withDesc({ type: 'array', items: sub(def.element) }, d)
    case 'tuple':
      return withDesc({ type: 'array', prefixItems: def.items.map((s) => sub(s)) }, d)
    case 'object':
      return withDesc(
        objectOf(def.shape, sub, (v) => !ZOD4_NOT_REQUIRED.has(zod4Type(v))),
        d,
      )
    case 'record':
      return withDesc({ type: 'object', additionalProperties: sub(def.valueType) }, d)
    case 'optional':
    case 'nonoptional':
    case 'catch':
    case 'readonly':
      return withDesc(sub(def.innerType), d)
    case 'nullable':
      return withDesc(nullableOf(sub(def.innerType)), d)
    case 'default':
    case 'prefault':
      // `defaultValue` is a getter that runs the user's factory, so it is read on every call.
      return withDesc({ ...sub(def.innerType), default: def.defaultValue }, d)
    case 'union':
      return withDesc({ anyOf: Array.from(def.options, (s) => sub(s)) }, d)
    case 'intersection':
      return withDesc({ allOf: [sub(def.left), sub(def.right)] }, d)
    case 'pipe':
      // `.transform()` is pipe(schema, transform): describe the input side, like ZodEffects.
      // `z.preprocess()` is pipe(transform, schema): the transform accepts anything, so the
      // schema it feeds is what Zod 3's ZodEffects(preprocess) reports.
      return withDesc(sub(zod4Type(def.in) === 'transform' ? def.out : def.in), d)
    case 'template_literal':
      // Always a string; its pattern is a check, and checks are dropped.
      return withDesc({ type: 'string' }, d)
    case 'any':
    case 'unknown':
      return withDesc({}, d)
    case 'never':
      return withDesc({ not: {} }, d)
    default:
      // lazy, promise, map, set, symbol, nan, file, custom, transform, success, …: as Zod 3.
      return withDesc({}, d)
  }
}

/** @param {unknown} s */
function zod4Type(s) {
  const def = zod4Def(s)
  return def === undefined ? undefined : def.type
}

// Zod 4 has one enum type for both `z.enum([...])` and a TS enum object. An array-built enum
// has entries `{ a: 'a', … }`; that shape gets Zod 3's ZodEnum output, anything else gets the
// ZodNativeEnum output (which keeps the reverse-mapping quirk of numeric TS enums).
/** @param {Record<string, unknown>} entries */
function enum4(entries) {
  const keys = Object.keys(entries)
  const arrayLike = keys.every((k) => typeof entries[k] === 'string' && entries[k] === k)
  if (arrayLike) return { type: 'string', enum: keys.map((k) => entries[k]) }
  return { enum: nativeEnumValues(entries) }
}

module.exports = { zodToJsonSchema, isZodSchema, NATIVE_INPUT_SCHEMA, INPUT_CHECKS, toolInputSchema }
