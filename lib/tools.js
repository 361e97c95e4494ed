'use strict'
// Tool framework glue: the registry holds the user's JS tool objects; validation calls the
// user's Zod schema (so defaults and transforms are Zod's), a built-in tool's own check (Zod
// 3's texts, lib/builtin.js) or the native JSON Schema validator; admission, truncation and
// the texts come from the kernel.
const native = require('./native.js')
const { zodToJsonSchema, isZodSchema, toolInputSchema, INPUT_CHECKS } = require('./schema.js')
const { isError, safeString } = require('./errors.js')
const { attach } = require('./util.js')

function defineTool(config) {
  const tool = { name: config.name, description: config.description, inputSchema: config.inputSchema }
  if (config.outputSchema !== undefined) tool.outputSchema = config.outputSchema
  if (config.llmInputSchema !== undefined) tool.llmInputSchema = config.llmInputSchema
  if (config.maxOutputChars !== undefined) tool.maxOutputChars = config.maxOutputChars
  tool.execute = config.execute
  return tool
}

class Semaphore {
  constructor(max) {
    if (typeof max !== 'number' || Number.isNaN(max) || max < 1) {
      throw new RangeError(`Semaphore max must be at least 1, got ${max}`)
    }
    if (!Number.isInteger(max) || max > 0xffffffff) {
      throw new RangeError(`Semaphore max must be an integer, got ${max}`)
    }
    // The FIFO admission is the kernel's (crates/core/src/kernel/semaphore.rs); waiters' resolvers stay here.
    // Its native slot exists only while there are holders or waiters (-1: none), so a
    // semaphore needs no finalizer: executors are often created per agent.
    this._max = max
    this._id = -1
    this._waiters = new Map()
  }
  get limit() { return this._max }
  get active() { return this._id < 0 ? 0 : native.semStats(this._id)[1] }
  get pending() { return this._id < 0 ? 0 : native.semStats(this._id)[2] }
  /** Takes a slot: 0 = taken now, otherwise the waiter id to park under. */
  _take() {
    if (this._id >= 0) return native.semAcquire(this._id)
    this._id = native.semOpen(this._max)
    return 0
  }
  acquire() {
    const w = this._take()
    if (w === 0) return Promise.resolve()
    return new Promise((resolve) => this._waiters.set(w, resolve))
  }
  release() {
    if (this._id < 0) return // an extra release (§21: a no-op)
    const w = native.semRelease(this._id)
    if (w < 0) this._id = -1
    else if (w !== 0) {
      const wake = this._waiters.get(w)
      this._waiters.delete(w)
      wake()
    }
  }
  async run(fn) {
    // A free slot is taken synchronously: no extra await on the hot path.
    const w = this._take()
    if (w !== 0) await new Promise((resolve) => this._waiters.set(w, resolve))
    try {
      return await fn()
    } finally {
      this.release()
    }
  }
}

const validators = new WeakMap()

class ToolRegistry {
  constructor() {
    this._tools = new Map()
    this._runtime = new Set()
    // `[[name, runtimeAdded], …]` as the kernel's grant resolution reads it, kept until the
    // registry changes (registries are often built per agent: no native object to free).
    this._listJson = undefined
  }

  register(tool, options) {
    if (tool === null || typeof tool !== 'object') {
      throw new TypeError('ToolRegistry: a tool must be an object with name, description, inputSchema and execute')
    }
    if (typeof tool.name !== 'string' || tool.name === '') {
      throw new TypeError('ToolRegistry: a tool must have a non-empty string "name"')
    }
    if (typeof tool.execute !== 'function') {
      throw new TypeError(`ToolRegistry: tool "${tool.name}" must have an "execute" function`)
    }
    // A built-in tool's JSON Schema, not its lazily built Zod view (lib/schema.js).
    const schema = toolInputSchema(tool)
    if (schema === null || typeof schema !== 'object') {
      throw new TypeError(`ToolRegistry: tool "${tool.name}" must have an "inputSchema" (a Zod schema or a JSON Schema object)`)
    }
    if (this._tools.has(tool.name)) {
      throw new Error(`ToolRegistry: a tool named "${tool.name}" is already registered. Use a unique name or deregister the existing one first.`)
    }
    if (!isZodSchema(schema) && !INPUT_CHECKS.has(schema) && !validators.has(schema)) {
      // Plain JSON Schema: compiled once, validated natively.
      let v
      try {
        v = new native.JsonSchemaValidator(JSON.stringify(schema))
      } catch (e) {
        throw new TypeError(`ToolRegistry: tool "${tool.name}" has an invalid inputSchema: ${e.message}`)
      }
      validators.set(schema, v)
    }
    this._tools.set(tool.name, tool)
    const runtime = options !== undefined && options !== null && options.runtimeAdded === true
    if (runtime) this._runtime.add(tool.name)
    this._listJson = undefined
  }

  /** The names and runtime flags for the kernel (see the constructor). */
  _toolList() {
    if (this._listJson === undefined) {
      // Written by hand: registries are often built per agent, and this is several times
      // cheaper than JSON.stringify of the pairs.
      let s = '['
      for (const n of this._tools.keys()) {
        s += `${s.length === 1 ? '' : ','}[${JSON.stringify(n)},${this._runtime.has(n)}]`
      }
      this._listJson = s + ']'
    }
    return this._listJson
  }

  get(name) { return this._tools.get(name) }
  list() { return Array.from(this._tools.values()) }
  getAll() { return this.list() }
  has(name) { return this._tools.has(name) }
  unregister(name) {
    if (!this._tools.delete(name)) return
    this._runtime.delete(name)
    this._listJson = undefined
  }
  deregister(name) { this.unregister(name) }

  _toolDef(tool) {
    return { name: tool.name, description: tool.description, inputSchema: tool.llmInputSchema ?? zodToJsonSchema(toolInputSchema(tool)) }
  }
  toToolDefs() { return this.list().map((t) => this._toolDef(t)) }
  toRuntimeToolDefs() { return this.list().filter((t) => this._runtime.has(t.name)).map((t) => this._toolDef(t)) }
  toLLMTools() {
    return this.list().map((t) => {
      if (t.llmInputSchema) return { name: t.name, description: t.description, input_schema: { type: 'object', ...t.llmInputSchema } }
      const s = zodToJsonSchema(toolInputSchema(t))
      const input_schema = { type: 'object', properties: s.properties ?? {} }
      if (s.required !== undefined) input_schema.required = s.required
      return { name: t.name, description: t.description, input_schema }
    })
  }
}

function zodIssueLines(issues) {
  return issues.map((i) => `  • ${i.path.join('.')}: ${i.message}`).join('\n')
}

/** The text of what a tool (or an executor) threw (§9.2 step 8): always a string, never throws,
 *  whatever was thrown (the executor must not reject for a tool's fault). */
function thrownMessage(err) {
  try {
    if (isError(err)) {
      const m = err.message
      return typeof m === 'string' ? m : safeString(m)
    }
    if (typeof err === 'string') return err
    const s = JSON.stringify(err)
    return s === undefined ? 'undefined' : s
  } catch {
    // Circular or BigInt values, throwing getters or toJSON, revoked Proxies: the original
    // would reject here; we report instead.
    return safeString(err)
  }
}

function truncateToolOutput(data, maxChars) {
  if (data.length <= maxChars) return data
  return native.truncateToolOutput(data, maxChars)
}

class ToolExecutor {
  constructor(registry, options = {}) {
    this.registry = registry
    this.maxToolOutputChars = options.maxToolOutputChars
    // §21: this bound applies to every execution, the runner's included.
    this.semaphore = new Semaphore(options.maxConcurrency ?? 4)
  }

  async execute(toolName, input, context) {
    // Admission first (§21: maxConcurrency bounds every execution), inlined rather than
    // Semaphore.run so that a tool call costs one async layer here, not three.
    const sem = this.semaphore
    const w = sem._take()
    if (w !== 0) await new Promise((resolve) => sem._waiters.set(w, resolve))
    try {
      const tool = this.registry.get(toolName)
      if (!tool) return { data: `Tool "${toolName}" is not registered in the ToolRegistry.`, isError: true }
      if (context?.abortSignal?.aborted === true) {
        return { data: `Tool "${toolName}" was aborted before execution began.`, isError: true }
      }
      let parsed = input
      const schema = toolInputSchema(tool)
      let check
      if (isZodSchema(schema)) {
        const r = schema.safeParse(input)
        if (!r.success) return { data: `Invalid input for tool "${tool.name}":\n${zodIssueLines(r.error.issues)}`, isError: true }
        parsed = r.data
      } else if ((check = INPUT_CHECKS.get(schema)) !== undefined) {
        // A built-in tool: Zod 3's texts for the original's schema (unknown keys are stripped
        // by Zod, so never an issue; the tools read only their own fields).
        let issues
        try {
          issues = check(input)
        } catch (e) {
          // A throwing getter or Proxy trap: Zod would throw here; we report instead.
          issues = [['', `input cannot be read: ${thrownMessage(e)}`]]
        }
        if (issues !== null) {
          return { data: `Invalid input for tool "${tool.name}":\n${issues.map(([p, m]) => `  • ${p}: ${m}`).join('\n')}`, isError: true }
        }
      } else {
        const v = validators.get(schema)
        if (v) {
          let json
          try {
            json = JSON.stringify(input === undefined ? null : input)
          } catch (e) {
            // Validating `null` instead would report a type error that is not the problem.
            return { data: `Invalid input for tool "${tool.name}":\n  • : input cannot be written as JSON: ${thrownMessage(e)}`, isError: true }
          }
          const errs = v.validate(json ?? 'null')
          if (errs.length > 0) {
            return { data: `Invalid input for tool "${tool.name}":\n${errs.map(([p, m]) => `  • ${p}: ${m}`).join('\n')}`, isError: true }
          }
        }
      }
      if (context?.abortSignal?.aborted === true) {
        return { data: `Tool "${tool.name}" was aborted before execution began.`, isError: true }
      }
      try {
        const result = await tool.execute(parsed, context)
        if (result === undefined || result === null) {
          throw new TypeError(`Cannot read properties of ${result} (reading 'isError')`)
        }
        if (typeof result !== 'object') {
          return { data: `Tool "${tool.name}" returned an invalid result: expected an object with a string "data", got ${typeof result}`, isError: true }
        }
        if (typeof result.data !== 'string') {
          const got = result.data === null ? 'null' : typeof result.data
          return { data: `Tool "${tool.name}" returned an invalid result: "data" must be a string, got ${got}`, isError: true }
        }
        if (!result.isError && tool.outputSchema) {
          const r = tool.outputSchema.safeParse(result.data)
          if (!r.success) return { data: `Invalid output for tool "${tool.name}":\n${zodIssueLines(r.error.issues)}`, isError: true }
        }
        return this._maybeTruncate(tool, result)
      } catch (err) {
        const result = { data: `Tool "${tool.name}" threw an error: ${thrownMessage(err)}`, isError: true }
        try {
          return this._maybeTruncate(tool, result)
        } catch {
          // A tool whose maxOutputChars getter throws: its error text untruncated.
          return result
        }
      }
    } finally {
      sem.release()
    }
  }

  async executeBatch(calls, context) {
    // Every call that started is awaited before the batch settles, whatever fails: a bad call
    // object (a throwing getter) or a rejection (a schema that throws) fails the batch with the
    // first such error only once the others are done, never leaving one running unobserved.
    const results = new Map()
    let failure = null
    const fail = (err) => { if (failure === null) failure = { err } }
    const pending = []
    try {
      for (const c of calls) {
        const id = c.id
        pending.push(attach(this.execute(c.name, c.input, context), (r) => { results.set(id, r) }, fail))
      }
    } catch (err) {
      fail(err)
    }
    await Promise.all(pending)
    if (failure !== null) throw failure.err
    return results
  }

  _limit(tool) {
    return tool.maxOutputChars ?? this.maxToolOutputChars
  }

  _maybeTruncate(tool, result) {
    const max = this._limit(tool)
    if (max === undefined || max === null || max <= 0 || result.data.length <= max) return result
    return { ...result, data: native.truncateToolOutput(result.data, max) }
  }


}

module.exports = { defineTool, ToolRegistry, ToolExecutor, Semaphore, truncateToolOutput, zodToJsonSchema, thrownMessage }
