'use strict'
// @oma-kernel/core/mcp: the MCP bridge (CommonJS entry), as @open-multi-agent/core/mcp.
const { connectMCPTools } = require('./lib/mcp.js')

module.exports = { connectMCPTools }
