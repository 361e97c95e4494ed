// @oma-kernel/core/mcp (ESM entry): loads the CommonJS entry through Node's require, so both
// share one module instance (as index.mjs does).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mcp = require('./mcp.js')

export const { connectMCPTools } = mcp
export default mcp
