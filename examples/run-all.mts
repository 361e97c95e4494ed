// `npm run examples`: runs every example, one after another, each in its own `node` process
// (after `tsc -p examples` has compiled them next to this file), and fails if any fails.
import { spawnSync } from 'node:child_process'
import * as path from 'node:path'
import { fileURLToPath } from 'node:url'

export const EXAMPLES = ['single-agent', 'custom-tool', 'structured-output', 'streaming', 'local-model', 'builtin-tools', 'demo'] as const

const here = path.dirname(fileURLToPath(import.meta.url))
const failed: string[] = []
for (const name of EXAMPLES) {
  console.log(`\n=== examples/${name}.mts ${'='.repeat(Math.max(0, 60 - name.length))}\n`)
  const r = spawnSync(process.execPath, [path.join(here, `${name}.mjs`)], { stdio: 'inherit' })
  if (r.status !== 0) failed.push(`${name} (${r.signal ?? `exit ${r.status}`})`)
}
console.log(failed.length === 0 ? `\nall ${EXAMPLES.length} examples ran` : `\nfailed: ${failed.join(', ')}`)
process.exitCode = failed.length === 0 ? 0 : 1
