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
