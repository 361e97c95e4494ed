// Single agent: one `run()` for a one-shot question, then a multi-turn conversation with
// `prompt()`, whose history the agent keeps between calls. No tools.
//
// Runs on the embedded scripted model by default; OPENAI_API_KEY, ANTHROPIC_API_KEY or
// OMA_BASE_URL (a local Ollama) switch to a real one (see model.mts).
import { Agent, ToolRegistry, ToolExecutor } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import { lastUserText, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

function scriptedModel(request: ChatRequest): ScriptedReply {
  const q = lastUserText(request).toLowerCase()
  if (q.includes('generic constraint')) {
    return { text: 'A generic constraint limits which types a type parameter accepts, as in <T extends { length: number }>. Inside the function you may then use what the constraint guarantees, such as value.length.' }
  }
  if (q.includes('type guard')) {
    return { text: 'A type guard is a check that narrows a type inside a branch, such as typeof x === "string" or a function returning `x is Fish`.' }
  }
  if (q.includes('example')) {
    // The history arrives with the request: the previous turn is what "what you just described" means.
    const earlier = request.messages.some((m) => m.role === 'assistant' && m.text.includes('type guard'))
    return { text: earlier ? 'function isFish(p: Fish | Bird): p is Fish { return "swim" in p }' : 'An example of what?' }
  }
  return { text: 'I can only talk about TypeScript.' }
}

const model = await chooseModel(scriptedModel)
console.log(`model: ${model.label}\n`)
const registry = new ToolRegistry()
const executor = new ToolExecutor(registry)

// Part 1: run(): a one-shot task.
const explainer = new Agent(
  { name: 'explainer', ...model.config, systemPrompt: 'You are a concise technical writer. Keep explanations brief.', maxTurns: 3 },
  registry,
  executor,
)
const result = await explainer.run('In two sentences, explain what a TypeScript generic constraint is.')
if (!result.success) {
  console.error('Agent failed:', result.output)
  process.exit(1)
}
console.log('run():')
console.log(`  ${result.output}`)
console.log(`  tokens: ${result.tokenUsage.input_tokens} input, ${result.tokenUsage.output_tokens} output; tool calls: ${result.toolCalls.length}`)

// Part 2: prompt(): a conversation; each call sees the earlier turns.
const tutor = new Agent(
  {
    name: 'tutor',
    ...model.config,
    systemPrompt: 'You are a TypeScript tutor. Give short, direct answers.',
    maxTurns: 2,
    contextStrategy: { type: 'sliding-window', maxTurns: 4 },
  },
  new ToolRegistry(),
  new ToolExecutor(new ToolRegistry()),
)
const turn1 = await tutor.prompt('What is a type guard in TypeScript?')
const turn2 = await tutor.prompt('Give me one concrete code example of what you just described.')
console.log('\nprompt():')
console.log(`  turn 1: ${turn1.output}`)
console.log(`  turn 2: ${turn2.output}`)
console.log(`  history: ${tutor.getHistory().length} messages; state: ${tutor.getState().status}`)

await model.close()
