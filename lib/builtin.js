'use strict'
// The built-in tools (CONTRACT §11–§13, §21) as plain ToolDefinition objects. The work, the
// input fields and their checks are native (crates/core/src/tool/builtin); this file builds
// the LLM-visible schemas from the kernel's fields, describes JS inputs for the kernel's
// check, applies defaults, wires AbortSignals to native cancel handles, and builds every
// returned object here, in the caller's realm.
const native = require('./native.js')
const { defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME } = require('./util.js')
const { NATIVE_INPUT_SCHEMA, INPUT_CHECKS } = require('./schema.js')
const { executeWithBackstop, shellResult, failureText } = require('./shell.js')

/** @typedef {import('./util.js').Fields} Fields */
/** @typedef {import('../index.js').ToolUseContext} ToolUseContext */
/** @typedef {import('../index.js').ToolResult} ToolResult */

// The kernel's tables (crates/core/src/tool/builtin/, generated).
const TABLES = require('./generated/boundary.js').builtin
const SKIP_DIRS = new Set(TABLES.skipDirs)
const SAFE_ENV_ALLOWLIST = TABLES.safeEnvAllowlist
const DEFAULT_TIMEOUT_MS = TABLES.defaultTimeoutMs
// Node's setTimeout bound (a JS rule, not the kernel's).
const TIMEOUT_MAX = 2 ** 31 - 1

/**
 * The sandbox root for a tool context: `null` disables the sandbox.
 * @param {{ readonly cwd?: string | null } | null | undefined} context
 * @returns {string | null}
 */
function sandboxRoot(context) {
  const cwd = context == null ? undefined : context.cwd
  if (cwd === null) return null
  return cwd ?? defaultWorkspaceDir()
}

// ---------------------------------------------------------------------------------------
// Input checks: the kernel checks a built-in tool's input with the texts Zod 3 gave for the
// original's schema (crates/core/src/tool/builtin/input.rs). It reads a description of the
// JS value: per field its Zod 3 type (so `undefined`, NaN, functions, Maps, promises… keep
// their `received` texts) and the number or string length the constraints look at. The
// executor sends it as its BUILTIN_INPUT answer, and each tool's own execute checks it too
// (tests call execute() directly with raw input).

/** Zod 3's `getParsedType` names, by the kernel's tag for each. @type {Record<string, number>} */
const TAG = Object.fromEntries(TABLES.jsTypes.map((name, i) => [name, i]))
const T_STRING = TAG.string
const T_NUMBER = TAG.number
const T_OBJECT = TAG.object

/**
 * Zod 3's `getParsedType`, as the kernel's tag.
 * @param {unknown} v
 */
function zodTag(v) {
  switch (typeof v) {
    case 'undefined':
    case 'string':
    case 'boolean':
    case 'function':
    case 'bigint':
    case 'symbol':
      return TAG[typeof v]
    case 'number':
      return Number.isNaN(v) ? TAG.nan : T_NUMBER
    case 'object':
      if (Array.isArray(v)) return TAG.array
      if (v === null) return TAG.null
      if (
        /** @type {Fields} */ (v).then &&
        typeof (/** @type {Fields} */ (v).then) === 'function' &&
        /** @type {Fields} */ (v).catch &&
        typeof (/** @type {Fields} */ (v).catch) === 'function'
      )
        return TAG.promise
      if (v instanceof Map) return TAG.map
      if (v instanceof Set) return TAG.set
      if (v instanceof Date) return TAG.date
      return T_OBJECT
    default:
      return TAG.unknown
  }
}

/**
 * `[tool id, input type, field type, field value, …]` for the kernel's check: each field is
 * read once, in schema order; the value is a number's own value or a string's length.
 * A fresh array per call: a field's getter may itself run a tool.
 * @param {number} id
 * @param {string[]} names
 * @param {unknown} input
 */
function describeInput(id, names, input) {
  const out = new Float64Array(2 + 2 * names.length)
  out[0] = id
  const top = zodTag(input)
  out[1] = top
  if (top !== T_OBJECT) return out
  for (let i = 0; i < names.length; i++) {
    const v = /** @type {Fields} */ (input)[names[i]] // an object: its tag says so
    const t = zodTag(v)
    out[2 + 2 * i] = t
    out[3 + 2 * i] = t === T_NUMBER ? /** @type {number} */ (v) : t === T_STRING ? /** @type {string} */ (v).length : 0
  }
  return out
}

/**
 * Each built-in tool's id and field names in the kernel's tables.
 * @type {Map<string, { id: number, names: string[] }>}
 */
const INPUTS = new Map(TABLES.tools.map((t, id) => [t.name, { id, names: t.fields.map((f) => f.name) }]))

/**
 * The last description the kernel found valid. Its check is a function of the description
 * alone, so an equal one is valid too: the tool's own check right after the executor's (same
 * input, same synchronous turn) needs no second native call.
 * @type {Float64Array | null}
 */
let accepted = null

/** @param {Float64Array} d */
function acceptedAlready(d) {
  const a = accepted
  if (a === null || a.length !== d.length) return false
  for (let i = 0; i < d.length; i++) if (a[i] !== d[i]) return false
  return true
}

/**
 * A built-in tool's own check of `input`: its error result, or null when valid.
 * @param {string} toolName a built-in tool's
 * @param {unknown} input
 * @returns {ToolResult | null}
 */
function checkInput(toolName, input) {
  const { id, names } = /** @type {{ id: number, names: string[] }} */ (INPUTS.get(toolName))
  const d = describeInput(id, names, input)
  if (acceptedAlready(d)) return null
  const text = native.builtinCheckInput(d)
  if (text === null || text === undefined) {
    accepted = d
    return null
  }
  return { data: text, isError: true }
}

/**
 * A tool's description, as the kernel defines it.
 * @param {string} toolName a built-in tool's
 */
const description = (toolName) => TABLES.tools[/** @type {{ id: number }} */ (INPUTS.get(toolName)).id].description

/**
 * A tool's JSON Schema (§11.2) from the kernel's fields: `required` only when some are.
 * @param {string} toolName a built-in tool's
 */
function inputSchema(toolName) {
  const fields = TABLES.tools[/** @type {{ id: number }} */ (INPUTS.get(toolName)).id].fields
  /** @type {Record<string, { type: string, description: string }>} */
  const properties = {}
  for (const f of fields) properties[f.name] = { type: f.type, description: f.description }
  /** @type {{ type: string, properties: typeof properties, required?: string[] }} */
  const schema = { type: 'object', properties }
  const required = fields.filter((f) => f.required).map((f) => f.name)
  if (required.length > 0) schema.required = required
  return schema
}

/**
 * A native rejection (a Rust panic) as a tool error: execute never throws for tool faults.
 * @param {string} toolName
 * @param {unknown} err
 */
function nativeFailure(toolName, err) {
  const e = /** @type {Fields | null | undefined} */ (err) // any value: read as it is
  const msg = e && typeof e.message === 'string' ? e.message : String(err)
  return { data: TABLES.failedInternally(toolName, msg), isError: true }
}

/** @param {import('../binding').NativeToolResult} r */
function result(r) {
  return { data: r.data, isError: r.isError }
}

/** The handle of calls without a signal: nothing ever cancels it, so one serves them all. */
const NEVER_CANCELLED = new native.CancelHandle()

/**
 * Runs `fn(handle)` with a native cancel handle tripped by `signal`. `detectPreAborted`:
 * whether an already-aborted signal counts (bash's listener never sees it, §11.3; the
 * walkers check `signal.aborted` themselves).
 * @template T
 * @param {AbortSignal | null | undefined} signal
 * @param {boolean} detectPreAborted
 * @param {(handle: import('../binding').CancelHandle) => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function withCancel(signal, detectPreAborted, fn) {
  if (!signal) return fn(NEVER_CANCELLED)
  const handle = new native.CancelHandle()
  if (detectPreAborted && signal.aborted) handle.cancel()
  const onAbort = () => handle.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await fn(handle)
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

// ---------------------------------------------------------------------------------------
// Path safety, walker, redaction (module exports of path-safety.ts, fs-walk.ts, redaction.ts)

/**
 * @param {string} inputPath
 * @param {{ readonly cwd?: string | null }} context
 * @param {{ ensureRoot?: boolean }} [options]
 * @returns {Promise<import('./builtin.js').SafePathResult>}
 */
async function resolvePathWithinCwd(inputPath, context, options = {}) {
  const r = await native.builtinResolvePath(inputPath, sandboxRoot(context), process.cwd(), !!options?.ensureRoot)
  // The kernel sets `path` and `root` when ok, `error` otherwise.
  return r.ok ? { ok: true, path: /** @type {string} */ (r.path), root: /** @type {string} */ (r.root) } : { ok: false, error: /** @type {string} */ (r.error) }
}

/**
 * @param {string} dir
 * @param {string | undefined} glob
 * @param {AbortSignal} [signal]
 * @param {{ maxFiles?: number }} [options]
 */
async function collectFiles(dir, glob, signal, options) {
  const maxFiles = options && options.maxFiles !== undefined ? options.maxFiles : null
  const files = await withCancel(signal, true, (h) => native.builtinCollectFiles(dir, glob ?? null, maxFiles, h))
  return [...files]
}

/**
 * @param {string} filename
 * @param {string} glob
 */
function matchesGlob(filename, glob) {
  return native.builtinMatchesGlob(filename, glob)
}

/** @param {string} name */
function isSensitiveName(name) {
  // RegExp.test coerces its argument to a string.
  return native.builtinIsSensitiveName(String(name))
}

/** @param {string} text */
function redactSensitiveText(text) {
  if (!text) return text
  return native.builtinRedactText(text)
}

/**
 * The result's arrays and plain objects, made in this realm (see builtinRedactObject).
 * @param {boolean} isArray
 */
function makeContainer(isArray) {
  return isArray ? [] : {}
}

/**
 * The kernel's one redaction walk (crates/core/src/redaction.rs) over the JS value.
 * @template T
 * @param {T} value
 * @returns {T} a redacted copy (of the same shape)
 */
function redactSensitiveObject(value) {
  try {
    return /** @type {T} */ (native.builtinRedactObject(value, makeContainer))
  } catch (e) {
    // The addon's RangeError belongs to the main realm; the caller's (Jest's) gets its own.
    if (e !== null && typeof e === 'object' && /** @type {Error} */ (e).name === 'RangeError') throw new RangeError(/** @type {Error} */ (e).message)
    throw e
  }
}

// ---------------------------------------------------------------------------------------
// The tools

/**
 * A timer delay as Node's setTimeout reads it: anything outside 1..2^31-1 (NaN included) is 1 ms.
 * @param {unknown} ms
 */
function timerDelay(ms) {
  const delay = Number(ms)
  return delay >= 1 && delay <= TIMEOUT_MAX ? delay : 1
}

/** The allowlisted host variables as `[name, value]` pairs, built fresh at each call from
 *  process.env (tests mutate it between calls); the kernel drops the sensitive names.
 * @returns {string[][]} */
function hostEnv() {
  /** @type {string[][]} */
  const env = []
  for (const k of SAFE_ENV_ALLOWLIST) {
    const v = process.env[k]
    if (v !== undefined) env.push([k, String(v)])
  }
  return env
}

/**
 * The host's shell behind upstream 1.16's ShellExecutor interface: the bash tool's own native
 * spawn (the process tree killed on timeout and abort, the environment allowlist, 10 MiB kept
 * per stream), returning the raw parts instead of the tool's layout. `exitCode` is 124 after a
 * timeout and 130 after an abort (unless bash exited by itself first), 127 when the command could
 * not start (the spawn error's text in `stderr`, e.g. `spawn bash ENOENT` for a missing cwd). A
 * signal already aborted gives 130 without starting anything. Not a sandbox: the command runs with
 * the Node process's permissions; `sandboxRoot` is ignored.
 */
class LocalShellExecutor {
  /**
   * @param {string} command
   * @param {import('../index.js').ShellExecOptions} options
   * @returns {Promise<import('../index.js').ShellExecResult>}
   */
  async exec(command, options) {
    const signal = options.abortSignal
    if (signal !== undefined && signal !== null && signal.aborted === true) return { stdout: '', stderr: '', exitCode: TABLES.exitAborted }
    const r = await withCancel(signal, false, (h) => native.builtinBashExec(command, timerDelay(options.timeoutMs), options.cwd ?? null, hostEnv(), h))
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode }
  }
}

/**
 * bash through a ToolUseContext's `shellExecutor` (upstream 1.16): a LocalShellExecutor is called
 * directly with the caller's signal; any other executor through the backstop (lib/shell.js). An
 * exec that rejects (or resolves with no readable result) gives 127 with its message in stderr.
 * The result takes the tool's one output layout, redacted (the kernel's `format_exec_result`).
 * The executor also gets `sandboxRoot`: the context's filesystem sandbox root (`null` when the
 * sandbox is disabled), which a confining executor needs and upstream's executors ignore.
 * @param {import('../index.js').ShellExecutor} executor
 * @param {BashInput} input
 * @param {ToolUseContext} context
 */
async function bashThrough(executor, input, context) {
  const timeoutMs = input.timeout ?? DEFAULT_TIMEOUT_MS
  const root = sandboxRoot(context)
  const signal = context.abortSignal
  let r
  try {
    r =
      executor instanceof LocalShellExecutor
        ? shellResult(await executor.exec(input.command, { cwd: input.cwd, timeoutMs, abortSignal: signal, sandboxRoot: root }))
        : await executeWithBackstop(executor, input.command, { cwd: input.cwd, timeoutMs, sandboxRoot: root }, signal, timerDelay(timeoutMs))
  } catch (error) {
    r = { stdout: '', stderr: failureText(error), exitCode: TABLES.exitStartFailed }
  }
  return { data: native.builtinBashFormat(r.stdout, r.stderr, r.exitCode), isError: r.exitCode !== 0 }
}

/**
 * Each tool's input, once its check passed.
 * @typedef {{ command: string, timeout?: number, cwd?: string }} BashInput
 */

const bashTool = {
  name: 'bash',
  description: description('bash'),
  inputSchema: inputSchema('bash'),
  // Upstream 1.13: its grant permits real side effects (told to an onToolCall gate).
  consequential: true,
  /**
   * @param {BashInput} input
   * @param {ToolUseContext} [context]
   */
  async execute(input, context) {
    const bad = checkInput('bash', input)
    if (bad) return bad
    // Upstream 1.16: `context.shellExecutor ?? LocalShellExecutor`. Without one, the tool's own
    // native path (the layout made natively, no extra crossing), exactly as before the seam.
    const executor = context ? context.shellExecutor : undefined
    if (executor !== undefined && executor !== null) return bashThrough(executor, input, /** @type {ToolUseContext} */ (context)) // it held the executor
    // Node's setTimeout: anything outside 1..2^31-1 (NaN included) fires after 1 ms.
    const delay = timerDelay(input.timeout ?? DEFAULT_TIMEOUT_MS)
    const env = hostEnv()
    const signal = context ? context.abortSignal : undefined
    try {
      return result(await withCancel(signal, false, (h) => native.builtinBash(input.command, delay, input.cwd ?? null, env, h)))
    } catch (err) {
      return nativeFailure('bash', err)
    }
  },
}

/**
 * A built-in tool whose work is one native call: `execute` checks the input, awaits
 * `run(input, context, signal)` and returns its result; a native rejection is the tool's error
 * result (nativeFailure). `cancellable`: whether the call gets the context's AbortSignal (read
 * before the call, as the walkers' own check of `signal.aborted` needs it). The keys are the
 * original's, in its order: name, description, inputSchema, `consequential` (upstream 1.13:
 * told to an onToolCall gate) only for the tools that write, execute.
 * @template I
 * @param {string} name a built-in tool's
 * @param {{ consequential?: true, cancellable?: true }} kind
 * @param {(input: I, context: ToolUseContext | undefined, signal: AbortSignal | undefined) => Promise<import('../binding').NativeToolResult>} run
 */
function nativeTool(name, kind, run) {
  const cancellable = kind.cancellable === true
  return {
    name,
    description: description(name),
    inputSchema: inputSchema(name),
    ...(kind.consequential ? { consequential: true } : {}),
    /**
     * @param {I} input
     * @param {ToolUseContext} [context]
     */
    async execute(input, context) {
      const bad = checkInput(name, input)
      if (bad) return bad
      const signal = cancellable && context ? context.abortSignal : undefined
      try {
        return result(await run(input, context, signal))
      } catch (err) {
        return nativeFailure(name, err)
      }
    },
  }
}

const fileReadTool = nativeTool(
  'file_read',
  {},
  /** @param {{ path: string, offset?: number, limit?: number }} input */
  (input, context) => native.builtinFileRead(input.path, input.offset ?? null, input.limit ?? null, sandboxRoot(context), process.cwd()),
)

const fileWriteTool = nativeTool(
  'file_write',
  { consequential: true },
  /** @param {{ path: string, content: string }} input */
  (input, context) => native.builtinFileWrite(input.path, input.content, sandboxRoot(context), process.cwd()),
)

const fileEditTool = nativeTool(
  'file_edit',
  { consequential: true },
  /** @param {{ path: string, old_string: string, new_string: string, replace_all?: boolean }} input */
  (input, context) => native.builtinFileEdit(input.path, input.old_string, input.new_string, input.replace_all ?? false, sandboxRoot(context), process.cwd()),
)

const grepTool = nativeTool(
  'grep',
  { cancellable: true },
  /** @param {{ pattern: string, path?: string, glob?: string, maxResults?: number }} input */
  (input, context, signal) =>
    withCancel(signal, true, (h) =>
      native.builtinGrep(
        input.pattern,
        input.path ?? null,
        input.glob ?? null,
        input.maxResults ?? TABLES.defaultMaxResults,
        sandboxRoot(context),
        process.cwd(),
        h,
      ),
    ),
)

const globTool = nativeTool(
  'glob',
  { cancellable: true },
  /** @param {{ path?: string, pattern?: string, maxFiles?: number }} input */
  (input, context, signal) =>
    withCancel(signal, true, (h) =>
      native.builtinGlob(input.path ?? null, input.pattern ?? null, input.maxFiles ?? TABLES.defaultMaxFiles, sandboxRoot(context), process.cwd(), h),
    ),
)

const delegateToAgentTool = {
  name: 'delegate_to_agent',
  description: description('delegate_to_agent'),
  inputSchema: inputSchema('delegate_to_agent'),
  /**
   * @param {{ target_agent: string, prompt: string }} input
   * @param {ToolUseContext} [context]
   */
  async execute(input, context) {
    const bad = checkInput('delegate_to_agent', input)
    if (bad) return bad
    const team = context ? context.team : undefined
    const caller = context?.agent ? context.agent.name : undefined
    const target = input.target_agent
    const pool = team ? team.delegationPool : undefined
    const slots = pool != null && typeof pool.availableRunSlots === 'number' && !Number.isNaN(pool.availableRunSlots) ? pool.availableRunSlots : null
    const guard = native.builtinCheckDelegation(
      !!team?.runDelegatedAgent,
      String(caller),
      target,
      team?.agents ? Array.from(team.agents, String) : [],
      team?.delegationChain ? Array.from(team.delegationChain, String) : [],
      Number(team?.delegationDepth ?? 0),
      Number(team?.maxDelegationDepth ?? TABLES.defaultMaxDelegationDepth),
      slots,
    )
    if (guard !== null) return { data: guard, isError: true }
    // A rejection propagates to the executor (`Tool "delegate_to_agent" threw an error: …`).
    // The kernel's guard refused the call unless the team has a runner.
    const delegating = /** @type {import('../index.js').TeamInfo & Required<Pick<import('../index.js').TeamInfo, 'runDelegatedAgent'>>} */ (team)
    const res = await delegating.runDelegatedAgent(target, input.prompt)
    if (delegating.sharedMemory) {
      const key = `${caller}/delegation:${target}:${Date.now()}-${Math.random().toString(36).slice(2, 10)}`
      try {
        await delegating.sharedMemory.set(key, res.output, { agent: caller, delegatedTo: target, success: String(res.success) })
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
// registry shows that to the LLM and the executor validates input with the kernel's check for
// the tool (INPUT_CHECKS: Zod 3's issue texts), so runs need no zod and keep the original's
// texts with any Zod version.

/**
 * What this file calls of the user's `zod` (either version): the builders and their methods.
 * @typedef {{ [factory: string]: (shape?: Record<string, ZodBuilder>) => ZodBuilder }} ZodModule
 * @typedef {{
 *   _zod?: unknown, refine(check: (v: unknown) => boolean, params: { message: string }): ZodBuilder,
 *   int(): ZodBuilder, gte(n: number): ZodBuilder, gt(n: number): ZodBuilder, min(n: number): ZodBuilder,
 *   optional(): ZodBuilder, describe(description: string): ZodBuilder,
 * }} ZodBuilder
 */

/** @type {ZodModule | undefined} */
let zodCache
function loadZod() {
  if (zodCache === undefined) {
    /** @type {ZodModule & { z: ZodModule }} */
    let m
    try {
      m = /** @type {ZodModule & { z: ZodModule }} */ (/** @type {unknown} */ (require('zod')))
    } catch (e) {
      const err = /** @type {Fields | null | undefined} */ (e) // any value: read as it is
      const why = err && typeof err.message === 'string' ? err.message.split('\n')[0] : String(e)
      throw new Error(TABLES.zodMissing(why))
    }
    zodCache = typeof m.object === 'function' ? m : m.z
  }
  return zodCache
}

/**
 * @param {ZodModule} z
 * @param {string} toolName a built-in tool's
 */
function zodInputSchema(z, toolName) {
  // Zod 4's .int() also caps at 2^53; the kernel's check (Number.isInteger) and Zod 3 do not.
  const zod4 = typeof z.number()._zod === 'object'
  const int = zod4 ? (/** @type {ZodBuilder} */ s) => s.refine(Number.isInteger, { message: TABLES.zod4IntIssue }) : (/** @type {ZodBuilder} */ s) => s.int()
  /** @type {Record<string, ZodBuilder>} */
  const shape = {}
  for (const f of TABLES.tools[/** @type {{ id: number }} */ (INPUTS.get(toolName)).id].fields) {
    let s = z[f.type]()
    if (f.int) s = int(s)
    if (f.gte != null) s = s.gte(f.gte)
    if (f.gt != null) s = s.gt(f.gt)
    if (f.minLength != null) s = s.min(f.minLength)
    if (!f.required) s = s.optional()
    shape[f.name] = s.describe(f.description)
  }
  return z.object(shape)
}

for (const tool of ALL_BUILT_IN_TOOLS_WITH_DELEGATE) {
  const json = tool.inputSchema
  /** @type {ZodBuilder | undefined} */
  let view
  const { id, names } = /** @type {{ id: number, names: string[] }} */ (INPUTS.get(tool.name))
  // The executor checks input against this schema with the kernel's check for the tool (Zod
  // 3's texts for the original's schema, never needing zod), not the JSON Schema validator.
  INPUT_CHECKS.set(json, {
    describe: (input) => describeInput(id, names, input),
    accept(d) {
      accepted = d
    },
  })
  Object.defineProperty(tool, NATIVE_INPUT_SCHEMA, { value: json, configurable: true })
  // Redefining keeps the key's place: name, description, inputSchema, execute.
  Object.defineProperty(tool, 'inputSchema', {
    enumerable: true,
    configurable: true,
    get() {
      if (view === undefined) view = zodInputSchema(loadZod(), tool.name)
      return view
    },
    set(value) {
      // A replaced schema is the tool's schema from then on, for the kernel too.
      delete (/** @type {{ [NATIVE_INPUT_SCHEMA]?: unknown }} */ (tool)[NATIVE_INPUT_SCHEMA])
      Object.defineProperty(tool, 'inputSchema', { value, writable: true, enumerable: true, configurable: true })
    },
  })
}

/**
 * @param {{ register(tool: import('../index.js').AnyToolDefinition): void }} registry
 * @param {import('./builtin.js').RegisterBuiltInToolsOptions} [options]
 */
function registerBuiltInTools(registry, options) {
  for (const tool of BUILT_IN_TOOLS) registry.register(tool)
  if (options?.includeDelegateTool) registry.register(delegateToAgentTool)
}

module.exports = {
  LocalShellExecutor,
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
  // For the other native shells (lib/confined-shell.js), not the public entry.
  hostEnv,
  timerDelay,
}
