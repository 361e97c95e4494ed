// The Agent machine's boundary (crates/core/src/kernel/agent.rs, src/js/agent.rs): the codes the
// driver (lib/agent.js) reads exist in the binding, a step crosses as the machine describes it,
// and a driver's mistake is a typed error, not a wrong run. The machine's rules themselves are
// tested in Rust with scripted drivers; the behaviour through Agent is the agent*.test.ts suites.
import * as fs from 'fs'
import * as path from 'path'

const native = require('../lib/native.js')
const boundary = require('../lib/generated/boundary.js')
const codes: Record<string, number> = boundary.agent.codes

describe('the Agent machine across the binding', () => {
  test('every code lib/agent.js destructures is defined by the binding', () => {
    const source = fs.readFileSync(path.join(__dirname, '..', 'lib', 'agent.js'), 'utf8')
    const block = /const \{([^}]*)\} = boundary\.agent\.codes/.exec(source)
    expect(block).not.toBeNull()
    const names = block![1].split(',').map((n) => n.trim()).filter((n) => n !== '')
    expect(names.length).toBeGreaterThan(20)
    expect(names.filter((n) => typeof codes[n] !== 'number')).toEqual([])
  })

  test('statuses are the contract names, by code', () => {
    expect(boundary.agent.statuses).toEqual(['idle', 'running', 'completed', 'error'])
  })

  test('a plain run: Running + RunRunner, then Completed + Finish with the result to build', () => {
    const first = native.agentStart(codes.ENTRY_RUN | codes.SETUP_DEFAULT_RETRIES)
    expect(first & codes.ACTION_MASK).toBe(codes.RUN_RUNNER)
    expect((first & codes.STATUS_MASK) >>> codes.STATUS_SHIFT).toBe(1)
    expect(first & codes.REPORT_OUTPUT).toBe(0)
    const done = native.agentStep(first, codes.EV_RUNNER_DONE | codes.EV_LOOP_DETECTED, null)
    expect(typeof done).toBe('number')
    expect(done & codes.ACTION_MASK).toBe(codes.FINISH)
    expect((done & codes.STATUS_MASK) >>> codes.STATUS_SHIFT).toBe(2)
    for (const bit of ['ADD_USAGE', 'BUILD', 'SUCCESS', 'LOOP_DETECTED']) expect(done & codes[bit]).toBe(codes[bit])
    for (const bit of ['FAILED', 'STRUCTURED', 'MERGED', 'BUDGET_EXCEEDED']) expect(done & codes[bit]).toBe(0)
  })

  test('a structured run: the JSON to validate, then a retry carrying the feedback text', () => {
    const first = native.agentStart(codes.ENTRY_RUN | codes.SETUP_OUTPUT_SCHEMA | codes.SETUP_DEFAULT_RETRIES)
    expect(first & codes.REPORT_OUTPUT).toBe(codes.REPORT_OUTPUT)
    const validate = native.agentStep(first, codes.EV_RUNNER_DONE, 'Sure: {"a": 1} ok')
    expect(validate.text).toBe('{"a": 1}')
    expect(validate.step & codes.ACTION_MASK).toBe(codes.VALIDATE)
    const retry = native.agentStep(validate.step, codes.EV_INVALID, 'Output validation failed:\n  - b: Required')
    expect(retry.step & codes.ACTION_MASK).toBe(codes.RUN_RUNNER)
    expect(retry.step & codes.RETRY).toBe(codes.RETRY)
    expect(retry.text).toBe(
      'Your previous response did not produce valid JSON matching the required schema.\n\nError: Output validation failed:\n  - b: Required\n\nPlease try again. Respond with ONLY valid JSON, no other text.',
    )
  })

  test('an event the machine did not ask for throws a driver error', () => {
    const first = native.agentStart(codes.ENTRY_RUN | codes.SETUP_DEFAULT_RETRIES)
    expect(() => native.agentStep(first, codes.EV_VALID, null)).toThrow(
      'oma-kernel: agent driver error: Valid reported while waiting in phase Runner',
    )
    expect(() => native.agentStep(0.5, codes.EV_VALID, null)).toThrow('malformed machine word')
    const schema = native.agentStart(codes.ENTRY_RUN | codes.SETUP_OUTPUT_SCHEMA | codes.SETUP_DEFAULT_RETRIES)
    expect(() => native.agentStep(schema, codes.EV_RUNNER_DONE, null)).toThrow('without its output')
  })
})
