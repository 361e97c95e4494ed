'use strict'
// Structured output (§7): the texts and the JSON search are the kernel's
// (crates/core/src/kernel/structured_output.rs); the schema's JSON Schema, parsing and Zod
// stay in JS.
const native = require('./native.js')
const { zodToJsonSchema } = require('./schema.js')

/** The schema as the instruction embeds it (an absent conversion embeds nothing, as joining
 *  `undefined` did).
 * @param {unknown} schema */
function schemaText(schema) {
  return JSON.stringify(zodToJsonSchema(schema), null, 2) ?? ''
}

/** @param {unknown} schema */
function buildStructuredOutputInstruction(schema) {
  return native.structuredInstruction(schemaText(schema))
}

/**
 * The system prompt of an Agent with an output schema (§4.1).
 * @param {unknown} systemPrompt
 * @param {unknown} schema
 */
function structuredSystemPrompt(systemPrompt, schema) {
  return native.structuredSystemPrompt(typeof systemPrompt === 'string' ? systemPrompt : null, schemaText(schema))
}

/**
 * @param {string} raw
 * @returns {unknown}
 */
function extractJSON(raw) {
  const r = native.extractJsonText(String(raw))
  if (!r.ok) throw new Error(r.text)
  return JSON.parse(r.text)
}

/**
 * @param {import('../index.js').ZodLikeSchema} schema
 * @param {unknown} data
 */
function validateOutput(schema, data) {
  const r = schema.safeParse(data)
  if (r.success) return r.data
  const issues = r.error.issues
  const paths = []
  const messages = []
  for (let n = 0; n < issues.length; n++) {
    const i = issues[n]
    paths.push(i.path.length > 0 ? `${i.path.join('.')}` : null)
    messages.push(`${i.message}`)
  }
  throw new Error(native.outputValidationMessage(paths, messages))
}

module.exports = { buildStructuredOutputInstruction, structuredSystemPrompt, extractJSON, validateOutput }
