'use strict'
// The MCP bridge's glue (`connectMCPTools`, CONTRACT §17). The client is native
// (crates/mcp: the session, the stdio and Streamable HTTP transports, every rule and text;
// src/js/mcp.rs converts): this file reads the user's config values, awaits an `authToken`
// function, wires each call's AbortSignal to a native cancel,
// and builds the ToolDefinition objects in the caller's realm. No @modelcontextprotocol/sdk.
const native = require('./native.js')
const MCP = require('./generated/boundary.js').mcp
const { defineTool } = require('./tools.js')
const { normalizeEgressPolicy, egressRefusal } = require('./llm.js')

// The SDK's default environment allowlist, from the native table; read from `process.env`
// at connect time (a worker's process.env is its own).
const DEFAULT_ENV_VARS = native.mcpDefaultEnvVars()

/**
 * The config as read here: either transport's fields, each as the user gave it (the native
 * check refuses what is wrong).
 * @typedef {Partial<import('../mcp.js').ConnectMCPToolsConfig> & Partial<import('../mcp.js').ConnectMCPToolsHttpConfig>} McpConfig
 */
/**
 * A tool as the native client lists it (`toolsJson`).
 * @typedef {{ name: string, rawName: string, description: string, inputSchema: Record<string, unknown> }} McpToolSpec
 */

/**
 * `{ name: value | undefined }` as `[name, value | null]` pairs (`undefined` removes).
 * @param {unknown} env
 */
function envPairs(env) {
  if (env === undefined || env === null) return undefined
  // Not an object: handed over as is, for the native check's error.
  if (typeof env !== 'object') return env
  return Object.entries(env).map(([k, v]) => [k, v === undefined ? null : v])
}

function defaultEnv() {
  const pairs = []
  for (const k of DEFAULT_ENV_VARS) {
    const v = process.env[k]
    if (v !== undefined) pairs.push([k, v])
  }
  return pairs
}

/**
 * A number JSON would turn into `null` (NaN, ±Infinity) is sent as text so the check refuses it.
 * @param {unknown} v
 */
function jsonNumber(v) {
  return typeof v === 'number' && !Number.isFinite(v) ? String(v) : v
}

/** @param {unknown} reason */
function reasonText(reason) {
  try {
    return String(reason)
  } catch {
    return 'AbortError'
  }
}

/** @param {unknown} e */
function thrownMessage(e) {
  if (e instanceof Error) return e.message
  try {
    return String(e)
  } catch {
    return 'Error'
  }
}

/**
 * The schema the registry validates input with: the server's, when the native validator can
 * compile it; otherwise `{}` (any input, as the original's `z.any()`), so one odd schema does
 * not make the tool unusable. The model sees the server's schema either way.
 * @param {Record<string, unknown>} schema
 */
function validationSchema(schema) {
  try {
    new native.JsonSchemaValidator(JSON.stringify(schema))
    return schema
  } catch {
    return {}
  }
}

/**
 * The tool's result, built here (the caller's realm) from the native one.
 * @param {import('../binding').NativeMcpResult} r
 */
function result(r) {
  return { data: r.data, isError: r.isError }
}

/**
 * @param {import('../binding').NativeMcpClient} client
 * @param {McpToolSpec} spec
 * @param {() => number} nextKey
 * @param {(() => Promise<void>) | undefined} refresh
 */
function mcpTool(client, spec, nextKey, refresh) {
  const rawName = spec.rawName
  return defineTool({
    name: spec.name,
    description: spec.description,
    inputSchema: validationSchema(spec.inputSchema),
    llmInputSchema: spec.inputSchema,
    execute: async (/** @type {unknown} */ input, /** @type {import('../index.js').ToolUseContext} */ context) => {
      const signal = context !== null && typeof context === 'object' ? context.abortSignal : undefined
      // The SDK refuses an aborted signal before sending, with the reason's own message.
      if (signal?.aborted) return { data: native.mcpCallFailed(rawName, thrownMessage(signal.reason)), isError: true }
      let args
      try {
        args = JSON.stringify(input === undefined ? {} : input)
      } catch (e) {
        return { data: native.mcpCallFailed(rawName, thrownMessage(e)), isError: true }
      }
      if (refresh !== undefined) {
        try {
          await refresh()
        } catch (e) {
          return { data: native.mcpCallFailed(rawName, thrownMessage(e)), isError: true }
        }
      }
      const key = nextKey()
      const pending = client.callTool(key, rawName, args)
      if (!signal) return result(await pending)
      const onAbort = () => client.cancel(key, reasonText(signal.reason))
      signal.addEventListener('abort', onAbort, { once: true })
      try {
        return result(await pending)
      } finally {
        signal.removeEventListener('abort', onAbort)
      }
    },
  })
}

// Connected clients not yet disconnected. A process that exits without disconnect(): each
// server's stdin closes with it, but a descendant that ignores EOF would outlive it, so the
// groups get SIGTERM on the way out (one listener for all connections).
/** @type {Set<import('../binding').NativeMcpClient>} */
const live = new Set()
function terminateLive() {
  for (const c of live) c.terminateNow()
}

/**
 * The bearer token now: `authToken` as given, or what its function returns.
 * @param {unknown} authToken
 */
async function currentToken(authToken) {
  if (authToken === undefined || authToken === null) return undefined
  const t = typeof authToken === 'function' ? await authToken() : authToken
  if (typeof t !== 'string') throw new TypeError(MCP.authTokenNotAString)
  return t
}

/**
 * Pairs of a headers object (Streamable HTTP).
 * @param {unknown} headers
 */
function headerPairs(headers) {
  if (headers === undefined || headers === null || typeof headers !== 'object') return headers
  return Object.entries(headers).map(([k, v]) => [k, typeof v === 'string' ? v : null])
}

// The name egress refusals give the MCP client, the kernel's.
const EGRESS_PROVIDER = MCP.egressProvider

/**
 * `egressPolicy` (Streamable HTTP): normalised as the adapters' (an invalid one throws
 * `EgressPolicyError`), and the server's URL checked before anything is sent, so a refused
 * connect rejects with the `EgressPolicyError` itself; the native transport then checks every
 * request and follows no redirect.
 * @param {McpConfig} config
 */
function egressPolicyOf(config) {
  if (config.egressPolicy === undefined) return undefined
  // Not undefined, so normalised (or thrown).
  const policy = /** @type {import('../index.js').EgressPolicy} */ (normalizeEgressPolicy(config.egressPolicy))
  if (typeof config.url === 'string') {
    const refused = egressRefusal(policy, config.url, EGRESS_PROVIDER)
    if (refused !== null) throw refused
  }
  return policy
}

/**
 * @param {McpConfig} config
 * @returns {Promise<import('../mcp.js').ConnectedMCPTools>}
 */
async function connectMCPTools(config) {
  if (config === null || typeof config !== 'object') throw new TypeError(MCP.configNotAnObject)
  const egressPolicy = egressPolicyOf(config)
  const authToken = config.authToken
  const json = JSON.stringify({
    url: config.url,
    headers: headerPairs(config.headers),
    token: await currentToken(authToken),
    command: config.command,
    args: config.args,
    env: envPairs(config.env),
    defaultEnv: defaultEnv(),
    cwd: config.cwd,
    namePrefix: config.namePrefix,
    requestTimeoutMs: jsonNumber(config.requestTimeoutMs),
    clientName: config.clientName,
    clientVersion: config.clientVersion,
    egressPolicy,
  })
  // Rejects with the original's error (spawn, timeout, duplicate names, …); the server is
  // already ended then.
  const client = await native.mcpConnect(json)
  let key = 0
  const nextKey = () => {
    key = (key + 1) >>> 0
    return key
  }
  // A token function is asked again before each call (Streamable HTTP).
  const refresh = typeof authToken === 'function' ? async () => client.setToken(await currentToken(authToken)) : undefined
  const tools = JSON.parse(client.toolsJson).map((/** @type {McpToolSpec} */ spec) => mcpTool(client, spec, nextKey, refresh))
  live.add(client)
  if (live.size === 1) process.on('exit', terminateLive)
  return {
    tools,
    disconnect: async () => {
      if (live.delete(client) && live.size === 0) process.removeListener('exit', terminateLive)
      await client.disconnect()
    },
  }
}

module.exports = { connectMCPTools }
