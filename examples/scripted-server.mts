// A scripted model server for the examples: a small node:http server on 127.0.0.1 that speaks
// the OpenAI chat-completions wire (POST /v1/chat/completions) and the Anthropic messages wire
// (POST /v1/messages), JSON and server-sent events, so the package's native adapters talk to it
// over real HTTP exactly as they talk to a provider. No API key, no network.
//
// The "model" is a function: it receives the request, normalised into a plain conversation
// (system prompt, user / assistant / tool messages, tool names), and returns what to say and
// which tools to call. Examples decide from the messages they are sent (which tools already
// ran, what they returned), as a model would.
import * as http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly args: Record<string, unknown>
}

/** One message of the conversation, whatever the wire format. */
export interface ChatMessage {
  readonly role: 'user' | 'assistant' | 'tool'
  /** The message's text ('' when it has none). For `tool`, the tool's result. */
  readonly text: string
  /** `assistant`: the tool calls it made. */
  readonly toolCalls: readonly ToolCall[]
  /** `tool`: the call this result answers. */
  readonly toolCallId?: string
}

export interface ChatRequest {
  readonly wire: 'openai' | 'anthropic'
  readonly model: string
  readonly system: string
  readonly messages: readonly ChatMessage[]
  /** Names of the tools the request offers. */
  readonly tools: readonly string[]
  readonly stream: boolean
}

export interface ScriptedReply {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly args: Record<string, unknown> }>
}

export type Script = (request: ChatRequest) => ScriptedReply

export interface ScriptedServerOptions {
  /** Pause between streamed chunks, so streaming is visible in a terminal (default 0). */
  readonly chunkDelayMs?: number
}

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>`: Anthropic's base URL; OpenAI-compatible clients use `${origin}/v1`. */
  readonly origin: string
  /** The OpenAI-compatible base URL, `${origin}/v1`. */
  readonly baseURL: string
  /** One entry per chat request served: wire, model, whether it streamed. */
  readonly requests: Array<{ readonly wire: 'openai' | 'anthropic'; readonly model: string; readonly stream: boolean }>
  close(): Promise<void>
}

/** A tool result paired with the call that produced it. */
export interface ToolOutcome {
  readonly name: string
  readonly args: Record<string, unknown>
  readonly result: string
}

/** Every tool call of the conversation with its result, oldest first. */
export function toolOutcomes(request: ChatRequest): ToolOutcome[] {
  const calls = new Map<string, ToolCall>()
  const out: ToolOutcome[] = []
  for (const m of request.messages) {
    for (const c of m.toolCalls) calls.set(c.id, c)
    if (m.role === 'tool' && m.toolCallId !== undefined) {
      const call = calls.get(m.toolCallId)
      if (call) out.push({ name: call.name, args: call.args, result: m.text })
    }
  }
  return out
}

/** The text of the last message the user wrote (tool results are not user text). */
export function lastUserText(request: ChatRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]
    if (m.role === 'user') return m.text
  }
  return ''
}

/** Rough token count, 4 characters a token: enough for usage numbers that move. */
function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4))
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((p) => (asRecord(p).type === 'text' ? String(asRecord(p).text ?? '') : '')).join('')
}

function parseArgs(raw: unknown): Record<string, unknown> {
  if (typeof raw !== 'string') return asRecord(raw)
  try {
    return asRecord(JSON.parse(raw))
  } catch {
    return {}
  }
}

function fromOpenAI(body: Record<string, unknown>): ChatRequest {
  const system: string[] = []
  const messages: ChatMessage[] = []
  for (const raw of Array.isArray(body.messages) ? body.messages : []) {
    const m = asRecord(raw)
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content))
    else if (m.role === 'tool') messages.push({ role: 'tool', text: textOf(m.content), toolCalls: [], toolCallId: String(m.tool_call_id) })
    else if (m.role === 'assistant') {
      const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []).map((c) => {
        const f = asRecord(asRecord(c).function)
        return { id: String(asRecord(c).id), name: String(f.name), args: parseArgs(f.arguments) }
      })
      messages.push({ role: 'assistant', text: textOf(m.content), toolCalls: calls })
    } else messages.push({ role: 'user', text: textOf(m.content), toolCalls: [] })
  }
  const tools = (Array.isArray(body.tools) ? body.tools : []).map((t) => String(asRecord(asRecord(t).function).name))
  return { wire: 'openai', model: String(body.model), system: system.join('\n'), messages, tools, stream: body.stream === true }
}

function fromAnthropic(body: Record<string, unknown>): ChatRequest {
  const messages: ChatMessage[] = []
  for (const raw of Array.isArray(body.messages) ? body.messages : []) {
    const m = asRecord(raw)
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : []
    if (m.role === 'assistant') {
      const calls = blocks.filter((b) => asRecord(b).type === 'tool_use').map((b) => {
        const u = asRecord(b)
        return { id: String(u.id), name: String(u.name), args: asRecord(u.input) }
      })
      messages.push({ role: 'assistant', text: textOf(blocks), toolCalls: calls })
      continue
    }
    for (const b of blocks) {
      const r = asRecord(b)
      if (r.type === 'tool_result') messages.push({ role: 'tool', text: textOf(r.content), toolCalls: [], toolCallId: String(r.tool_use_id) })
    }
    const text = textOf(blocks)
    if (text !== '' || !blocks.some((b) => asRecord(b).type === 'tool_result')) messages.push({ role: 'user', text, toolCalls: [] })
  }
  const tools = (Array.isArray(body.tools) ? body.tools : []).map((t) => String(asRecord(t).name))
  return { wire: 'anthropic', model: String(body.model), system: textOf(body.system), messages, tools, stream: body.stream === true }
}

/** Splits text into word-sized pieces (spaces kept), as a model streams tokens. */
function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? []
}

/** Starts the server on an ephemeral port of 127.0.0.1. */
export async function startScriptedServer(script: Script, options: ScriptedServerOptions = {}): Promise<ScriptedServer> {
  const delay = options.chunkDelayMs ?? 0
  const requests: Array<{ wire: 'openai' | 'anthropic'; model: string; stream: boolean }> = []
  const sockets = new Set<Socket>()
  let nextId = 0

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const fail = (status: number, message: string) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }))
      }
      const url = (req.url ?? '').split('?')[0]
      const wire = url === '/v1/chat/completions' ? 'openai' : url === '/v1/messages' ? 'anthropic' : undefined
      if (req.method !== 'POST' || wire === undefined) return fail(404, `scripted model: no route for ${req.method} ${req.url}`)
      let body: Record<string, unknown>
      try {
        body = asRecord(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      } catch {
        return fail(400, 'scripted model: the request body is not JSON')
      }
      const request = wire === 'openai' ? fromOpenAI(body) : fromAnthropic(body)
      requests.push({ wire, model: request.model, stream: request.stream })
      let reply: ScriptedReply
      try {
        reply = script(request)
      } catch (e) {
        return fail(400, `scripted model: ${e instanceof Error ? e.message : String(e)}`)
      }
      const text = reply.text ?? ''
      const calls = (reply.toolCalls ?? []).map((c) => ({ id: `call_${++nextId}`, name: c.name, args: c.args }))
      const usage = { input: tokens(JSON.stringify(body.messages ?? []) + request.system), output: tokens(text + JSON.stringify(calls)) }
      const id = `scripted-${++nextId}`
      const events = wire === 'openai' ? openaiReply(id, request, text, calls, usage) : anthropicReply(id, request, text, calls, usage)
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(events.json))
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      let i = 0
      const next = () => {
        if (i >= events.sse.length) return void res.end()
        res.write(events.sse[i++], () => (delay > 0 ? setTimeout(next, delay) : setImmediate(next)))
      }
      next()
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    baseURL: `${origin}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

interface Usage { input: number; output: number }
interface Encoded { json: unknown; sse: string[] }

function openaiReply(id: string, request: ChatRequest, text: string, calls: ToolCall[], usage: Usage): Encoded {
  const finish = calls.length > 0 ? 'tool_calls' : 'stop'
  const toolCalls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } }))
  const json = {
    id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: request.model,
    choices: [{ index: 0, message: { role: 'assistant', content: text === '' && calls.length > 0 ? null : text, ...(calls.length > 0 ? { tool_calls: toolCalls } : {}) }, finish_reason: finish }],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  }
  const chunk = (delta: unknown, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model: request.model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`
  const sse = [chunk({ role: 'assistant', content: '' })]
  for (const p of pieces(text)) sse.push(chunk({ content: p }))
  toolCalls.forEach((c, index) => sse.push(chunk({ tool_calls: [{ index, ...c }] })))
  sse.push(chunk({}, finish))
  sse.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model: request.model, choices: [], usage: json.usage })}\n\n`)
  sse.push('data: [DONE]\n\n')
  return { json, sse }
}

function anthropicReply(id: string, request: ChatRequest, text: string, calls: ToolCall[], usage: Usage): Encoded {
  const stop = calls.length > 0 ? 'tool_use' : 'end_turn'
  const content = [
    ...(text !== '' ? [{ type: 'text', text }] : []),
    ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })),
  ]
  const json = {
    id, type: 'message', role: 'assistant', model: request.model, content, stop_reason: stop, stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  }
  const ev = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify({ type: event, ...asRecord(data) })}\n\n`
  const sse = [ev('message_start', { message: { ...json, content: [], stop_reason: null, usage: { input_tokens: usage.input, output_tokens: 1 } } })]
  content.forEach((block, index) => {
    if (block.type === 'text') {
      sse.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }))
      for (const p of pieces(text)) sse.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }))
    } else {
      const u = block as { id: string; name: string; input: unknown }
      sse.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: u.id, name: u.name, input: {} } }))
      sse.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(u.input) } }))
    }
    sse.push(ev('content_block_stop', { index }))
  })
  sse.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output } }))
  sse.push(ev('message_stop', {}))
  return { json, sse }
}
