'use strict'
// The client program the official MCP conformance suite drives (issue 16 point 5): it gets
// the test server's URL as its last argument and the scenario in MCP_CONFORMANCE_SCENARIO,
// connects with connectMCPTools over Streamable HTTP, calls every tool the server lists (its
// arguments made from the tool's JSON Schema) and disconnects. Run by scripts/mcp-conformance.js.
const { connectMCPTools } = require('../mcp.js')

/** An argument value for a JSON Schema property: its default, else a plain value of its type. */
function sample(schema, name) {
  if (schema && schema.default !== undefined) return schema.default
  if (schema && Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  switch (schema && schema.type) {
    case 'number':
    case 'integer':
      return name === 'b' ? 3 : 2
    case 'boolean':
      return true
    case 'array':
      return []
    case 'object':
      return {}
    default:
      return 'x'
  }
}

async function main() {
  const url = process.argv[process.argv.length - 1]
  const { tools, disconnect } = await connectMCPTools({ url, clientName: 'oma-kernel-conformance', clientVersion: '0.1.0' })
  try {
    for (const tool of tools) {
      const props = (tool.llmInputSchema && tool.llmInputSchema.properties) || {}
      const input = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, sample(s, k)]))
      const r = await tool.execute(input, {})
      console.log(`${tool.name}: ${r.isError ? 'error' : 'ok'}: ${r.data}`)
    }
  } finally {
    await disconnect()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
