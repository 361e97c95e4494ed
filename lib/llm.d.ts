// Types of lib/llm.js. The shared shapes (CONTRACT §1) are declared once, in index.d.ts.

import type {
  TextBlock, ReasoningBlock, ToolUseBlock, ToolResultBlock, ImageBlock, ContentBlock, LLMMessage, TokenUsage,
  LLMResponse, LLMToolDef, ThinkingConfig, LLMChatOptions, LLMStreamOptions, StreamEvent, LLMAdapter, SupportedProvider,
  EgressPolicy,
} from '../index'

export type {
  TextBlock, ReasoningBlock, ToolUseBlock, ToolResultBlock, ImageBlock, ContentBlock, LLMMessage, TokenUsage,
  LLMResponse, LLMToolDef, ThinkingConfig, LLMChatOptions, LLMStreamOptions, StreamEvent, LLMAdapter, SupportedProvider,
  EgressPolicy,
}

/** A native adapter object; its Rust handle is under `NATIVE_ADAPTER`. */
export declare class NativeAdapter implements LLMAdapter {
  readonly name: string
  readonly capabilities: { readonly echoesReasoning: 'never' | 'own-issued' | 'tool-use-only' }
  chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse>
  stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncGenerator<StreamEvent, void, undefined>
}

/** `Symbol.for('oma-kernel.native-adapter')`. */
export declare const NATIVE_ADAPTER: unique symbol

/**
 * Creates a native adapter; unknown provider → `Error('Unsupported LLM provider: <provider>')`.
 * With `egressPolicy` (upstream 1.16), the provider's endpoints are checked before the adapter
 * exists and every request it sends afterwards; a refusal or an invalid policy rejects with an
 * {@link EgressPolicyError}.
 */
export declare function createAdapter(
  provider: SupportedProvider,
  apiKey?: string,
  baseURL?: string,
  region?: string,
  egressPolicy?: EgressPolicy,
): Promise<NativeAdapter>
export declare function extractToolCallsFromText(text: string, knownToolNames: string[]): ToolUseBlock[]
export declare function repairToolArgs(raw: string): Record<string, unknown> | null
export declare function assertValidMessages(messages: unknown): void

// For lib/'s other modules (agent.js, runner.js, mcp.js), not the package entry: typed here
// because a require of './llm.js' resolves to this file.
/** `createAdapter`'s work, synchronously. */
export declare function newAdapter(provider: string, apiKey?: string, baseURL?: string, region?: string, egressPolicy?: unknown): NativeAdapter
/** Upstream's `normalizeEgressPolicy` (a frozen copy, or an `EgressPolicyError`). */
export declare function normalizeEgressPolicy(policy: unknown): EgressPolicy | undefined
/** The `EgressPolicyError` a request by `provider` to `url` gets under a normalised `policy`, or null. */
export declare function egressRefusal(policy: EgressPolicy, url: string, provider: string): Error | null
/** Upstream's refusal of a user's own adapter under a policy. */
export declare function unsupportedAdapterError(adapter: { name: unknown }): Error
/** `JSON.stringify(value)`, reused from `memo` while `value` is unchanged. */
export declare function memoJson(memo: { snap?: unknown; json?: string }, value: unknown): string
/** The runner's options JSON per run (only the LLMChatOptions fields). */
export declare function runOptionsJson(options: LLMChatOptions): string
/** A CancelHandle tripped by `signal`, and the function that unhooks it. */
export declare function linkSignal(signal: AbortSignal | null | undefined): [import('../binding').CancelHandle | undefined, () => void]
/** A rejection from the addon as an Error of this realm (the kernel's JSON errors decoded). */
export declare function fromNative(err: unknown): Error
/** An error as the kernel encodes it (its record, decoded), as an Error of this realm. */
export declare function errorFrom(data: ReturnType<typeof import('./generated/boundary').llm.error>): Error
