// Types of the ESM entry (mcp.mjs): the same declarations as the CommonJS entry.
export * from './mcp.js'
import * as mcp from './mcp.js'
export default mcp
