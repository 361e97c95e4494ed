// Types of the ESM entry (index.mjs): the same declarations as the CommonJS entry, so a class
// or interface named from either entry is one type.
export * from './index.js'
import * as core from './index.js'
export default core
