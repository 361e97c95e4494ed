// The Agent machine's protocol, JS half (lib/agent.js): an event answers a step only when its
// kind is one the step takes (lib/generated/boundary.d.ts, rendered from agent::wire::EVENT's
// `answers` in crates/core/src/kernel/agent.rs), and the driver reports only what `answer`
// returns. A wrong answer does not compile; the binding refuses it at run time all the same.
import { agent } from '../../../lib/generated/boundary.js'

const { decode } = agent.step
const { answer, encode } = agent.event
declare const word: number
declare function report(event: ReturnType<typeof answer>): void

const step = decode(word)
if (step.op === 'validate') {
  report(answer(step, encode.valid()))
  report(answer(step, encode.invalid()))
  // @ts-expect-error: a validation is answered with its verdict, not the hook's return
  report(answer(step, encode.hookReturned(true, true)))
  // @ts-expect-error: validating calls nothing that throws
  report(answer(step, encode.threw(false)))
}
if (step.op === 'beforeRun') {
  report(answer(step, encode.hookReturned(false, true)))
  report(answer(step, encode.threw(true)))
  // @ts-expect-error: the runner is not running yet
  report(answer(step, encode.runnerDone(false, false, false, false)))
}
if (step.op === 'runRunner' || step.op === 'passError') {
  report(answer(step, encode.runnerDone(true, false, false, false)))
  report(answer(step, encode.runnerError()))
  // @ts-expect-error: afterRun is not awaited while the runner runs
  report(answer(step, encode.afterRunReturned()))
}
if (step.op === 'finish') {
  // A result being built may still throw.
  report(answer(step, encode.threw(false)))
  // @ts-expect-error: a finished run traces nothing more
  report(answer(step, encode.traceEmitted()))
}
// A step of any kind: no event answers every kind.
// @ts-expect-error: the step's kind is not known
report(answer(step, encode.threw(false)))
// An event not paired with its step is not reported.
// @ts-expect-error: a bare event
report(encode.valid())
