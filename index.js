'use strict'
// @oma-kernel/core: the public entry. Everything re-exported here is a thin JS face over the
// native kernel (binding.js); see ARCHITECTURE.md for what runs where.
const { Agent } = require('./lib/agent.js')
const { AgentRunner, TOOL_PRESETS, AGENT_FRAMEWORK_DISALLOWED } = require('./lib/runner.js')
const { LoopDetector, estimateTokens } = require('./lib/loop.js')
const { buildStructuredOutputInstruction, extractJSON, validateOutput } = require('./lib/structured.js')
const { defineTool, ToolRegistry, ToolExecutor, Semaphore, truncateToolOutput, zodToJsonSchema } = require('./lib/tools.js')
const { TokenBudgetExceededError, InvalidMessageError, LLMCallTimeoutError, EgressPolicyError, isRetryableError } = require('./lib/errors.js')
const { generateRunId, emitTrace, defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME } = require('./lib/util.js')
const { createAdapter, NativeAdapter, extractToolCallsFromText, repairToolArgs, assertValidMessages } = require('./lib/llm.js')
// lib/builtin.js's exports by kind (the tools; the tool lists and path helpers; the redaction),
// each list on one line.
const builtin = require('./lib/builtin.js')
const { LocalShellExecutor, bashTool, fileReadTool, fileWriteTool, fileEditTool, grepTool, globTool, delegateToAgentTool } = builtin
const { BUILT_IN_TOOLS, ALL_BUILT_IN_TOOLS_WITH_DELEGATE, registerBuiltInTools, resolvePathWithinCwd, collectFiles, SKIP_DIRS, matchesGlob } = builtin
const { isSensitiveName, redactSensitiveText, redactSensitiveObject } = builtin
const { ConfinedShellExecutor } = require('./lib/confined-shell.js')

// One object literal of identifier shorthands only: Node's CommonJS export detection
// (cjs-module-lexer) then sees every name, so `import { X } from './index.js'` works too.
// index.mjs (the ESM entry) re-exports this same object; add a new name to both.

module.exports = {
  Agent,
  AgentRunner,
  TOOL_PRESETS,
  AGENT_FRAMEWORK_DISALLOWED,
  LoopDetector,
  buildStructuredOutputInstruction,
  extractJSON,
  validateOutput,
  Semaphore,
  defineTool,
  ToolRegistry,
  zodToJsonSchema,
  ToolExecutor,
  truncateToolOutput,
  TokenBudgetExceededError,
  InvalidMessageError,
  LLMCallTimeoutError,
  EgressPolicyError,
  isRetryableError,
  generateRunId,
  estimateTokens,
  emitTrace,
  defaultWorkspaceDir,
  DEFAULT_WORKSPACE_DIRNAME,
  createAdapter,
  NativeAdapter,
  extractToolCallsFromText,
  repairToolArgs,
  assertValidMessages,
  bashTool,
  fileReadTool,
  fileWriteTool,
  fileEditTool,
  grepTool,
  globTool,
  delegateToAgentTool,
  BUILT_IN_TOOLS,
  ALL_BUILT_IN_TOOLS_WITH_DELEGATE,
  registerBuiltInTools,
  resolvePathWithinCwd,
  collectFiles,
  SKIP_DIRS,
  matchesGlob,
  isSensitiveName,
  redactSensitiveText,
  redactSensitiveObject,
  LocalShellExecutor,
  ConfinedShellExecutor,
}
