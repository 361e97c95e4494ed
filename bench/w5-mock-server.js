'use strict'
// W5 mock: a loopback OpenAI-compatible server (run as a child process so that its CPU is not
// charged to the client). Model `bench-T<n>` asks for one tool call per turn until the request
// carries n tool results, then answers with text.
const http = require('http')

const server = http.createServer((req, res) => {
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
    const out = JSON.stringify({
      id: `chatcmpl-${done}`,
      object: 'chat.completion',
      created: 1700000000,
      model: body.model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: { prompt_tokens: 100 + done, completion_tokens: 10, total_tokens: 110 + done },
    })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) })
    res.end(out)
  })
})

server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
process.on('disconnect', () => process.exit(0))
