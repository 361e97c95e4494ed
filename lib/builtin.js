'use strict'
// The built-in tools (CONTRACT §11–§13, §21) as plain ToolDefinition objects. The work is
// native (crates/core/src/tool/builtin); this file holds the LLM-visible schemas, applies defaults and
// the constraints Zod enforced in the original, wires AbortSignals to native cancel handles,
// and builds every returned object here, in the caller's realm.
const path = require('path')
const native = require('./native.js')
const { defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME } = require('./util.js')
const { NATIVE_INPUT_SCHEMA, INPUT_CHECKS } = require('./schema.js')

const SKIP_DIRS = new Set(['.git', '.svn', '.hg', 'node_modules', '.next', 'dist', 'build'])
const SAFE_ENV_ALLOWLIST = ['HOME', 'LANG', 'LC_ALL', 'LOGNAME', 'PATH', 'SHELL', 'TEMP', 'TERM', 'TMP', 'TMPDIR', 'USER']
const TIMEOUT_MAX = 2 ** 31 - 1

/** The sandbox root for a tool context: `null` disables the sandbox. */
function sandboxRoot(context) {
  const cwd = context == null ? undefined : context.cwd
  if (cwd === null) return null
  return cwd ?? defaultWorkspaceDir()
}

// ---------------------------------------------------------------------------------------
// Input checks with Zod 3's issue texts, derived from each tool's JSON Schema (types,
// required) and the constraints Zod enforced beyond it (§11.2, CONSTRAINTS below). The
// executor runs the same check instead of the generic JSON Schema validator (INPUT_CHECKS),
// and tests call execute() directly with raw input, so each tool also checks its own.

/** Zod 3's `getParsedType`: the `received` of an `invalid_type` issue. */
function zodType(v) {
  switch (typeof v) {
    case 'undefined':
    case 'string':
    case 'boolean':
    case 'function':
    case 'bigint':
    case 'symbol':
      return typeof v
    case 'number':
      return Number.isNaN(v) ? 'nan' : 'number'
    case 'object':
      if (Array.isArray(v)) return 'array'
      if (v === null) return 'null'
      if (v.then && typeof v.then === 'function' && v.catch && typeof v.catch === 'function') return 'promise'
      if (v instanceof Map) return 'map'
      if (v instanceof Set) return 'set'
      if (v instanceof Date) return 'date'
      return 'object'
    default:
      return 'unknown'
  }
}

/** Zod 3's default message for an `invalid_type` issue. */
function invalidType(expected, received) {
  return received === 'undefined' ? 'Required' : `Expected ${expected}, received ${received}`
}

/**
 * The checks Zod made beyond the JSON types (§11.2), in Zod's check order: `int`, then
 * `gte` (inclusive minimum) / `gt` (exclusive minimum); `minLength` for strings.
 */
const CONSTRAINTS = {
  file_read: { offset: { int: true, gte: 0 }, limit: { int: true, gt: 0 } },
  grep: { maxResults: { int: true, gt: 0 } },
  glob: { maxFiles: { int: true, gt: 0 } },
  delegate_to_agent: { target_agent: { minLength: 1 }, prompt: { minLength: 1 } },
}

/** `[name, type, { required, int, gte, gt, minLength }]` per property, in schema (Zod shape) order. */
function inputFields(toolName, json) {
  const required = json.required || []
  const constraints = CONSTRAINTS[toolName] || {}
  return Object.keys(json.properties).map((name) => [name, json.properties[name].type, { required: required.includes(name), ...constraints[name] }])
}

/**
 * The issues Zod 3 reports for `input` against `z.object(shape)` built from `fields`
 * (unknown keys stripped, so never an issue), as `[path, message]` pairs in Zod's order;
 * `null` when the input is valid.
 */
function inputIssues(fields, input) {
  const received = zodType(input)
  if (received !== 'object') return [['', invalidType('object', received)]]
  let issues = null
  for (const [name, type, opts] of fields) {
    const v = input[name]
    if (v === undefined) {
      if (opts.required) (issues ??= []).push([name, 'Required'])
      continue
    }
    const got = zodType(v)
    if (got !== type) {
      ;(issues ??= []).push([name, invalidType(type, got)])
      continue
    }
    if (type === 'number') {
      if (opts.int && !Number.isInteger(v)) (issues ??= []).push([name, 'Expected integer, received float'])
      if (opts.gte !== undefined && v < opts.gte) (issues ??= []).push([name, `Number must be greater than or equal to ${opts.gte}`])
      if (opts.gt !== undefined && v <= opts.gt) (issues ??= []).push([name, `Number must be greater than ${opts.gt}`])
    } else if (type === 'string' && opts.minLength !== undefined && v.length < opts.minLength) {
      ;(issues ??= []).push([name, `String must contain at least ${opts.minLength} character(s)`])
    }
  }
  return issues
}

function invalidInput(toolName, issues) {
  return { data: `Invalid input for tool "${toolName}":\n` + issues.map(([p, m]) => `  \u2022 ${p}: ${m}`).join('\n'), isError: true }
}

/** Each built-in tool's fields (filled in below, once the tools are defined). */
const FIELDS = new Map()

/** A built-in tool's own check of `input`: its error result, or null when valid. */
function checkInput(toolName, input) {
  const issues = inputIssues(FIELDS.get(toolName), input)
  return issues === null ? null : invalidInput(toolName, issues)
}

/** A native rejection (a Rust panic) as a tool error: execute never throws for tool faults. */
function nativeFailure(toolName, err) {
  const msg = err && typeof err.message === 'string' ? err.message : String(err)
  return { data: `Tool "${toolName}" failed internally: ${msg}`, isError: true }
}

function result(r) {
  return { data: r.data, isError: r.isError }
}

/**
 * Runs `fn(handle)` with a native cancel handle tripped by `signal`. `detectPreAborted`:
 * whether an already-aborted signal counts (bash's listener never sees it, §11.3; the
 * walkers check `signal.aborted` themselves).
 */
async function withCancel(signal, detectPreAborted, fn) {
  const handle = new native.CancelHandle()
  if (!signal) return fn(handle)
  if (detectPreAborted && signal.aborted) handle.cancel()
  const onAbort = () => handle.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await fn(handle)
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

function prop(type, description) {
  return { type, description }
}

// ---------------------------------------------------------------------------------------
// Path safety, walker, redaction (module exports of path-safety.ts, fs-walk.ts, redaction.ts)

async function resolvePathWithinCwd(inputPath, context, options = {}) {
  const r = await native.builtinResolvePath(inputPath, sandboxRoot(context), process.cwd(), !!(options && options.ensureRoot))
  return r.ok ? { ok: true, path: r.path, root: r.root } : { ok: false, error: r.error }
}

async function collectFiles(dir, glob, signal, options) {
  const maxFiles = options && options.maxFiles !== undefined ? options.maxFiles : null
  const files = await withCancel(signal, true, (h) => native.builtinCollectFiles(dir, glob ?? null, maxFiles, h))
  return [...files]
}

function matchesGlob(filename, glob) {
  return native.builtinMatchesGlob(filename, glob)
}

function isSensitiveName(name) {
  // RegExp.test coerces its argument to a string.
  return native.builtinIsSensitiveName(String(name))
}

function redactSensitiveText(text) {
  if (!text) return text
  return native.builtinRedactText(text)
}

function redactSensitiveObject(value) {
  if (typeof value === 'string') return redactSensitiveText(value)
  if (Array.isArray(value)) return value.map((v) => redactSensitiveObject(v))
  // Dates from any realm are returned as they are.
  if (Object.prototype.toString.call(value) === '[object Date]') return value
  if (value !== null && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      out[k] = isSensitiveName(k) ? '[redacted]' : redactSensitiveObject(v)
    }
    return out
  }
  return value
}

// ---------------------------------------------------------------------------------------
// The tools

const bashTool = {
  name: 'bash',
  description:
    'Execute a bash command and return its stdout and stderr. Use this for file system operations, running scripts, installing packages, and any task that requires shell access. The command runs in a non-interactive shell (bash -c). Long-running commands should use the timeout parameter.',
  inputSchema: {
    type: 'object',
    properties: {
      command: prop('string', 'The bash command to execute.'),
      timeout: prop('number', 'Timeout in milliseconds before the command is forcibly killed. Defaults to 30000 ms.'),
      cwd: prop('string', 'Working directory in which to run the command.'),
    },
    required: ['command'],
  },
  async execute(input, context) {
    const bad = checkInput('bash', input)
    if (bad) return bad
    // Node's setTimeout: anything outside 1..2^31-1 (NaN included) fires after 1 ms.
    let delay = Number(input.timeout ?? 30000)
    if (!(delay >= 1 && delay <= TIMEOUT_MAX)) delay = 1
    // Built fresh at each call from process.env (tests mutate it between calls).
    const env = []
    for (const k of SAFE_ENV_ALLOWLIST) {
      const v = process.env[k]
      if (v !== undefined) env.push([k, String(v)])
    }
    const signal = context ? context.abortSignal : undefined
    try {
      return result(await withCancel(signal, false, (h) => native.builtinBash(input.command, delay, input.cwd ?? null, env, h)))
    } catch (err) {
      return nativeFailure('bash', err)
    }
  },
}

const fileReadTool = {
  name: 'file_read',
  description:
    'Read the contents of a file from disk. Returns the file contents with line numbers prefixed in the format "N\\t<line>". Use `offset` and `limit` to read large files in chunks without loading the entire file into the context window.',
  inputSchema: {
    type: 'object',
    properties: {
      path: prop('string', 'Absolute path to the file to read.'),
      offset: prop('number', '1-based line number to start reading from. When omitted the file is read from the beginning.'),
      limit: prop('number', 'Maximum number of lines to return. When omitted all lines from `offset` to the end of the file are returned.'),
    },
    required: ['path'],
  },
  async execute(input, context) {
    const bad = checkInput('file_read', input)
    if (bad) return bad
    try {
      return result(await native.builtinFileRead(input.path, input.offset ?? null, input.limit ?? null, sandboxRoot(context), process.cwd()))
    } catch (err) {
      return nativeFailure('file_read', err)
    }
  },
}

const fileWriteTool = {
  name: 'file_write',
  description:
    'Write content to a file, creating it (and any missing parent directories) if it does not already exist, or overwriting it if it does. Prefer this tool for creating new files; use file_edit for targeted in-place edits of existing files.',
  inputSchema: {
    type: 'object',
    properties: {
      path: prop('string', 'Absolute path to the file to write. The path must be absolute (starting with /).'),
      content: prop('string', 'The full content to write to the file.'),
    },
    required: ['path', 'content'],
  },
  async execute(input, context) {
    const bad = checkInput('file_write', input)
    if (bad) return bad
    try {
      return result(await native.builtinFileWrite(input.path, input.content, sandboxRoot(context), process.cwd()))
    } catch (err) {
      return nativeFailure('file_write', err)
    }
  },
}

const fileEditTool = {
  name: 'file_edit',
  description:
    'Edit a file by replacing a specific string with new content. The `old_string` must appear verbatim in the file. By default the tool errors if `old_string` appears more than once \u2014 use `replace_all: true` to replace every occurrence. Use file_write when you need to create a new file or rewrite it entirely.',
  inputSchema: {
    type: 'object',
    properties: {
      path: prop('string', 'Absolute path to the file to edit.'),
      old_string: prop('string', 'The exact string to find and replace. Must match character-for-character including whitespace and newlines.'),
      new_string: prop('string', 'The replacement string that will be inserted in place of `old_string`.'),
      replace_all: prop('boolean', 'When true, replace every occurrence of `old_string` instead of requiring it to be unique. Defaults to false.'),
    },
    required: ['path', 'old_string', 'new_string'],
  },
  async execute(input, context) {
    const bad = checkInput('file_edit', input)
    if (bad) return bad
    try {
      return result(
        await native.builtinFileEdit(input.path, input.old_string, input.new_string, input.replace_all ?? false, sandboxRoot(context), process.cwd()),
      )
    } catch (err) {
      return nativeFailure('file_edit', err)
    }
  },
}

const grepTool = {
  name: 'grep',
  description:
    'Search for a regular-expression pattern in one or more files. Returns matching lines with their file paths and 1-based line numbers. Use the `glob` parameter to restrict the search to specific file types (e.g. "*.ts"). To list matching file paths without reading contents, use the `glob` tool. Results are capped by `maxResults` to keep the response manageable.',
  inputSchema: {
    type: 'object',
    properties: {
      pattern: prop('string', 'Regular expression pattern to search for in file contents.'),
      path: prop('string', 'Absolute directory or file path to search in. Defaults to the tool working directory.'),
      glob: prop('string', 'Glob pattern to filter which files are searched (e.g. "*.ts", "**/*.json"). Only used when `path` is a directory.'),
      maxResults: prop('number', 'Maximum number of matching lines to return. Defaults to 100.'),
    },
    required: ['pattern'],
  },
  async execute(input, context) {
    const bad = checkInput('grep', input)
    if (bad) return bad
    const signal = context ? context.abortSignal : undefined
    try {
      return result(
        await withCancel(signal, true, (h) =>
          native.builtinGrep(input.pattern, input.path ?? null, input.glob ?? null, input.maxResults ?? 100, sandboxRoot(context), process.cwd(), h),
        ),
      )
    } catch (err) {
      return nativeFailure('grep', err)
    }
  },
}

const globTool = {
  name: 'glob',
  description:
    'List file paths under a directory that match an optional filename glob. Does not read file contents \u2014 use `grep` to search inside files. Skips common bulky directories (node_modules, .git, dist, etc.). Paths in the result are relative to the process working directory. Results are capped by `maxFiles`.',
  inputSchema: {
    type: 'object',
    properties: {
      path: prop('string', 'Absolute directory or file path to list. Defaults to the tool working directory.'),
      pattern: prop('string', 'Filename glob (e.g. "*.ts", "**/*.json"). When omitted, every file under the directory is listed (subject to maxFiles and skipped dirs).'),
      maxFiles: prop('number', 'Maximum number of file paths to return. Defaults to 500.'),
    },
  },
  async execute(input, context) {
    const bad = checkInput('glob', input)
    if (bad) return bad
    const signal = context ? context.abortSignal : undefined
    try {
      return result(
        await withCancel(signal, true, (h) =>
          native.builtinGlob(input.path ?? null, input.pattern ?? null, input.maxFiles ?? 500, sandboxRoot(context), process.cwd(), h),
        ),
      )
    } catch (err) {
      return nativeFailure('glob', err)
    }
  },
}

const delegateToAgentTool = {
  name: 'delegate_to_agent',
  description:
    "Run a sub-task on another agent from this team and return that agent's final answer as the tool result. Use when you need a specialist teammate to produce output you will incorporate. The target agent runs in a fresh conversation for this prompt only.",
  inputSchema: {
    type: 'object',
    properties: {
      target_agent: prop('string', 'Name of the team agent to run the sub-task.'),
      prompt: prop('string', 'Instructions / question for the target agent.'),
    },
    required: ['target_agent', 'prompt'],
  },
  async execute(input, context) {
    const bad = checkInput('delegate_to_agent', input)
    if (bad) return bad
    const team = context ? context.team : undefined
    const caller = context && context.agent ? context.agent.name : undefined
    const target = input.target_agent
    const pool = team ? team.delegationPool : undefined
    const slots = pool != null && typeof pool.availableRunSlots === 'number' && !Number.isNaN(pool.availableRunSlots) ? pool.availableRunSlots : null
    const guard = native.builtinCheckDelegation(
      !!(team && team.runDelegatedAgent),
      String(caller),
      target,
      team && team.agents ? Array.from(team.agents, String) : [],
      team && team.delegationChain ? Array.from(team.delegationChain, String) : [],
      Number((team && team.delegationDepth) ?? 0),
      Number((team && team.maxDelegationDepth) ?? 3),
      slots,
    )
    if (guard !== null) return { data: guard, isError: true }
    // A rejection propagates to the executor (`Tool "delegate_to_agent" threw an error: …`).
    const res = await team.runDelegatedAgent(target, input.prompt)
    if (team.sharedMemory) {
      const key = `${caller}/delegation:${target}:${Date.now()}-${Math.random().toString(36).slice(2, 10)}`
      try {
        await team.sharedMemory.set(key, res.output, { agent: caller, delegatedTo: target, success: String(res.success) })
      } catch {
        // Best-effort audit write.
      }
    }
    return { data: res.output, isError: !res.success, metadata: { tokenUsage: res.tokenUsage } }
  },
}

const BUILT_IN_TOOLS = [bashTool, fileReadTool, fileWriteTool, fileEditTool, grepTool, globTool]
const ALL_BUILT_IN_TOOLS_WITH_DELEGATE = [...BUILT_IN_TOOLS, delegateToAgentTool]

// ---------------------------------------------------------------------------------------
// `inputSchema` is a Zod schema, as in the original (`fileReadTool.inputSchema.parse(…)`),
// built on first read from the project's `zod` (a peer dependency, ^3.25 || ^4) and kept.
// The kernel never reads it: the JSON Schema above stays under NATIVE_INPUT_SCHEMA, the
// registry shows that to the LLM and the executor validates input with that schema's check
// (INPUT_CHECKS: Zod 3's issue texts), so runs need no zod and keep the original's texts with
// any Zod version.

let zodCache
function loadZod() {
  if (zodCache === undefined) {
    let m
    try {
      m = require('zod')
    } catch (e) {
      const why = e && typeof e.message === 'string' ? e.message.split('\n')[0] : String(e)
      throw new Error(
        `@oma-kernel/core: the built-in tools' inputSchema is a Zod schema, built from the peer dependency "zod" (^3.25 || ^4), which could not be loaded: ${why}. Install it with: npm install zod`,
      )
    }
    zodCache = typeof m.object === 'function' ? m : m.z
  }
  return zodCache
}

function zodInputSchema(z, toolName, json) {
  // Zod 4's .int() also caps at 2^53; checkInput (Number.isInteger) and Zod 3 do not.
  const zod4 = typeof z.number()._zod === 'object'
  const int = zod4 ? (s) => s.refine(Number.isInteger, { message: 'Invalid input: expected int, received number' }) : (s) => s.int()
  const shape = {}
  for (const [key, type, opts] of FIELDS.get(toolName)) {
    let s = z[type]()
    if (opts.int) s = int(s)
    if (opts.gte !== undefined) s = s.gte(opts.gte)
    if (opts.gt !== undefined) s = s.gt(opts.gt)
    if (opts.minLength !== undefined) s = s.min(opts.minLength)
    if (!opts.required) s = s.optional()
    shape[key] = s.describe(json.properties[key].description)
  }
  return z.object(shape)
}

for (const tool of ALL_BUILT_IN_TOOLS_WITH_DELEGATE) {
  const json = tool.inputSchema
  let view
  const fields = inputFields(tool.name, json)
  FIELDS.set(tool.name, fields)
  // The executor checks input against this schema with the texts Zod 3 gives for the
  // original's schema, never needing zod, rather than with the generic JSON Schema validator.
  INPUT_CHECKS.set(json, (input) => inputIssues(fields, input))
  Object.defineProperty(tool, NATIVE_INPUT_SCHEMA, { value: json, configurable: true })
  // Redefining keeps the key's place: name, description, inputSchema, execute.
  Object.defineProperty(tool, 'inputSchema', {
    enumerable: true,
    configurable: true,
    get() {
      if (view === undefined) view = zodInputSchema(loadZod(), tool.name, json)
      return view
    },
    set(value) {
      // A replaced schema is the tool's schema from then on, for the kernel too.
      delete tool[NATIVE_INPUT_SCHEMA]
      Object.defineProperty(tool, 'inputSchema', { value, writable: true, enumerable: true, configurable: true })
    },
  })
}

function registerBuiltInTools(registry, options) {
  for (const tool of BUILT_IN_TOOLS) registry.register(tool)
  if (options && options.includeDelegateTool) registry.register(delegateToAgentTool)
}

module.exports = {
  bashTool,
  fileReadTool,
  fileWriteTool,
  fileEditTool,
  grepTool,
  globTool,
  delegateToAgentTool,
  BUILT_IN_TOOLS,
  ALL_BUILT_IN_TOOLS_WITH_DELEGATE,
  registerBuiltInTools,
  resolvePathWithinCwd,
  defaultWorkspaceDir,
  DEFAULT_WORKSPACE_DIRNAME,
  collectFiles,
  SKIP_DIRS,
  matchesGlob,
  isSensitiveName,
  redactSensitiveText,
  redactSensitiveObject,
}
