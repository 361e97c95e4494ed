// Golden texts that more than one suite pins.

/** CONTRACT §7.1's example: the JSON Schema of `z.object({ x: z.string() })`, pretty-printed
 *  (two spaces), as `zodToJsonSchema` gives it and `buildStructuredOutputInstruction` embeds it. */
export const X_STRING_SCHEMA_TEXT = [
  '{',
  '  "type": "object",',
  '  "properties": {',
  '    "x": {',
  '      "type": "string"',
  '    }',
  '  },',
  '  "required": [',
  '    "x"',
  '  ]',
  '}',
].join('\n')
