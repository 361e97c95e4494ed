// The original's structured-output example: outputSchema on the agent, result.structured.
import { z } from 'zod'
import { Agent, ToolRegistry, ToolExecutor } from '@oma-kernel/core'

const Review = z.object({
  verdict: z.enum(['approve', 'request-changes']),
  issues: z.array(z.object({ file: z.string(), line: z.number(), note: z.string() })),
})
type Review = z.infer<typeof Review>

export async function main(): Promise<void> {
  const registry = new ToolRegistry()
  const agent = new Agent({ name: 'reviewer', model: 'claude-sonnet-4-6', outputSchema: Review }, registry, new ToolExecutor(registry))
  const result = await agent.run('Review this diff: ...')
  if (result.success && result.structured !== undefined) {
    const review = result.structured as Review
    console.log(review.verdict, review.issues.length)
    // `structured` is unknown, as in the original.
    // @ts-expect-error needs a cast or a parse first
    console.log(result.structured.verdict)
  }
}
