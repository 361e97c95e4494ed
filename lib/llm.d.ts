// Types of lib/llm.js. The content-block and message shapes are CONTRACT §1; index.d.ts may
// re-export these or declare its own identical ones.

export interface TextBlock { readonly type: 'text'; readonly text: string }
export interface ReasoningBlock {
  readonly type: 'reasoning'
  readonly text: string
  readonly signature?: string
  readonly redactedData?: string
  readonly provenance?: string
}
export interface ToolUseBlock {
  readonly type: 'tool_use'
  readonly id: string
  readonly name: string
  readonly input: Record<string, unknown>
  readonly signature?: string
}
export interface ToolResultBlock {
  readonly type: 'tool_result'
  readonly tool_use_id: string
  readonly content: string
  readonly is_error?: boolean
}
export interface ImageBlock {
  readonly type: 'image'
  readonly source: { readonly type: 'base64'; readonly media_type: string; readonly data: string }
}
export type ContentBlock = TextBlock | ReasoningBlock | ToolUseBlock | ToolResultBlock | ImageBlock
export interface LLMMessage { readonly role: 'user' | 'assistant'; readonly content: ContentBlock[] }
export interface TokenUsage { readonly input_tokens: number; readonly output_tokens: number }
export interface LLMResponse {
  readonly id: string
  readonly content: ContentBlock[]
  readonly model: string
  readonly stop_reason: string
  readonly usage: TokenUsage
}
export interface LLMToolDef { readonly name: string; readonly description: string; readonly inputSchema: Record<string, unknown> }
export interface ThinkingConfig { readonly enabled: boolean; readonly budgetTokens?: number; readonly effort?: 'low' | 'medium' | 'high' }
export interface LLMChatOptions {
  readonly model: string
  readonly tools?: readonly LLMToolDef[]
  readonly maxTokens?: number
  readonly temperature?: number
  readonly topP?: number
  readonly topK?: number
  readonly minP?: number
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly parallelToolCalls?: boolean
  readonly extraBody?: Record<string, unknown>
  readonly thinking?: ThinkingConfig
  readonly preserveReasoningAsText?: boolean
  readonly compressReasoningText?: boolean | { readonly minChars?: number }
  readonly systemPrompt?: string
  readonly abortSignal?: AbortSignal
}
export type LLMStreamOptions = LLMChatOptions
export interface StreamEvent {
  readonly type: 'text' | 'reasoning' | 'tool_use' | 'tool_result' | 'loop_detected' | 'budget_exceeded' | 'done' | 'error'
  readonly data: unknown
}
export interface LLMAdapter {
  readonly name: string
  readonly capabilities?: { readonly echoesReasoning: 'never' | 'own-issued' | 'tool-use-only' }
  chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse>
  stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncIterable<StreamEvent>
}
export type SupportedProvider =
  | 'anthropic' | 'azure-openai' | 'bedrock' | 'copilot' | 'deepseek' | 'doubao' | 'grok'
  | 'hunyuan' | 'minimax' | 'mimo' | 'openai' | 'gemini' | 'qiniu'

/** A native adapter object; its Rust handle is under `NATIVE_ADAPTER`. */
export declare class NativeAdapter implements LLMAdapter {
  readonly name: string
  readonly capabilities: { readonly echoesReasoning: 'never' | 'own-issued' | 'tool-use-only' }
  chat(messages: LLMMessage[], options: LLMChatOptions): Promise<LLMResponse>
  stream(messages: LLMMessage[], options: LLMStreamOptions): AsyncGenerator<StreamEvent, void, undefined>
}

/** `Symbol.for('oma-kernel.native-adapter')`. */
export declare const NATIVE_ADAPTER: unique symbol

/** `Symbol.for('oma-kernel.response-json')`: a native `chat` response's JSON text (non-enumerable). */
export declare const RESPONSE_JSON: unique symbol

/** Creates a native adapter; unknown provider → `Error('Unsupported LLM provider: <provider>')`. */
export declare function createAdapter(provider: SupportedProvider, apiKey?: string, baseURL?: string, region?: string): Promise<LLMAdapter>
export declare function extractToolCallsFromText(text: string, knownToolNames: string[]): ToolUseBlock[]
export declare function repairToolArgs(raw: string): Record<string, unknown> | null
export declare function assertValidMessages(messages: unknown): void
