// A MemoryStore written the original's way: get / set / setWithExpiry / list / delete / clear.
import type { MemoryEntry, MemoryStore, TeamInfo, ToolUseContext } from '@oma-kernel/core'

class MapStore implements MemoryStore {
  private readonly entries = new Map<string, MemoryEntry>()
  async get(key: string): Promise<MemoryEntry | null> { return this.entries.get(key) ?? null }
  async set(key: string, value: string, metadata?: Record<string, unknown>): Promise<void> {
    this.entries.set(key, { key, value, metadata, createdAt: new Date() })
  }
  async setWithExpiry(key: string, value: string, expiresAtTurn: number, metadata?: Record<string, unknown>): Promise<void> {
    this.entries.set(key, { key, value, metadata, createdAt: new Date(), expiresAtTurn })
  }
  async list(): Promise<MemoryEntry[]> { return [...this.entries.values()] }
  async delete(key: string): Promise<void> { this.entries.delete(key) }
  async clear(): Promise<void> { this.entries.clear() }
}

export const team: TeamInfo = { name: 't', agents: ['a', 'b'], sharedMemory: new MapStore(), delegationDepth: 0, delegationPool: { availableRunSlots: 2 } }
export const context: ToolUseContext = { agent: { name: 'a', role: 'r', model: 'm' }, team, cwd: null, abortSignal: new AbortController().signal }

// @ts-expect-error a store needs get / list / delete / clear, not only set
export const setOnly: MemoryStore = { set: async () => {} }
