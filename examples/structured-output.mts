// Structured output: give the agent a Zod `outputSchema`. The agent tells the model the JSON
// shape it wants, extracts the JSON from the answer and validates it with your schema; when that
// fails it sends the model the validation error and asks once more. `result.structured` holds
// the validated value.
//
// Runs on the embedded scripted model by default (whose first answer has an invalid e-mail, to
// show the retry); OPENAI_API_KEY, ANTHROPIC_API_KEY or OMA_BASE_URL switch to a real model.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor } from '@oma-kernel/core'
import { chooseModel } from './model.mjs'
import { lastUserText, type ChatRequest, type ScriptedReply } from './scripted-server.mjs'

const Contact = z.object({
  name: z.string(),
  email: z.string().email(),
  city: z.string(),
  topics: z.array(z.string()).min(1),
})
type Contact = z.infer<typeof Contact>

function scriptedModel(request: ChatRequest): ScriptedReply {
  const retry = lastUserText(request).startsWith('Your previous response did not produce valid JSON')
  const contact = { name: 'Ada Lovelace', email: retry ? 'ada@example.org' : 'ada at example.org', city: 'London', topics: ['analytical engine', 'notes on Bernoulli numbers'] }
  return { text: 'Here is the contact:\n```json\n' + JSON.stringify(contact, null, 2) + '\n```' }
}

const model = await chooseModel(scriptedModel)
console.log(`model: ${model.label}\n`)

const agent = new Agent(
  { name: 'extractor', ...model.config, systemPrompt: 'You extract contact details from text.', outputSchema: Contact, maxTurns: 2 },
  new ToolRegistry(),
  new ToolExecutor(new ToolRegistry()),
)
const result = await agent.run(
  'Extract the contact: "Ada Lovelace (ada@example.org) lives in London and writes about the analytical engine and her notes on Bernoulli numbers."',
)

// A failed first attempt shows in the messages: the agent's feedback, then the second answer.
const feedback = result.messages.find((m) => m.role === 'user' && m.content.some((b) => b.type === 'text' && b.text.startsWith('Your previous response')))
if (feedback) {
  const text = feedback.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  const error = /Error: ([^]*?)\n\nPlease try again/.exec(text)?.[1] ?? text
  console.log('first answer rejected; the agent sent the model this error and asked again:')
  for (const line of error.split('\n')) console.log(`  ${line}`)
}
console.log(`success: ${result.success}; attempts: ${feedback ? 2 : 1}`)
if (!result.success) {
  console.error(`no valid output: ${result.output}`)
  process.exitCode = 1
} else {
  const contact = result.structured as Contact
  console.log(`structured: ${JSON.stringify(contact)}`)
  console.log(`${contact.name} <${contact.email}>, ${contact.city}: ${contact.topics.join('; ')}`)
}
await model.close()
