'use strict'
// One end-to-end run through the installed package, shared by the CJS, ESM and worker checks:
// a Zod tool and the built-in file tools (sandboxed in a temp dir) driven by a scripted adapter,
// stream() events, and a native OpenAI adapter over HTTP to a server on 127.0.0.1.
const assert = require('assert')
const fs = require('fs')
const http = require('http')
const os = require('os')
const path = require('path')
const { z } = require('zod')

const resp = (content, stop = 'end_turn') => ({ id: 'r', model: 'm', stop_reason: stop, usage: { input_tokens: 3, output_tokens: 2 }, content })

async function agentRun(core, label) {
  const { Agent, ToolRegistry, ToolExecutor, defineTool, registerBuiltInTools } = core
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'oma-packed-')))
  try {
    const registry = new ToolRegistry()
    registerBuiltInTools(registry)
    registry.register(defineTool({
      name: 'add',
      description: 'Add two numbers',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => ({ data: String(a + b) }),
    }))
    const file = path.join(dir, 'note.txt')
    const replies = [
      resp([
        { type: 'tool_use', id: 't1', name: 'add', input: { a: 2, b: 3 } },
        { type: 'tool_use', id: 't2', name: 'file_write', input: { path: file, content: 'hello packed\n' } },
      ], 'tool_use'),
      resp([
        { type: 'tool_use', id: 't3', name: 'file_read', input: { path: file } },
        { type: 'tool_use', id: 't4', name: 'grep', input: { pattern: 'packed', path: dir } },
        { type: 'tool_use', id: 't5', name: 'add', input: { a: 'x' } },
      ], 'tool_use'),
      resp([{ type: 'text', text: `done ${label}` }]),
    ]
    let calls = 0
    const adapter = {
      name: 'mock',
      chat: async () => replies[calls++],
      // eslint-disable-next-line require-yield
      stream: async function* () { throw new Error('not used') },
    }
    const agent = new Agent({ name: label, model: 'm', adapter, cwd: dir, tools: ['add', 'file_write', 'file_read', 'grep'] }, registry, new ToolExecutor(registry))
    const r = await agent.run('go')
    assert.strictEqual(r.success, true, r.output)
    assert.strictEqual(r.output, `done ${label}`)
    const out = Object.fromEntries(r.toolCalls.map((c) => [c.toolName + (c.toolName === 'add' && c.input.a === 'x' ? '!' : ''), c.output]))
    assert.strictEqual(out.add, '5')
    assert.match(out.file_write, /^Created ".*note\.txt" \(2 lines, 13 bytes\)\.$/)
    assert.strictEqual(out.file_read, '1\thello packed')
    assert.match(out.grep, /note\.txt/)
    assert.match(out['add!'], /^Invalid input for tool "add"/)
    assert.strictEqual(fs.readFileSync(file, 'utf8'), 'hello packed\n')
    assert.deepStrictEqual(r.tokenUsage, { input_tokens: 9, output_tokens: 6 })

    calls = 0
    const types = []
    for await (const ev of agent.stream('again')) types.push(ev.type)
    assert.strictEqual(types[types.length - 1], 'done')
    assert.ok(types.includes('tool_use') && types.includes('tool_result') && types.includes('text'), types.join(','))
    return r
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function nativeAdapter(core) {
  let seen = null
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => { body += d })
    req.on('end', () => {
      seen = { url: req.url, auth: req.headers.authorization, body: JSON.parse(body) }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({
        id: 'c1', object: 'chat.completion', model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'native hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
      }))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const adapter = await core.createAdapter('openai', 'test-key', `http://127.0.0.1:${server.address().port}/v1`)
    const r = await adapter.chat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { model: 'm' })
    assert.deepStrictEqual(r.content, [{ type: 'text', text: 'native hi' }])
    assert.deepStrictEqual(r.usage, { input_tokens: 4, output_tokens: 2 })
    assert.strictEqual(seen.url, '/v1/chat/completions')
    assert.strictEqual(seen.auth, 'Bearer test-key')
    assert.strictEqual(seen.body.model, 'm')
  } finally {
    server.close()
    // Node 18's close() leaves the adapter's keep-alive connection open until it times out (5 s).
    server.closeAllConnections()
  }
}

async function scenario(core, label) {
  await agentRun(core, label)
  await nativeAdapter(core)
}

module.exports = { scenario }
