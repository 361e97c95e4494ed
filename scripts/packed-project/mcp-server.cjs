'use strict'
// A minimal MCP server over stdio (newline-delimited JSON-RPC, no SDK) for the packed test of
// @oma-kernel/core/mcp: one tool, `echo`.
const readline = require('readline')

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n')
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line)
  if (msg.id === undefined) return
  if (msg.method === 'initialize') {
    send({ id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'packed', version: '1.0.0' } } })
  } else if (msg.method === 'tools/list') {
    send({ id: msg.id, result: { tools: [{ name: 'packed/echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }] } })
  } else if (msg.method === 'tools/call') {
    send({ id: msg.id, result: { content: [{ type: 'text', text: `echo:${msg.params.arguments.text}` }] } })
  } else {
    send({ id: msg.id, error: { code: -32601, message: 'Method not found' } })
  }
})
