// Types of the binding's raw napi callbacks (src/js/fast.rs), which napi's generated
// binding.d.ts cannot see. The `#[napi]` exports are typed there; between the two files every
// function of the binding is declared (__test__/native-types.test.ts checks it, so a call added
// on the Rust side without a type fails CI).

// lib/native.js exports the generated binding itself, so its `#[napi]` exports are this module's too
// (what lets `tsc -p tsconfig.lib.json` check lib/'s calls into the addon).
export * from '../binding'

/**
 * An action of the runner machine as it crosses (crates/core/src/kernel/runner/wire.rs has the
 * layouts; lib/wire.js decodes them): `CallModel` as a number (kind in bits 0–4, turn above),
 * every other action, and a refused response (`[-1, message]`), as the text of a JSON array
 * whose first element is the kind's code.
 */
export type WireAction = number | string

/** The next action of run `id`; `aborted`: whether the run's signal has fired. `Done` frees the run. */
export declare function runNext(id: number, aborted: boolean): WireAction

/**
 * The model's answer to `CallModel`: `JSON.stringify(response.content)` (`null` when there is
 * none) and the usage counts. Returns the next action, or the refusal of a malformed answer.
 */
export declare function runRespond(id: number, contentJson: string | null, inputTokens: number, outputTokens: number, copied?: boolean): WireAction

/**
 * Call `index`'s outcome in a `ToolRound`. `isError`: 0 false, 1 true, 2 not set; the two
 * numbers are a delegated run's `metadata.tokenUsage`, when it reported one.
 */
export declare function runToolResult(
  id: number,
  index: number,
  content: string,
  isError: 0 | 1 | 2,
  inputTokens?: number,
  outputTokens?: number,
): undefined

/**
 * The outcomes of all of a `ToolRound`'s calls, in index order, in one call: for each, `code`
 * (`isError` as for `runToolResult`, plus 4 when a delegated run's two usage numbers follow the
 * content), then `content`, then those numbers when flagged.
 */
export declare function runToolResults(id: number, ...outcomes: Array<number | string>): undefined

/** A slot for an executor's semaphore of limit `max`, with one slot acquired; returns its id. */
export declare function semOpen(max: number): number

/** 0 = acquired now; otherwise the id of the waiter to park. */
export declare function semAcquire(id: number): number

/** The waiter id that now holds the slot; 0 = slot freed, others still hold; -1 = idle, and the semaphore's slot is closed. */
export declare function semRelease(id: number): number
