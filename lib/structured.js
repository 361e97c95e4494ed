'use strict'
// Structured output (§7): the JSON search runs in the kernel; parsing and Zod stay in JS.
const native = require('./native.js')
const { zodToJsonSchema } = require('./schema.js')

function buildStructuredOutputInstruction(schema) {
  return [
    '',
    '## Output Format (REQUIRED)',
    'You MUST respond with ONLY valid JSON that conforms to the following JSON Schema.',
    'Do NOT include any text, markdown fences, or explanation outside the JSON object.',
    'Do NOT wrap the JSON in ```json code fences.',
    '',
    '```',
    JSON.stringify(zodToJsonSchema(schema), null, 2),
    '```',
  ].join('\n')
}

function extractJSON(raw) {
  const r = native.extractJsonText(String(raw))
  if (!r.ok) throw new Error(r.text)
  return JSON.parse(r.text)
}

function validateOutput(schema, data) {
  const r = schema.safeParse(data)
  if (r.success) return r.data
  const lines = r.error.issues.map((i) => `  - ${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
  throw new Error('Output validation failed:\n' + lines.join('\n'))
}

module.exports = { buildStructuredOutputInstruction, extractJSON, validateOutput }
