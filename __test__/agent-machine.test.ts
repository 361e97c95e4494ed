// The Agent machine's boundary (crates/core/src/kernel/agent.rs, src/js/agent.rs): the driver
// (lib/agent.js) reads and writes the machine only through the code generated from its layouts, a
// step crosses as the machine describes it, and a driver's mistake is a typed error, not a wrong
// run. The machine's rules are tested in Rust with scripted drivers (and the generated decoder
// against the Rust encoder: crates/core/tests/agent_words.rs); the behaviour through Agent is the
// agent*.test.ts suites.
import * as fs from 'fs'
import * as path from 'path'

const native = require('../lib/native.js')
const boundary = require('../lib/generated/boundary.js')
const { step: STEP, event: EVENT, setup: SETUP } = boundary.agent
const EV = EVENT.encode
const plain = SETUP.encode.run(false, false, false, false, boundary.agent.defaultRetries, false)
const schema = SETUP.encode.run(false, false, true, false, boundary.agent.defaultRetries, false)

describe('the Agent machine across the binding', () => {
  test('lib/agent.js reads and writes the machine only through the generated code', () => {
    const source = fs.readFileSync(path.join(__dirname, '..', 'lib', 'agent.js'), 'utf8')
    expect(source).not.toMatch(/boundary\.agent\.codes|\b(?:word|step)\s*&/)
    expect(source).toMatch(/STEP\.decode/)
  })

  test('statuses are the contract names, by code', () => {
    expect(boundary.agent.statuses).toEqual(['idle', 'running', 'completed', 'error'])
  })

  test('a plain run: Running + RunRunner, then Completed + Finish with the result to build', () => {
    const first = STEP.decode(native.agentStart(plain))
    expect(first).toMatchObject({ op: 'runRunner', status: 'running', reportOutput: false })
    const done = native.agentStep(first.word, EV.runnerDone(false, true, false, false), null)
    expect(typeof done).toBe('number')
    expect(STEP.decode(done)).toMatchObject({
      op: 'finish',
      status: 'completed',
      addUsage: true,
      build: true,
      success: true,
      loopDetected: true,
      failed: false,
      structured: false,
      merged: false,
      budgetExceeded: false,
    })
  })

  test('a structured run: the JSON to validate, then a retry carrying the feedback text', () => {
    const first = STEP.decode(native.agentStart(schema))
    expect(first.reportOutput).toBe(true)
    const [validate, json] = native.agentStep(first.word, EV.runnerDone(false, false, false, false), 'Sure: {"a": 1} ok')
    expect(json).toBe('{"a": 1}')
    expect(STEP.decode(validate).op).toBe('validate')
    const [retry, feedback] = native.agentStep(validate, EV.invalid(), 'Output validation failed:\n  - b: Required')
    expect(STEP.decode(retry)).toMatchObject({ op: 'runRunner', retry: true })
    expect(feedback).toBe(
      'Your previous response did not produce valid JSON matching the required schema.\n\nError: Output validation failed:\n  - b: Required\n\nPlease try again. Respond with ONLY valid JSON, no other text.',
    )
  })

  test('an event the machine did not ask for throws a driver error', () => {
    const first = native.agentStart(plain)
    expect(() => native.agentStep(first, EV.valid(), null)).toThrow(
      'oma-kernel: agent driver error: Valid reported while waiting in phase Runner',
    )
    expect(() => native.agentStep(0.5, EV.valid(), null)).toThrow('malformed machine word')
    expect(() => native.agentStep(native.agentStart(schema), EV.runnerDone(false, false, false, false), null)).toThrow('without its output')
  })
})
