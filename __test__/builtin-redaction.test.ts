// Redaction (CONTRACT §13): the native implementation against a reference built from the
// contract's JS regexes, on fixed cases and on generated text (seeded, so reproducible).
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { isSensitiveName, redactSensitiveText, redactSensitiveObject } = require('../lib/builtin.js')
const { xorshift32 } = require('../bench/xorshift32.js')

const SENSITIVE =
  /(?:api[_-]?key|apiKey|secret|password|passwd|pwd|private[_-]?key|privateKey|access[_-]?key|accessKey|accessToken|refreshToken|idToken|githubToken|authorization|auth[_-]?token|authToken|cookie|session|credential|bearer|^token$|[_-]token$|^token[_-])/i
const refIsSensitive = (n: string) => SENSITIVE.test(n)

function refRedact(text: string): string {
  if (!text) return text
  let r = text
  r = r.replace(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, '[redacted]')
  r = r.replace(/\b(Authorization\s*:\s*)(?:Bearer\s+)?[^\n\r,;}]+/gi, '$1[redacted]')
  r = r.replace(/\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi, 'Bearer [redacted]')
  r = r.replace(/(["']?)([A-Za-z_][A-Za-z0-9_.-]*)(\1?\s*[:=]\s*)(["'])([^]*?)\4/g, (m, q1, k, sep, q) =>
    refIsSensitive(k) ? `${q1}${k}${sep}${q}[redacted]${q}` : m,
  )
  r = r.replace(/(["']?)([A-Za-z_][A-Za-z0-9_.-]*)(\1?\s*[:=]\s*)([^"'\s,;}\]\n\r][^,;}\]\n\r]*)/g, (m, q1, k, sep, v) =>
    refIsSensitive(k) && !v.startsWith('[redacted') ? `${q1}${k}${sep}[redacted]` : m,
  )
  for (const re of [
    /\bsk-[A-Za-z0-9_-]{16,}\b/g,
    /\bgh[pousr]_[A-Za-z0-9_]{20,}\b/g,
    /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
    /\bAKIA[0-9A-Z]{16}\b/g,
    /\bxox[baprs]-[A-Za-z0-9-]{10,}\b/g,
  ]) {
    r = r.replace(re, '[redacted]')
  }
  return r
}

const FIXED = [
  'Authorization: Bearer abcdefghijklmnop, other=1',
  'password="my pass" token=abc def; x=1',
  '{"apiKey": "secret value", "name": "bob"}',
  'a=password=secret',
  'PWD=/home/x\nHOME=/h',
  'session_count=3, user=bob',
  "'api_key' : 'multi\nline' rest",
  '-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY----- tail',
  'curl -H "authorization: basic Zm9vOmJhcg==" https://x',
  'ghp_abcdefghijklmnopqrstuvwxyz0123 and github_pat_abcdefghijklmnopqrstuvwxyz AKIAABCDEFGHIJKLMNOP xoxp-1234567890abc',
  'éBearer abcdefghijk',
  'x-api-key: k1, cookie = a=b; c',
  'token\u00a0=\u2028value',
  '"secret\'=\'v\'',
  '',
]

// Alphabet biased towards the patterns' interesting characters.
const PIECES = [
  'password', 'token', 'api_key', 'Authorization', 'Bearer', 'sk-', 'ghp_', 'AKIA', 'xoxb-', 'session', 'name', 'x', 'é', '中',
  '=', ':', ' ', '  ', '\n', '\r', '\t', '\u00a0', '"', "'", ',', ';', '}', ']', '[redacted', 'abcdefghijklmnopqrstuvwxyz', '0123456789ABCDEF',
  '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----', '_', '-', '.',
]

function generated(seed: number, count: number): string[] {
  const rnd = xorshift32(seed)
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    let t = ''
    const n = 1 + Math.floor(rnd() * 14)
    for (let j = 0; j < n; j++) t += PIECES[Math.floor(rnd() * PIECES.length)]
    out.push(t)
  }
  return out
}

test('fixed cases match the reference', () => {
  for (const t of FIXED) expect([t, redactSensitiveText(t)]).toEqual([t, refRedact(t)])
})

test('contract examples', () => {
  expect(redactSensitiveText('Authorization: Bearer abcdefghijklmnop, other=1')).toBe('Authorization: [redacted], other=1')
  expect(redactSensitiveText('password="my pass" token=abc def; x=1')).toBe('password="[redacted]" token=[redacted]; x=1')
  expect(redactSensitiveText('{"apiKey": "secret value", "name": "bob"}')).toBe('{"apiKey": "[redacted]", "name": "bob"}')
})

test('5000 generated texts match the reference', () => {
  const mismatches: string[] = []
  let changed = 0
  for (const t of generated(0xc0ffee, 5000)) {
    const want = refRedact(t)
    if (want !== t) changed++
    if (redactSensitiveText(t) !== want) mismatches.push(JSON.stringify(t))
  }
  expect(mismatches).toEqual([])
  // The corpus exercises redaction, not only pass-through.
  expect(changed).toBeGreaterThan(500)
})

test('isSensitiveName', () => {
  for (const n of ['OPENAI_API_KEY', 'SESSION_ID', 'credentials', 'PWD', 'my_token', 'token', 'x-auth-token', 'Cookie']) {
    expect([n, isSensitiveName(n)]).toEqual([n, true])
  }
  for (const n of ['tokens', 'TOKENIZER', 'HOME', 'mytoken', 'name']) expect([n, isSensitiveName(n)]).toEqual([n, false])
  for (const t of generated(7, 2000)) expect([t, isSensitiveName(t)]).toEqual([t, refIsSensitive(t)])
})

test('redactSensitiveObject', () => {
  const d = new Date(0)
  class K {
    secret = 'x'
    visible = 'password=p'
  }
  const input = { apiKey: { nested: 1 }, list: ['token=abc', 2, { password: null }], d, n: 5, k: new K(), m: new Map([['a', 1]]) }
  const out = redactSensitiveObject(input)
  expect(out).toEqual({ apiKey: '[redacted]', list: ['token=[redacted]', 2, { password: '[redacted]' }], d, n: 5, k: { secret: '[redacted]', visible: 'password=[redacted]' }, m: {} })
  expect(out.d).toBe(d)
  expect(Object.getPrototypeOf(out.k)).toBe(Object.prototype)
  expect(input.list[0]).toBe('token=abc')
  expect(redactSensitiveObject('Bearer abcdefghij')).toBe('Bearer [redacted]')
  expect(redactSensitiveObject(null)).toBe(null)
})

test('redactSensitiveObject walks deep values without recursion and refuses a cycle with a clear error', () => {
  // 9,000 levels: the recursive walk it replaced overflowed the stack a few thousand levels down.
  let deep: Record<string, unknown> = { password: 'p' }
  for (let i = 0; i < 9000; i++) deep = { next: deep }
  let out = redactSensitiveObject(deep) as Record<string, unknown>
  for (let i = 0; i < 9000; i++) out = out.next as Record<string, unknown>
  expect(out).toEqual({ password: '[redacted]' })

  const cyclic: Record<string, unknown> = { token: 'abc' }
  cyclic.self = cyclic
  expect(() => redactSensitiveObject(cyclic)).toThrow(
    new RangeError('redactSensitiveObject: the value is nested more than 10000 levels deep or holds a circular reference'),
  )
})
