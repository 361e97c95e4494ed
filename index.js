'use strict'
// @oma-kernel/core: the public entry. Everything re-exported here is a thin JS face over the
// native kernel (binding.js); see ARCHITECTURE.md for what runs where.
const { Agent } = require('./lib/agent.js')
const { AgentRunner, TOOL_PRESETS, AGENT_FRAMEWORK_DISALLOWED } = require('./lib/runner.js')
const { LoopDetector, estimateTokens } = require('./lib/loop.js')
const { buildStructuredOutputInstruction, extractJSON, validateOutput } = require('./lib/structured.js')
const { defineTool, ToolRegistry, ToolExecutor, Semaphore, truncateToolOutput, zodToJsonSchema } = require('./lib/tools.js')
const { TokenBudgetExceededError, InvalidMessageError } = require('./lib/errors.js')
const { generateRunId, emitTrace, defaultWorkspaceDir, DEFAULT_WORKSPACE_DIRNAME } = require('./lib/util.js')
const { createAdapter, NativeAdapter, extractToolCallsFromText, repairToolArgs, assertValidMessages } = require('./lib/llm.js')
const builtin = require('./lib/builtin.js')

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
  bashTool: builtin.bashTool,
  fileReadTool: builtin.fileReadTool,
  fileWriteTool: builtin.fileWriteTool,
  fileEditTool: builtin.fileEditTool,
  grepTool: builtin.grepTool,
  globTool: builtin.globTool,
  delegateToAgentTool: builtin.delegateToAgentTool,
  BUILT_IN_TOOLS: builtin.BUILT_IN_TOOLS,
  ALL_BUILT_IN_TOOLS_WITH_DELEGATE: builtin.ALL_BUILT_IN_TOOLS_WITH_DELEGATE,
  registerBuiltInTools: builtin.registerBuiltInTools,
  resolvePathWithinCwd: builtin.resolvePathWithinCwd,
  collectFiles: builtin.collectFiles,
  SKIP_DIRS: builtin.SKIP_DIRS,
  matchesGlob: builtin.matchesGlob,
  isSensitiveName: builtin.isSensitiveName,
  redactSensitiveText: builtin.redactSensitiveText,
  redactSensitiveObject: builtin.redactSensitiveObject,
}
