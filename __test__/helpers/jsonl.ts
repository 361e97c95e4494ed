// The event logs the MCP fixture servers write: one JSON object a line.
import * as fs from 'fs'

/** The objects logged to `file` so far; none while the file does not exist. */
export function jsonLines<T = Record<string, unknown>>(file: string): T[] {
  if (!fs.existsSync(file)) return []
  return fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))
}
