// The built-in tools' exports, LLM schemas and texts (CONTRACT §11, §12, §21), on real files
// in temp dirs. bash and the sandbox escape corpus have their own suites.
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { fileReadTool as typedRead, type BuiltinToolUseContext } from '../lib/builtin'
import { ToolRegistry, zodToJsonSchema } from '../index'

// eslint-disable-next-line @typescript-eslint/no-var-requires
const b = require('../lib/builtin.js')

const agent = { name: 'caller', role: 'r', model: 'm' }
let root: string

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-tools-')))
})
afterEach(() => fs.rmSync(root, { recursive: true, force: true }))

const ok = (data: string) => ({ data, isError: false })
const err = (data: string) => ({ data, isError: true })

describe('exports and registration', () => {
  test('tool lists in order', () => {
    expect(b.BUILT_IN_TOOLS.map((t: { name: string }) => t.name)).toEqual(['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob'])
    expect(b.ALL_BUILT_IN_TOOLS_WITH_DELEGATE.map((t: { name: string }) => t.name)).toEqual([
      'bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob', 'delegate_to_agent',
    ])
    expect(b.BUILT_IN_TOOLS[0]).toBe(b.bashTool)
    expect(b.ALL_BUILT_IN_TOOLS_WITH_DELEGATE[6]).toBe(b.delegateToAgentTool)
  })

  test('registerBuiltInTools registers the six, delegate only on request; duplicates throw the registry error', () => {
    const make = () => {
      const tools = new Map<string, unknown>()
      return {
        tools,
        register(t: { name: string }) {
          if (tools.has(t.name)) throw new Error(`Tool "${t.name}" is already registered.`)
          tools.set(t.name, t)
        },
      }
    }
    const r1 = make()
    b.registerBuiltInTools(r1)
    expect([...r1.tools.keys()]).toEqual(['bash', 'file_read', 'file_write', 'file_edit', 'grep', 'glob'])
    const r2 = make()
    b.registerBuiltInTools(r2, { includeDelegateTool: true })
    expect(r2.tools.get('delegate_to_agent')).toBe(b.delegateToAgentTool)
    expect(() => b.registerBuiltInTools(r2)).toThrow('Tool "bash" is already registered.')
  })

  test('constants', () => {
    expect(b.DEFAULT_WORKSPACE_DIRNAME).toBe('.agent-workspace')
    expect(b.defaultWorkspaceDir()).toBe(path.resolve(process.cwd(), '.agent-workspace'))
    expect([...b.SKIP_DIRS]).toEqual(['.git', '.svn', '.hg', 'node_modules', '.next', 'dist', 'build'])
  })
})

describe('LLM-visible schemas (§11.2)', () => {
  const p = (type: string, description: string) => ({ type, description })
  test.each([
    ['bashTool', 'bash', 'Execute a bash command and return its stdout and stderr. Use this for file system operations, running scripts, installing packages, and any task that requires shell access. The command runs in a non-interactive shell (bash -c). Long-running commands should use the timeout parameter.', {
      type: 'object',
      properties: {
        command: p('string', 'The bash command to execute.'),
        timeout: p('number', 'Timeout in milliseconds before the command is forcibly killed. Defaults to 30000 ms.'),
        cwd: p('string', 'Working directory in which to run the command.'),
      },
      required: ['command'],
    }],
    ['fileReadTool', 'file_read', 'Read the contents of a file from disk. Returns the file contents with line numbers prefixed in the format "N\\t<line>". Use `offset` and `limit` to read large files in chunks without loading the entire file into the context window.', {
      type: 'object',
      properties: {
        path: p('string', 'Absolute path to the file to read.'),
        offset: p('number', '1-based line number to start reading from. When omitted the file is read from the beginning.'),
        limit: p('number', 'Maximum number of lines to return. When omitted all lines from `offset` to the end of the file are returned.'),
      },
      required: ['path'],
    }],
    ['fileWriteTool', 'file_write', 'Write content to a file, creating it (and any missing parent directories) if it does not already exist, or overwriting it if it does. Prefer this tool for creating new files; use file_edit for targeted in-place edits of existing files.', {
      type: 'object',
      properties: {
        path: p('string', 'Absolute path to the file to write. The path must be absolute (starting with /).'),
        content: p('string', 'The full content to write to the file.'),
      },
      required: ['path', 'content'],
    }],
    ['fileEditTool', 'file_edit', 'Edit a file by replacing a specific string with new content. The `old_string` must appear verbatim in the file. By default the tool errors if `old_string` appears more than once — use `replace_all: true` to replace every occurrence. Use file_write when you need to create a new file or rewrite it entirely.', {
      type: 'object',
      properties: {
        path: p('string', 'Absolute path to the file to edit.'),
        old_string: p('string', 'The exact string to find and replace. Must match character-for-character including whitespace and newlines.'),
        new_string: p('string', 'The replacement string that will be inserted in place of `old_string`.'),
        replace_all: p('boolean', 'When true, replace every occurrence of `old_string` instead of requiring it to be unique. Defaults to false.'),
      },
      required: ['path', 'old_string', 'new_string'],
    }],
    ['grepTool', 'grep', 'Search for a regular-expression pattern in one or more files. Returns matching lines with their file paths and 1-based line numbers. Use the `glob` parameter to restrict the search to specific file types (e.g. "*.ts"). To list matching file paths without reading contents, use the `glob` tool. Results are capped by `maxResults` to keep the response manageable.', {
      type: 'object',
      properties: {
        pattern: p('string', 'Regular expression pattern to search for in file contents.'),
        path: p('string', 'Absolute directory or file path to search in. Defaults to the tool working directory.'),
        glob: p('string', 'Glob pattern to filter which files are searched (e.g. "*.ts", "**/*.json"). Only used when `path` is a directory.'),
        maxResults: p('number', 'Maximum number of matching lines to return. Defaults to 100.'),
      },
      required: ['pattern'],
    }],
    ['globTool', 'glob', 'List file paths under a directory that match an optional filename glob. Does not read file contents — use `grep` to search inside files. Skips common bulky directories (node_modules, .git, dist, etc.). Paths in the result are relative to the process working directory. Results are capped by `maxFiles`.', {
      type: 'object',
      properties: {
        path: p('string', 'Absolute directory or file path to list. Defaults to the tool working directory.'),
        pattern: p('string', 'Filename glob (e.g. "*.ts", "**/*.json"). When omitted, every file under the directory is listed (subject to maxFiles and skipped dirs).'),
        maxFiles: p('number', 'Maximum number of file paths to return. Defaults to 500.'),
      },
    }],
    ['delegateToAgentTool', 'delegate_to_agent', "Run a sub-task on another agent from this team and return that agent's final answer as the tool result. Use when you need a specialist teammate to produce output you will incorporate. The target agent runs in a fresh conversation for this prompt only.", {
      type: 'object',
      properties: {
        target_agent: p('string', 'Name of the team agent to run the sub-task.'),
        prompt: p('string', 'Instructions / question for the target agent.'),
      },
      required: ['target_agent', 'prompt'],
    }],
  ])('%s', (exportName, name, description, schema) => {
    const tool = b[exportName]
    expect(tool.name).toBe(name)
    expect(tool.description).toBe(description)
    // Exact shape and key order (JSON text compares order): what the LLM is shown, and what
    // the tool's Zod inputSchema converts to (as in the original).
    const registry = new ToolRegistry()
    registry.register(tool)
    expect(JSON.stringify(registry.toToolDefs()[0].inputSchema)).toBe(JSON.stringify(schema))
    expect(JSON.stringify(zodToJsonSchema(tool.inputSchema))).toBe(JSON.stringify(schema))
    expect(typeof tool.execute).toBe('function')
  })

  test('file_read description has a literal backslash-t', () => {
    expect(b.fileReadTool.description).toContain('"N\\t<line>"')
    expect(b.fileReadTool.description).not.toContain('\t')
  })
})

describe('file_read', () => {
  const read = (input: object, cwd: string | null = root) => b.fileReadTool.execute(input, { agent, cwd })

  test('numbered lines; one trailing newline ignored; \\r kept', async () => {
    fs.writeFileSync(`${root}/a.txt`, 'one\r\ntwo\n\nfour\n')
    expect(await read({ path: `${root}/a.txt` })).toEqual(ok('1\tone\r\n2\ttwo\n3\t\n4\tfour'))
  })
  test('offset and limit with the en-dash note', async () => {
    fs.writeFileSync(`${root}/a.txt`, 'a\nb\nc\nd\ne\n')
    expect(await read({ path: `${root}/a.txt`, offset: 2, limit: 2 })).toEqual(ok('2\tb\n3\tc\n\n(showing lines 2\u20133 of 5)'))
    expect(await read({ path: `${root}/a.txt`, offset: 0, limit: 1 })).toEqual(ok('1\ta\n\n(showing lines 1\u20131 of 5)'))
    expect(await read({ path: `${root}/a.txt`, offset: 4 })).toEqual(ok('4\td\n5\te'))
  })
  test('offset beyond the end, singular and plural', async () => {
    fs.writeFileSync(`${root}/one.txt`, 'x\n')
    fs.writeFileSync(`${root}/two.txt`, 'x\ny')
    expect(await read({ path: `${root}/one.txt`, offset: 5 })).toEqual(err(`File "${root}/one.txt" has 1 line but offset 5 is beyond the end.`))
    expect(await read({ path: `${root}/two.txt`, offset: 3 })).toEqual(err(`File "${root}/two.txt" has 2 lines but offset 3 is beyond the end.`))
  })
  test('empty file yields empty text even with an offset', async () => {
    fs.writeFileSync(`${root}/e.txt`, '')
    expect(await read({ path: `${root}/e.txt`, offset: 9 })).toEqual(ok(''))
  })
  test('fs errors use Node texts', async () => {
    expect(await read({ path: `${root}/missing.txt` })).toEqual(
      err(`Could not read file "${root}/missing.txt": ENOENT: no such file or directory, open '${root}/missing.txt'`),
    )
    fs.mkdirSync(`${root}/dir`)
    expect(await read({ path: `${root}/dir` })).toEqual(err(`Could not read file "${root}/dir": EISDIR: illegal operation on a directory, read`))
  })
  test('invalid UTF-8 decodes with U+FFFD', async () => {
    fs.writeFileSync(`${root}/bin.txt`, Buffer.from([0x61, 0xff, 0x62]))
    expect(await read({ path: `${root}/bin.txt` })).toEqual(ok('1\ta\uFFFDb'))
  })
  test('Zod constraints on offset / limit', async () => {
    expect(await read({ path: `${root}/x`, offset: -1 })).toEqual(err('Invalid input for tool "file_read":\n  \u2022 offset: Number must be greater than or equal to 0'))
    expect(await read({ path: `${root}/x`, limit: 0 })).toEqual(err('Invalid input for tool "file_read":\n  \u2022 limit: Number must be greater than 0'))
    expect(await read({ path: `${root}/x`, limit: 1.5 })).toEqual(err('Invalid input for tool "file_read":\n  \u2022 limit: Expected integer, received float'))
    expect(await read({ offset: 'x' })).toEqual(
      err('Invalid input for tool "file_read":\n  \u2022 path: Required\n  \u2022 offset: Expected number, received string'),
    )
  })
  test('the default workspace is not created by reads', async () => {
    const saved = process.cwd()
    process.chdir(root)
    try {
      const res = await b.fileReadTool.execute({ path: `${root}/.agent-workspace/a.txt` }, { agent })
      expect(res).toEqual(
        err(`Could not resolve working directory "${root}/.agent-workspace": ENOENT: no such file or directory, realpath '${root}/.agent-workspace'`),
      )
      expect(fs.existsSync(`${root}/.agent-workspace`)).toBe(false)
    } finally {
      process.chdir(saved)
    }
  })
})

describe('file_write', () => {
  const write = (input: object, cwd: string | null = root) => b.fileWriteTool.execute(input, { agent, cwd })

  test('Created then Updated, line and byte counts', async () => {
    expect(await write({ path: `${root}/sub/deep/a.txt`, content: 'héllo\n' })).toEqual(ok(`Created "${root}/sub/deep/a.txt" (2 lines, 7 bytes).`))
    expect(await write({ path: `${root}/sub/deep/a.txt`, content: '' })).toEqual(ok(`Updated "${root}/sub/deep/a.txt" (1 line, 0 bytes).`))
    expect(fs.readFileSync(`${root}/sub/deep/a.txt`, 'utf8')).toBe('')
  })
  test('creates a missing root (only file_write does)', async () => {
    const missing = `${root}/ws/inner`
    expect(await write({ path: `${missing}/f.txt`, content: 'x' }, missing)).toEqual(ok(`Created "${missing}/f.txt" (1 line, 1 bytes).`))
  })
  test('the default workspace is created under the process cwd', async () => {
    const saved = process.cwd()
    process.chdir(root)
    try {
      const res = await b.fileWriteTool.execute({ path: `${root}/.agent-workspace/a.txt`, content: 'x' }, { agent })
      expect(res).toEqual(ok(`Created "${root}/.agent-workspace/a.txt" (1 line, 1 bytes).`))
    } finally {
      process.chdir(saved)
    }
  })
  test('parent is a file; target is a directory', async () => {
    fs.writeFileSync(`${root}/file`, 'x')
    expect(await write({ path: `${root}/file/sub/a.txt`, content: 'x' })).toEqual(
      err(`Failed to create parent directory "${root}/file/sub": ENOTDIR: not a directory, mkdir '${root}/file/sub'`),
    )
    fs.mkdirSync(`${root}/dir`)
    expect(await write({ path: `${root}/dir`, content: 'x' })).toEqual(err(`Failed to write file "${root}/dir": EISDIR: illegal operation on a directory, open '${root}/dir'`))
  })
  test('sandbox disabled: relative paths are used verbatim', async () => {
    const saved = process.cwd()
    process.chdir(root)
    try {
      expect(await write({ path: 'rel/x.txt', content: 'a\nb' }, null)).toEqual(ok('Created "rel/x.txt" (2 lines, 3 bytes).'))
      expect(fs.readFileSync(`${root}/rel/x.txt`, 'utf8')).toBe('a\nb')
    } finally {
      process.chdir(saved)
    }
  })
})

describe('file_edit', () => {
  const edit = (input: object) => b.fileEditTool.execute(input, { agent, cwd: root })

  test('single replacement, literal (§21: $& is not expanded)', async () => {
    fs.writeFileSync(`${root}/a.js`, 'const x = 1\n')
    expect(await edit({ path: `${root}/a.js`, old_string: '1', new_string: "'$&' + $$ + $` + $'" })).toEqual(ok(`Replaced 1 occurrence in "${root}/a.js".`))
    expect(fs.readFileSync(`${root}/a.js`, 'utf8')).toBe("const x = '$&' + $$ + $` + $'\n")
  })
  test('ambiguous, replace_all, not found, empty old_string', async () => {
    fs.writeFileSync(`${root}/a.txt`, 'aXbXc')
    expect(await edit({ path: `${root}/a.txt`, old_string: 'X', new_string: 'Y' })).toEqual(
      err(`\`old_string\` appears 2 times in "${root}/a.txt". Provide a more specific string to uniquely identify the section you want to replace, or set \`replace_all: true\` to replace every occurrence.`),
    )
    expect(await edit({ path: `${root}/a.txt`, old_string: 'X', new_string: '$&', replace_all: true })).toEqual(ok(`Replaced 2 occurrences in "${root}/a.txt".`))
    expect(fs.readFileSync(`${root}/a.txt`, 'utf8')).toBe('a$&b$&c')
    const notFound = err(
      `The string to replace was not found in "${root}/a.txt".\nMake sure \`old_string\` matches the file contents exactly, including indentation and line endings.`,
    )
    expect(await edit({ path: `${root}/a.txt`, old_string: 'zzz', new_string: 'q' })).toEqual(notFound)
    expect(await edit({ path: `${root}/a.txt`, old_string: '', new_string: 'q' })).toEqual(notFound)
  })
  test('non-overlapping count', async () => {
    fs.writeFileSync(`${root}/a.txt`, 'aaa')
    expect(await edit({ path: `${root}/a.txt`, old_string: 'aa', new_string: 'b', replace_all: true })).toEqual(ok(`Replaced 1 occurrence in "${root}/a.txt".`))
    expect(fs.readFileSync(`${root}/a.txt`, 'utf8')).toBe('ba')
  })
  test('missing file', async () => {
    expect(await edit({ path: `${root}/nope`, old_string: 'a', new_string: 'b' })).toEqual(
      err(`Could not read "${root}/nope": ENOENT: no such file or directory, open '${root}/nope'`),
    )
  })
})

describe('grep', () => {
  const grep = (input: object, extra: object = {}) => b.grepTool.execute(input, { agent, cwd: root, ...extra })

  beforeEach(() => {
    fs.mkdirSync(`${root}/src/deep`, { recursive: true })
    fs.mkdirSync(`${root}/node_modules/pkg`, { recursive: true })
    fs.writeFileSync(`${root}/src/a.ts`, 'const foo = 1\nconst bar = foo\r\n')
    fs.writeFileSync(`${root}/src/deep/b.ts`, 'foobar\nfoo baz\n')
    fs.writeFileSync(`${root}/src/c.json`, '{"foo": true}\n')
    fs.writeFileSync(`${root}/node_modules/pkg/index.js`, 'foo\n')
    fs.writeFileSync(`${root}/bin.dat`, Buffer.from('foo\0bin\n'))
  })

  test('path:line:text relative to the root, skip dirs and binary files skipped', async () => {
    expect(await grep({ pattern: 'foo' })).toEqual(
      ok('src/a.ts:1:const foo = 1\nsrc/a.ts:2:const bar = foo\r\nsrc/c.json:1:{"foo": true}\nsrc/deep/b.ts:1:foobar\nsrc/deep/b.ts:2:foo baz'),
    )
  })
  test('global cap; note only when lines were dropped', async () => {
    expect(await grep({ pattern: 'foo', maxResults: 5 })).toEqual(
      ok('src/a.ts:1:const foo = 1\nsrc/a.ts:2:const bar = foo\r\nsrc/c.json:1:{"foo": true}\nsrc/deep/b.ts:1:foobar\nsrc/deep/b.ts:2:foo baz'),
    )
    expect(await grep({ pattern: 'foo', maxResults: 2 })).toEqual(
      ok('src/a.ts:1:const foo = 1\nsrc/a.ts:2:const bar = foo\r\n\n(results capped at 2; use maxResults to raise the limit)'),
    )
  })
  test('glob filter: basename patterns at any depth, path patterns relative to the searched dir', async () => {
    expect(await grep({ pattern: 'foo', glob: '*.TS' })).toEqual(
      ok('src/a.ts:1:const foo = 1\nsrc/a.ts:2:const bar = foo\r\nsrc/deep/b.ts:1:foobar\nsrc/deep/b.ts:2:foo baz'),
    )
    expect(await grep({ pattern: 'foo', glob: 'src/*.ts' })).toEqual(ok('src/a.ts:1:const foo = 1\nsrc/a.ts:2:const bar = foo\r'))
    expect(await grep({ pattern: 'foo', path: `${root}/src`, glob: 'deep/**' })).toEqual(ok('src/deep/b.ts:1:foobar\nsrc/deep/b.ts:2:foo baz'))
  })
  test('single file path; anchors per line', async () => {
    expect(await grep({ pattern: '^foo', path: `${root}/src/deep/b.ts` })).toEqual(ok('src/deep/b.ts:1:foobar\nsrc/deep/b.ts:2:foo baz'))
    expect(await grep({ pattern: 'baz$', path: `${root}/src/deep/b.ts` })).toEqual(ok('src/deep/b.ts:2:foo baz'))
  })
  test('lookaround and back-references through the backtracking engine', async () => {
    expect(await grep({ pattern: 'foo(?=bar)' })).toEqual(ok('src/deep/b.ts:1:foobar'))
    expect(await grep({ pattern: '(?<!const )foo\\b', glob: '*.ts' })).toEqual(ok('src/a.ts:2:const bar = foo\r\nsrc/deep/b.ts:2:foo baz'))
    fs.writeFileSync(`${root}/src/dup.txt`, 'abab\nabba\n')
    expect(await grep({ pattern: '(ab)\\1', glob: 'dup.txt' })).toEqual(ok('src/dup.txt:1:abab'))
  })
  test('invalid pattern keeps the original text', async () => {
    expect(await grep({ pattern: 'a(' })).toEqual(err('Invalid regular expression: "a("'))
  })
  test('no matches, missing path, pre-aborted signal', async () => {
    expect(await grep({ pattern: 'zzz' })).toEqual(ok('No matches found.'))
    expect(await grep({ pattern: 'foo', path: `${root}/missing` })).toEqual(
      err(`Cannot access path "${root}/missing": ENOENT: no such file or directory, stat '${root}/missing'`),
    )
    const ac = new AbortController()
    ac.abort()
    expect(await grep({ pattern: 'foo' }, { abortSignal: ac.signal })).toEqual(ok('No matches found.'))
  })
  test('symlinks are not followed', async () => {
    fs.symlinkSync(`${root}/src`, `${root}/link`)
    const res = await grep({ pattern: 'baz' })
    expect(res).toEqual(ok('src/deep/b.ts:2:foo baz'))
  })
  test('cwd: null defaults to the process cwd (§21), paths relative to /', async () => {
    const saved = process.cwd()
    process.chdir(`${root}/src/deep`)
    try {
      expect(await b.grepTool.execute({ pattern: 'baz' }, { agent, cwd: null })).toEqual(ok(`${root.slice(1)}/src/deep/b.ts:2:foo baz`))
    } finally {
      process.chdir(saved)
    }
  })
  test('many files: output in walk order and the cap are deterministic (parallel search)', async () => {
    const names: string[] = []
    for (let i = 0; i < 300; i++) {
      const d = `${root}/many/d${i % 7}`
      fs.mkdirSync(d, { recursive: true })
      fs.writeFileSync(`${d}/f${i}.txt`, `x\nhit ${i}\ny\nhit again ${i}\n`)
      names.push(`many/d${i % 7}/f${i}.txt`)
    }
    // Walk order: entries sorted by name bytes in each directory.
    const order = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    const all = order.flatMap((n) => [`${n}:2:hit ${n.match(/f(\d+)/)![1]}`, `${n}:4:hit again ${n.match(/f(\d+)/)![1]}`])
    expect(await grep({ pattern: '^hit', path: `${root}/many`, maxResults: 600 })).toEqual(ok(all.join('\n')))
    for (let run = 0; run < 3; run++) {
      expect(await grep({ pattern: '^hit', path: `${root}/many`, maxResults: 51 })).toEqual(
        ok(all.slice(0, 51).join('\n') + '\n\n(results capped at 51; use maxResults to raise the limit)'),
      )
    }
  })
  test('maxResults constraint', async () => {
    expect(await grep({ pattern: 'x', maxResults: 0 })).toEqual(err('Invalid input for tool "grep":\n  \u2022 maxResults: Number must be greater than 0'))
  })
})

describe('glob', () => {
  const glob = (input: object, extra: object = {}) => b.globTool.execute(input, { agent, cwd: root, ...extra })

  beforeEach(() => {
    fs.mkdirSync(`${root}/sub`)
    fs.mkdirSync(`${root}/dist`)
    fs.mkdirSync(`${root}/.git`)
    for (const f of ['Zeta.md', 'alpha.md', 'a.txt', '.hidden.txt', 'sub/B.TXT', 'dist/x.txt', '.git/HEAD']) fs.writeFileSync(`${root}/${f}`, '')
    fs.symlinkSync(`${root}/a.txt`, `${root}/link.txt`)
  })

  test('localeCompare order, skip dirs, symlinks skipped, hidden kept', async () => {
    expect(await glob({})).toEqual(ok('.hidden.txt\na.txt\nalpha.md\nsub/B.TXT\nZeta.md'))
  })
  test('sort then cap (§21)', async () => {
    expect(await glob({ maxFiles: 2 })).toEqual(ok('.hidden.txt\na.txt\n\n(listing capped at 2 paths; raise maxFiles for more)'))
    expect(await glob({ maxFiles: 5 })).toEqual(ok('.hidden.txt\na.txt\nalpha.md\nsub/B.TXT\nZeta.md'))
  })
  test('full glob syntax, case-insensitive', async () => {
    expect(await glob({ pattern: '*.txt' })).toEqual(ok('.hidden.txt\na.txt\nsub/B.TXT'))
    expect(await glob({ pattern: 'sub/*.txt' })).toEqual(ok('sub/B.TXT'))
    expect(await glob({ pattern: '**/*.md' })).toEqual(ok('alpha.md\nZeta.md'))
    expect(await glob({ pattern: '{a,z}*.md' })).toEqual(ok('alpha.md\nZeta.md'))
    expect(await glob({ pattern: '[ab].txt' })).toEqual(ok('a.txt\nsub/B.TXT'))
    expect(await glob({ pattern: '*.rs' })).toEqual(ok('No files matched.'))
  })
  test('single file; missing path', async () => {
    expect(await glob({ path: `${root}/sub/B.TXT` })).toEqual(ok('sub/B.TXT'))
    expect(await glob({ path: `${root}/sub/B.TXT`, pattern: '*.md' })).toEqual(ok('No files matched.'))
    expect(await glob({ path: root, pattern: 'a.txt' })).toEqual(ok('a.txt'))
    expect(await glob({ path: `${root}/none` })).toEqual(err(`Cannot access path "${root}/none": ENOENT: no such file or directory, stat '${root}/none'`))
  })
})

describe('walker, glob matcher, path safety exports', () => {
  test('collectFiles: join(dir, name), skip dirs, symlinks skipped, maxFiles, pre-aborted', async () => {
    fs.mkdirSync(`${root}/a/node_modules`, { recursive: true })
    fs.writeFileSync(`${root}/a/x.ts`, '')
    fs.writeFileSync(`${root}/a/node_modules/y.ts`, '')
    fs.writeFileSync(`${root}/z.md`, '')
    fs.symlinkSync(`${root}/z.md`, `${root}/l.md`)
    expect((await b.collectFiles(root, undefined)).sort()).toEqual([`${root}/a/x.ts`, `${root}/z.md`])
    expect(await b.collectFiles(root, '*.ts')).toEqual([`${root}/a/x.ts`])
    expect(await b.collectFiles(root, undefined, undefined, { maxFiles: 1 })).toHaveLength(1)
    expect(await b.collectFiles(`${root}/missing`, undefined)).toEqual([])
    const ac = new AbortController()
    ac.abort()
    expect(await b.collectFiles(root, undefined, ac.signal)).toEqual([])
  })
  test('matchesGlob', () => {
    expect(b.matchesGlob('file.TS', '*.ts')).toBe(true)
    expect(b.matchesGlob('file.ts', '**/*.ts')).toBe(true)
    expect(b.matchesGlob('src/file.ts', 'src/*.ts')).toBe(true)
    expect(b.matchesGlob('file.js', '*.ts')).toBe(false)
    expect(b.matchesGlob('a.txt', '?.txt')).toBe(true)
  })
  test('resolvePathWithinCwd', async () => {
    fs.mkdirSync(`${root}/real`)
    fs.symlinkSync(`${root}/real`, `${root}/alias`)
    expect(await b.resolvePathWithinCwd(`${root}/alias/new.txt`, { cwd: root })).toEqual({ ok: true, path: `${root}/real/new.txt`, root })
    expect(await b.resolvePathWithinCwd('x', { cwd: null })).toEqual({ ok: true, path: 'x', root: '/' })
    expect(await b.resolvePathWithinCwd('x', { cwd: root })).toEqual({
      ok: false,
      error: 'Path "x" must be absolute. Built-in filesystem tools require absolute paths.',
    })
    const res = await b.resolvePathWithinCwd(`${root}/ws/a`, { cwd: `${root}/ws` }, { ensureRoot: true })
    expect(res).toEqual({ ok: true, path: `${root}/ws/a`, root: `${root}/ws` })
    expect(fs.statSync(`${root}/ws`).isDirectory()).toBe(true)
  })
})

describe('delegate_to_agent', () => {
  const exec = (input: object, team?: object, name = 'caller') =>
    b.delegateToAgentTool.execute(input, { agent: { ...agent, name }, team })
  const run = async () => ({ success: true, output: 'done', tokenUsage: { input_tokens: 3, output_tokens: 4 } })
  const baseTeam = { name: 't', agents: ['caller', 'helper', 'other'], runDelegatedAgent: run }

  test('the six guards in order', async () => {
    const input = { target_agent: 'helper', prompt: 'do it' }
    expect(await exec(input, undefined)).toEqual(
      err('delegate_to_agent is only available during orchestrated team runs with the delegation tool enabled. Use SharedMemory or explicit tasks instead.'),
    )
    expect(await exec(input, { ...baseTeam, runDelegatedAgent: undefined })).toEqual(
      err('delegate_to_agent is only available during orchestrated team runs with the delegation tool enabled. Use SharedMemory or explicit tasks instead.'),
    )
    expect(await exec({ target_agent: 'caller', prompt: 'p' }, { ...baseTeam, agents: [] })).toEqual(
      err('Cannot delegate to yourself; use another team member.'),
    )
    expect(await exec({ target_agent: 'ghost', prompt: 'p' }, { ...baseTeam, delegationChain: ['ghost'] })).toEqual(
      err('Unknown agent "ghost". Roster: caller, helper, other'),
    )
    expect(await exec(input, { ...baseTeam, delegationChain: ['other', 'helper'], delegationDepth: 9 })).toEqual(
      err('Delegation cycle detected: other -> helper -> helper. Pick a different target or restructure the plan.'),
    )
    expect(await exec(input, { ...baseTeam, delegationDepth: 3 })).toEqual(err('Maximum delegation depth (3) reached; cannot delegate further.'))
    expect(await exec(input, { ...baseTeam, delegationDepth: 1, maxDelegationDepth: 1, delegationPool: { availableRunSlots: 0 } })).toEqual(
      err('Maximum delegation depth (1) reached; cannot delegate further.'),
    )
    expect(await exec(input, { ...baseTeam, delegationPool: { availableRunSlots: 0 } })).toEqual(
      err(
        'Agent pool has no free concurrency slot for a delegated run (nested run would block indefinitely). Increase orchestrator maxConcurrency, wait for parallel work to finish, or avoid delegating while the pool is saturated.',
      ),
    )
    expect(await exec({ target_agent: '', prompt: 'p' }, baseTeam)).toEqual(
      err('Invalid input for tool "delegate_to_agent":\n  \u2022 target_agent: String must contain at least 1 character(s)'),
    )
  })

  test('nested run, token usage, audit write', async () => {
    const writes: unknown[][] = []
    const team = {
      ...baseTeam,
      delegationPool: { availableRunSlots: 1 },
      runDelegatedAgent: async (target: string, prompt: string) => ({ success: false, output: `${target}:${prompt}`, tokenUsage: { input_tokens: 1, output_tokens: 2 } }),
      sharedMemory: { set: async (...args: unknown[]) => void writes.push(args) },
    }
    expect(await exec({ target_agent: 'helper', prompt: 'q' }, team)).toEqual({
      data: 'helper:q',
      isError: true,
      metadata: { tokenUsage: { input_tokens: 1, output_tokens: 2 } },
    })
    expect(writes).toHaveLength(1)
    expect(writes[0][0]).toMatch(/^caller\/delegation:helper:\d+-[0-9a-z]{1,8}$/)
    expect(writes[0].slice(1)).toEqual(['helper:q', { agent: 'caller', delegatedTo: 'helper', success: 'false' }])
  })

  test('audit failures are swallowed; a failing nested run rejects', async () => {
    const team = { ...baseTeam, sharedMemory: { set: () => { throw new Error('disk full') } } }
    expect(await exec({ target_agent: 'helper', prompt: 'q' }, team)).toEqual({
      data: 'done',
      isError: false,
      metadata: { tokenUsage: { input_tokens: 3, output_tokens: 4 } },
    })
    const failing = { ...baseTeam, runDelegatedAgent: async () => { throw new Error('nested boom') } }
    await expect(exec({ target_agent: 'helper', prompt: 'q' }, failing)).rejects.toThrow('nested boom')
  })
})

test('typed import through lib/builtin.d.ts', async () => {
  const ctx: BuiltinToolUseContext = { agent, cwd: root }
  fs.writeFileSync(`${root}/t.txt`, 'typed')
  const r = await typedRead.execute({ path: `${root}/t.txt` }, ctx)
  expect(r).toEqual({ data: '1\ttyped', isError: false })
})
