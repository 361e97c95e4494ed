'use strict'
// W5 mock: a loopback OpenAI-compatible server (run as a child process so that its CPU is not
// charged to the client). Model `bench-T<n>` asks for one tool call per turn until the request
// carries n tool results, then answers with text. `--https`: TLS with the test certificate of
// crates/uv/testdata/tls (clients trust its CA through SSL_CERT_FILE / NODE_EXTRA_CA_CERTS). A
// request with `stream: true` is answered as an event stream (the same message in chunks: the
// tool call or the text in two deltas, the finish reason, the usage, [DONE]).
const fs = require('fs')
const http = require('http')
const https = require('https')
const path = require('path')

const TLS = path.join(__dirname, '..', 'crates', 'uv', 'testdata', 'tls')

function streamed(res, id, model, message, finish, usage) {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  const chunk = (choices, extra = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1700000000, model, choices, ...extra })}\n\n`
  let out
  if (message.tool_calls) {
    out = chunk([{ index: 0, delta: { role: 'assistant', content: null, tool_calls: message.tool_calls.map((c, index) => ({ index, ...c })) }, finish_reason: null }])
  } else {
    const half = message.content.length >> 1
    out = chunk([{ index: 0, delta: { role: 'assistant', content: message.content.slice(0, half) }, finish_reason: null }]) +
      chunk([{ index: 0, delta: { content: message.content.slice(half) }, finish_reason: null }])
  }
  out += chunk([{ index: 0, delta: {}, finish_reason: finish }]) + chunk([], { usage }) + 'data: [DONE]\n\n'
  res.end(out)
}

const handler = (req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    const m = /-T(\d+)$/.exec(body.model)
    const turns = m ? Number(m[1]) : 1
    const done = body.messages.filter((x) => x.role === 'tool').length
    let message
    let finish
    if (done < turns) {
      message = {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `call_${done}`, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ key: `k${done}` }) } }],
      }
      finish = 'tool_calls'
    } else {
      message = { role: 'assistant', content: 'All keys looked up.' }
      finish = 'stop'
    }
    const usage = { prompt_tokens: 100 + done, completion_tokens: 10, total_tokens: 110 + done }
    if (body.stream) return streamed(res, `chatcmpl-${done}`, body.model, message, finish, usage)
    const out = JSON.stringify({
      id: `chatcmpl-${done}`,
      object: 'chat.completion',
      created: 1700000000,
      model: body.model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) })
    res.end(out)
  })
}

const server = process.argv.includes('--https')
  ? https.createServer({ key: fs.readFileSync(path.join(TLS, 'leaf.key')), cert: fs.readFileSync(path.join(TLS, 'leaf.pem')) }, handler)
  : http.createServer(handler)

server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
process.on('disconnect', () => process.exit(0))
