// @oma-kernel/core: the ESM entry. It loads the CommonJS entry (index.js) through Node's own
// require, so `import` and `require` share one module instance: the same classes (instanceof
// works across both), the same tool objects, one copy of the native addon. Every name of
// index.js is listed here; __test__/esm.test.ts fails when the two lists differ.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const core = require('./index.js')

export const {
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
} = core

// `import core from '@oma-kernel/core'` keeps working as it did when the package was CJS-only.
export default core
