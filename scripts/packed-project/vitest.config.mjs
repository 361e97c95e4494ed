// Vitest with Jest-style globals, so the same test files run under both; the pool is chosen on
// the command line (--pool=forks, --pool=threads).
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: { globals: true, include: ['tests/**/*.test.ts'], testTimeout: 30000 },
})
