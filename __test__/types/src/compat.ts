// The kernel's types against the original's (original-1.7.0.ts): each pair must be assignable
// both ways, so code typed against @open-multi-agent/core and code typed against
// @oma-kernel/core can hand values to each other.
import { z } from 'zod'
import {
  Agent, AgentRunner, ToolExecutor, ToolRegistry, defineTool, fileReadTool, BUILT_IN_TOOLS,
} from '@oma-kernel/core'
import type * as K from '@oma-kernel/core'
import type * as O from './original-1.7.0'
import { defineTool as originalDefineTool } from './original-1.7.0'

type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Assert<T extends true> = T
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false

// The five the issue names.
export type MemoryStoreBothWays = Assert<Mutual<K.MemoryStore, O.MemoryStore>>
export type TeamInfoBothWays = Assert<Mutual<K.TeamInfo, O.TeamInfo>>
export type ToolUseContextBothWays = Assert<Mutual<K.ToolUseContext, O.ToolUseContext>>
export type ToolDefinitionBothWays = Assert<Mutual<K.ToolDefinition, O.ToolDefinition>>
export type ToolDefinitionOfInputBothWays = Assert<Mutual<K.ToolDefinition<{ a: number; b?: string }>, O.ToolDefinition<{ a: number; b?: string }>>>
export type ToolDefinitionOfAnyBothWays = Assert<Mutual<K.ToolDefinition<any>, O.ToolDefinition<any>>>
export type AgentConfigBothWays = Assert<Mutual<K.AgentConfig, O.AgentConfig>>

// And the rest of the shared surface.
export type MemoryEntryBothWays = Assert<Mutual<K.MemoryEntry, O.MemoryEntry>>
export type AgentInfoBothWays = Assert<Mutual<K.AgentInfo, O.AgentInfo>>
export type DelegationPoolViewBothWays = Assert<Mutual<K.DelegationPoolView, O.DelegationPoolView>>
export type ToolResultBothWays = Assert<Mutual<K.ToolResult, O.ToolResult>>
export type ContentBlockBothWays = Assert<Mutual<K.ContentBlock, O.ContentBlock>>
export type LLMMessageBothWays = Assert<Mutual<K.LLMMessage, O.LLMMessage>>
export type LLMResponseBothWays = Assert<Mutual<K.LLMResponse, O.LLMResponse>>
export type LLMToolDefBothWays = Assert<Mutual<K.LLMToolDef, O.LLMToolDef>>
export type LLMChatOptionsBothWays = Assert<Mutual<K.LLMChatOptions, O.LLMChatOptions>>
export type LLMStreamOptionsBothWays = Assert<Mutual<K.LLMStreamOptions, O.LLMStreamOptions>>
export type LLMAdapterBothWays = Assert<Mutual<K.LLMAdapter, O.LLMAdapter>>
export type StreamEventBothWays = Assert<Mutual<K.StreamEvent, O.StreamEvent>>
export type StreamEventTypeIsTheOriginals = Assert<Same<K.StreamEvent['type'], O.StreamEvent['type']>>
export type ContextStrategyBothWays = Assert<Mutual<K.ContextStrategy, O.ContextStrategy>>
export type LoopDetectionConfigBothWays = Assert<Mutual<K.LoopDetectionConfig, O.LoopDetectionConfig>>
export type AgentStateBothWays = Assert<Mutual<K.AgentState, O.AgentState>>
export type AgentRunResultBothWays = Assert<Mutual<K.AgentRunResult, O.AgentRunResult>>
export type BeforeRunHookContextBothWays = Assert<Mutual<K.BeforeRunHookContext, O.BeforeRunHookContext>>
export type SupportedProviderIsTheOriginals = Assert<Same<K.SupportedProvider, O.SupportedProvider>>
// A kernel-only type differs visibly (the check above would catch a drift).
// @ts-expect-error the kernel's text_delta event is not one of the original's events
export type TextDeltaIsNotAnOriginalEvent = Assert<Mutual<K.StreamEventWithDeltas, O.StreamEvent>>

// Values across the two: tools made by either defineTool go where the other expects them.
const schema = z.object({ city: z.string(), days: z.number().int().optional() })
const ours = defineTool({
  name: 'forecast',
  description: 'Forecast',
  inputSchema: schema,
  execute: async ({ city, days }) => ({ data: `${city}:${days ?? 1}` }),
})
const theirs = originalDefineTool({
  name: 'forecast2',
  description: 'Forecast',
  inputSchema: schema,
  execute: async ({ city }) => ({ data: city }),
})
export const oursAsOriginal: O.ToolDefinition<{ city: string; days?: number }> = ours
export const theirsAsOurs: K.ToolDefinition<{ city: string; days?: number }> = theirs
export const builtinAsOriginal: O.ToolDefinition<{ path: string; offset?: number; limit?: number }> = fileReadTool
export const builtinsAsOriginal: readonly O.ToolDefinition<any>[] = BUILT_IN_TOOLS

const registry = new ToolRegistry()
registry.register(ours)
registry.register(theirs)
export const listed: O.ToolDefinition<any>[] = registry.list()

// An adapter, a config and a context written against the original work with the kernel.
declare const originalAdapter: O.LLMAdapter
declare const originalConfig: O.AgentConfig
declare const originalContext: O.ToolUseContext
declare const originalTeam: O.TeamInfo
const agent = new Agent({ ...originalConfig, adapter: originalAdapter, customTools: [theirs] }, registry, new ToolExecutor(registry))
export const backToOriginal: O.AgentConfig = agent.config
export const runner = new AgentRunner(originalAdapter, registry, new ToolExecutor(registry), { model: 'm' })
export const viaOurs = ours.execute({ city: 'Bern' }, originalContext)
export const ctx: O.ToolUseContext = agent.buildToolContext()
export const team: K.TeamInfo = originalTeam
export const run: Promise<O.AgentRunResult> = agent.run('hi', { team: originalTeam })
