// Stands in for the `zod` 4.x package's main entry (tsconfig.zod4-root.json maps `zod` here):
// zod 3.25's `zod/v4` entry has the same declarations as zod 4's root.
import z4 from 'zod/v4'
export * from 'zod/v4'
export default z4
