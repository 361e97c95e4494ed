// The demo's stand-in for a model, used when no real one is configured: it reads the
// conversation it is sent (the task, which tools already ran and what they returned) and decides
// the next step, as a model would: grep for TODO, read the file with the most, write the summary,
// answer. The task names the project directory and the summary file on lines of their own.
import * as path from 'node:path'
import { toolOutcomes, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

export const SUMMARY_NAME = 'TODO-SUMMARY.md'

export function scriptedDemoModel(request: ChatRequest): ScriptedReply {
  const task = request.messages.find((m) => m.role === 'user')?.text ?? ''
  const root = /^Project directory: (.+)$/m.exec(task)?.[1]
  const summaryPath = /^Summary file: (.+)$/m.exec(task)?.[1]
  if (!root || !summaryPath) return { text: 'Which project should I look at?' }
  const done = toolOutcomes(request)
  const grep = done.find((o) => o.name === 'grep')
  const read = done.find((o) => o.name === 'file_read')
  const write = done.find((o) => o.name === 'file_write')

  if (!grep) return { text: 'Let me find the TODO comments first.', toolCalls: [{ name: 'grep', args: { pattern: 'TODO', path: root } }] }

  // grep lines: <path relative to the sandbox root>:<line>:<text>
  const hits = grep.result.split('\n').map((l) => /^(.+?):(\d+):(.*)$/.exec(l)).filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ file: m[1], line: Number(m[2]), text: m[3].replace(/^.*TODO:?\s*/, '') }))
  if (hits.length === 0) return { text: 'There are no TODO comments in this project.' }
  const byFile = new Map<string, typeof hits>()
  for (const h of hits) byFile.set(h.file, [...(byFile.get(h.file) ?? []), h])
  const ranked = [...byFile].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
  const [topFile, topHits] = ranked[0]

  if (!read) return { toolCalls: [{ name: 'file_read', args: { path: path.join(root, topFile) } }] }

  if (!write) {
    const lines = read.result.split('\n').length
    const content = [
      '# TODO summary',
      '',
      `${hits.length} TODOs in ${byFile.size} files; ${topFile} has the most (${topHits.length}, read in full: ${lines} lines).`,
      '',
      ...ranked.flatMap(([file, list]) => [`## ${file}`, '', ...list.map((h) => `- line ${h.line}: ${h.text}`), '']),
      '## Suggested order',
      '',
      ...ranked.map(([file, list], i) => `${i + 1}. ${file} (${list.length})`),
      '',
    ].join('\n')
    return { text: `Writing the summary to ${SUMMARY_NAME}.`, toolCalls: [{ name: 'file_write', args: { path: summaryPath, content } }] }
  }

  return { text: `Found ${hits.length} TODOs in ${byFile.size} files; ${topFile} has the most (${topHits.length}). ${write.result}` }
}
