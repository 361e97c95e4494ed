import { extractToolCallsFromText, repairToolArgs } from '../lib/llm'

describe('extractToolCallsFromText (§16.1)', () => {
  test('Hermes tags take precedence over bare JSON', () => {
    const out = extractToolCallsFromText('<tool_call>{"name":"a","arguments":{"x":1}}</tool_call> {"name":"b","arguments":{}}', ['a', 'b'])
    expect(out).toHaveLength(1)
    expect(out[0]).toMatchObject({ type: 'tool_use', name: 'a', input: { x: 1 } })
    expect(out[0].id).toMatch(/^extracted_call_\d+_\d+$/)
  })

  test('fenced JSON, the function wrapper and string arguments', () => {
    const text = 'Plan:\n```json\n{"type":"function","function":{"name":"grep","arguments":"{\\"pattern\\":\\"TODO\\"}"}}\n```\nDone.'
    expect(extractToolCallsFromText(text, ['grep'])).toMatchObject([{ name: 'grep', input: { pattern: 'TODO' } }])
  })

  test('the whitelist, empty names and non-object arguments', () => {
    expect(extractToolCallsFromText('{"name":"rm","arguments":{}}', ['ls'])).toEqual([])
    expect(extractToolCallsFromText('{"name":"","arguments":{}}', [])).toEqual([])
    expect(extractToolCallsFromText('{"name":"ls","parameters":[1,2]}', [])).toMatchObject([{ name: 'ls', input: {} }])
    expect(extractToolCallsFromText('', ['x'])).toEqual([])
  })

  test('§21 fix: an unmatched quote in prose does not hide later calls', () => {
    const text = 'The file is called "notes.txt and I will read it: {"name":"file_read","arguments":{"path":"notes.txt"}}'
    expect(extractToolCallsFromText(text, ['file_read'])).toMatchObject([{ name: 'file_read', input: { path: 'notes.txt' } }])
  })

  test('unbalanced braces: a call after them is still found, in linear time (issue 13)', () => {
    // Each took 11–15 s when every `{` started a scan to the end of the text.
    const call = '{"name":"a","arguments":{"q":1}}'
    expect(extractToolCallsFromText('{"a":'.repeat(16_000), ['a'])).toEqual([])
    expect(extractToolCallsFromText('{'.repeat(40_000), ['a'])).toEqual([])
    expect(extractToolCallsFromText('{"a":'.repeat(16_000) + call, ['a'])).toMatchObject([{ name: 'a', input: { q: 1 } }])
    // (Inside a balanced candidate that does not parse, it is skipped with it, as always.)
    expect(extractToolCallsFromText('{'.repeat(40_000) + call + '}'.repeat(10), ['a'])).toEqual([])
    // Quotes and escapes that start strings at different places for different starts.
    expect(extractToolCallsFromText('{"{\\"'.repeat(20_000) + ` ${call}`, ['a'])).toMatchObject([{ name: 'a', input: { q: 1 } }])
  })

  test('ids count up process-wide', () => {
    const a = extractToolCallsFromText('{"name":"x"}', [])[0].id
    const b = extractToolCallsFromText('{"name":"x"}', [])[0].id
    const n = (id: string) => Number(id.split('_').pop())
    expect(n(b)).toBe(n(a) + 1)
  })
})

describe('repairToolArgs (§16.2)', () => {
  test('one key with a string value', () => {
    expect(repairToolArgs('{"command": "ls -la"}')).toEqual({ command: 'ls -la' })
    expect(repairToolArgs('  {"code": """print("hi")"""}  ')).toEqual({ code: 'print("hi")' })
    expect(repairToolArgs("{\"code\": '''x = 1'''}")).toEqual({ code: 'x = 1' })
    expect(repairToolArgs('{"path": "C:\\\\dir\\\\\\"q\\""}')).toEqual({ path: 'C:\\dir\\"q"' })
    expect(repairToolArgs('{"n": 42}')).toEqual({ n: '42' })
    expect(repairToolArgs('not json')).toBeNull()
    expect(repairToolArgs('{"a": 1')).toBeNull()
  })
})
