'use strict'
// Agent (§4): history, lifecycle state, hooks, timeout and structured output around the
// runner. Everything here is user-facing glue; the loop itself is the kernel's.
const { AgentRunner, coreOptionsJson, validateOptions } = require('./runner.js')
const { newAdapter } = require('./llm.js')
const { buildStructuredOutputInstruction, extractJSON, validateOutput } = require('./structured.js')
const { emitTrace, generateRunId, defaultWorkspaceDir } = require('./util.js')
const { toError, isError, safeString } = require('./errors.js')

function textOfLastUser(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      return { index: i, text: messages[i].content.filter((b) => b.type === 'text').map((b) => b.text).join('') }
    }
  }
  return { index: -1, text: '' }
}

function toResult(r, success, structured) {
  const out = { success, output: r.output, messages: r.messages, tokenUsage: r.tokenUsage, toolCalls: r.toolCalls, structured }
  if (r.loopDetected) out.loopDetected = true
  if (r.budgetExceeded) out.budgetExceeded = true
  if (r.aborted) out.aborted = true
  return out
}

function noop() {}

/** One signal for the run: the caller's, a per-call timeout, or both merged (§4.3). `dispose`
 *  unhooks the merge once the run is over: a caller's long-lived signal would otherwise keep
 *  one listener (and its controller) per run that used it. */
function runSignal(callerSignal, timeoutMs) {
  if (!(timeoutMs > 0)) return { signal: callerSignal, timeout: undefined, dispose: noop }
  const timeout = AbortSignal.timeout(timeoutMs)
  if (!callerSignal) return { signal: timeout, timeout, dispose: noop }
  const ctl = new AbortController()
  if (callerSignal.aborted || timeout.aborted) {
    ctl.abort()
    return { signal: ctl.signal, timeout, dispose: noop }
  }
  const fire = () => ctl.abort()
  callerSignal.addEventListener('abort', fire, { once: true })
  timeout.addEventListener('abort', fire, { once: true })
  const dispose = () => {
    callerSignal.removeEventListener('abort', fire)
    timeout.removeEventListener('abort', fire)
  }
  return { signal: ctl.signal, timeout, dispose }
}

const ctorOptionsMemo = {}

class Agent {
  constructor(config, toolRegistry, toolExecutor) {
    this.name = config.name
    this.config = config
    this.toolRegistry = toolRegistry
    this.toolExecutor = toolExecutor
    this.runner = null
    this.messageHistory = []
    this.state = { status: 'idle', messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } }
    // Bad configuration is reported here rather than on the first run.
    const err = validateOptions(coreOptionsJson({
      maxTurns: config.maxTurns,
      toolPreset: config.toolPreset,
      allowedTools: config.tools,
      disallowedTools: config.disallowedTools,
    }, ctorOptionsMemo))
    if (err) throw new Error(err)
  }

  getState() {
    return { ...this.state, messages: [...this.state.messages] }
  }
  getHistory() {
    return [...this.messageHistory]
  }
  reset() {
    this.messageHistory = []
    this.state = { status: 'idle', messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 } }
  }
  addTool(tool) {
    this.toolRegistry.register(tool, { runtimeAdded: true })
  }
  removeTool(name) {
    this.toolRegistry.deregister(name)
  }
  getTools() {
    return this.toolRegistry.list().map((t) => t.name)
  }
  buildToolContext(abortSignal) {
    const sp = this.config.systemPrompt
    return {
      agent: { name: this.name, role: sp === undefined ? 'assistant' : sp.slice(0, 60), model: this.config.model },
      abortSignal,
      cwd: this.config.cwd === undefined ? defaultWorkspaceDir() : this.config.cwd,
    }
  }

  async run(prompt, runOptions) {
    const r = await this._executeRun([{ role: 'user', content: [{ type: 'text', text: prompt }] }], runOptions ?? {})
    return r.result
  }

  async prompt(message) {
    const userMessage = { role: 'user', content: [{ type: 'text', text: message }] }
    const history = this.messageHistory
    history.push(userMessage)
    const { result, failed } = await this._executeRun([...history], {})
    try {
      for (const msg of result.messages) this.messageHistory.push(msg)
    } catch (e) {
      restore(history, userMessage)
      throw e
    }
    // §21: a failed prompt() leaves the history as it was.
    if (failed) restore(history, userMessage)
    return result
  }

  async *stream(prompt, runOptions) {
    const messages = [{ role: 'user', content: [{ type: 'text', text: prompt }] }]
    this._start()
    let dispose = noop
    try {
      // The hook is awaited only when there is one (each await of an async call is several
      // microtask hops). The runner is always awaited: the model is never called before run()
      // has returned its promise, as in the original.
      const outgoing = this.config.beforeRun ? await this._beforeRun(messages) : messages
      const runner = await (this.runner ?? this._getRunner())
      const { signal, timeout, dispose: unhook } = runSignal((runOptions ?? {}).abortSignal, this.config.timeoutMs)
      dispose = unhook
      const options = { ...runOptions }
      if (signal !== undefined) options.abortSignal = signal
      for await (const event of runner.stream(outgoing, options)) {
        if (event.type === 'done') {
          const data = event.data
          this._addUsage(data.tokenUsage)
          let r = toResult(data, !data.budgetExceeded)
          if (timeout?.aborted) r.timedOut = true
          if (this.config.afterRun) r = await this.config.afterRun(r)
          this.state = { ...this.state, status: 'completed' }
          yield { type: 'done', data: r }
        } else if (event.type === 'error') {
          this.state = { ...this.state, status: 'error', error: toError(event.data) }
          yield event
        } else {
          yield event
        }
      }
    } catch (err) {
      const error = toError(err)
      this.state = { ...this.state, status: 'error', error }
      yield { type: 'error', data: error }
    } finally {
      dispose()
    }
  }

  _start() {
    // §21: a new run clears a stale error.
    const { error: _stale, ...rest } = this.state
    this.state = { ...rest, status: 'running' }
  }

  _addUsage(u) {
    const t = this.state.tokenUsage
    this.state.tokenUsage = { input_tokens: t.input_tokens + u.input_tokens, output_tokens: t.output_tokens + u.output_tokens }
  }

  async _beforeRun(messages) {
    const hook = this.config.beforeRun
    if (!hook) return messages
    const { index, text } = textOfLastUser(messages)
    const { beforeRun: _b, afterRun: _a, ...agent } = this.config
    const returned = await hook({ prompt: text, agent })
    if (returned.prompt !== text && index >= 0) {
      const out = messages.slice()
      const old = out[index]
      out[index] = { role: 'user', content: [{ type: 'text', text: returned.prompt }, ...old.content.filter((b) => b.type !== 'text')] }
      return out
    }
    return messages
  }

  /** Creates the runner on the first run (callers use `this.runner` when it is set, and await
   *  either: a bad provider rejects the run). */
  _getRunner() {
    const c = this.config
    let adapter = c.adapter
    if (!adapter) {
      adapter = newAdapter(c.provider ?? 'anthropic', c.apiKey, c.baseURL, c.region)
    }
    this.runner = this._newRunner(adapter)
    return this.runner
  }

  _newRunner(adapter) {
    const c = this.config
    let systemPrompt = c.systemPrompt
    if (c.outputSchema) {
      const instruction = buildStructuredOutputInstruction(c.outputSchema)
      systemPrompt = typeof c.systemPrompt === 'string' && c.systemPrompt !== '' ? c.systemPrompt + '\n' + instruction : instruction
    }
    return new AgentRunner(adapter, this.toolRegistry, this.toolExecutor, {
      model: c.model,
      systemPrompt,
      maxTurns: c.maxTurns,
      maxTokens: c.maxTokens,
      temperature: c.temperature,
      topP: c.topP,
      topK: c.topK,
      minP: c.minP,
      parallelToolCalls: c.parallelToolCalls,
      frequencyPenalty: c.frequencyPenalty,
      presencePenalty: c.presencePenalty,
      extraBody: c.extraBody,
      thinking: c.thinking,
      toolPreset: c.toolPreset,
      allowedTools: c.tools,
      disallowedTools: c.disallowedTools,
      agentName: this.name,
      agentRole: c.systemPrompt === undefined ? 'assistant' : c.systemPrompt.slice(0, 50),
      cwd: c.cwd,
      loopDetection: c.loopDetection,
      maxTokenBudget: c.maxTokenBudget,
      contextStrategy: c.contextStrategy,
      compressToolResults: c.compressToolResults,
      preserveReasoningAsText: c.preserveReasoningAsText,
      compressReasoningText: c.compressReasoningText,
    })
  }

  async _executeRun(messages, callerOptions) {
    this._start()
    const startMs = Date.now()
    let timeout
    let dispose = noop
    try {
      // The hook is awaited only when there is one (each await of an async call is several
      // microtask hops). The runner is always awaited: the model is never called before run()
      // has returned its promise, as in the original.
      const outgoing = this.config.beforeRun ? await this._beforeRun(messages) : messages
      const runner = await (this.runner ?? this._getRunner())
      const options = { ...callerOptions }
      options.onMessage = (msg) => {
        this.state.messages.push(msg)
        if (callerOptions.onMessage) callerOptions.onMessage(msg)
      }
      if (callerOptions.onTrace && !callerOptions.runId) options.runId = generateRunId()
      const merged = runSignal(callerOptions.abortSignal, this.config.timeoutMs)
      timeout = merged.timeout
      dispose = merged.dispose
      if (merged.signal !== undefined) options.abortSignal = merged.signal

      const result = await runner.run(outgoing, options)
      this._addUsage(result.tokenUsage)
      let r
      if (result.budgetExceeded) {
        r = toResult(result, false)
      } else if (this.config.outputSchema) {
        r = await this._structured(runner, outgoing, result, options)
        this.state = { ...this.state, status: 'completed' }
      } else {
        r = toResult(result, true)
      }
      if (timeout?.aborted) r.timedOut = true
      if (this.config.afterRun) r = await this.config.afterRun(r)
      this.state = { ...this.state, status: 'completed' }
      this._agentTrace(callerOptions, r, startMs)
      return { result: r, failed: false }
    } catch (err) {
      const error = toError(err)
      this.state = { ...this.state, status: 'error', error }
      const r = { success: false, output: messageOf(error), messages: [], tokenUsage: { input_tokens: 0, output_tokens: 0 }, toolCalls: [], structured: undefined }
      if (timeout?.aborted) {
        r.aborted = true
        r.timedOut = true
      }
      try {
        this._agentTrace(callerOptions, r, startMs)
      } catch {
        // The failed result is returned whatever the trace does.
      }
      return { result: r, failed: true }
    } finally {
      dispose()
    }
  }

  async _structured(runner, outgoing, first, options) {
    const schema = this.config.outputSchema
    try {
      const structured = validateOutput(schema, extractJSON(first.output))
      const r = { success: true, output: first.output, messages: first.messages, tokenUsage: first.tokenUsage, toolCalls: first.toolCalls, structured }
      if (first.loopDetected) r.loopDetected = true
      if (first.aborted) r.aborted = true
      return r
    } catch (e) {
      const message = isError(e) ? messageOf(e) : safeString(e)
      const feedback = {
        role: 'user',
        content: [{
          type: 'text',
          text: [
            'Your previous response did not produce valid JSON matching the required schema.',
            '',
            `Error: ${message}`,
            '',
            'Please try again. Respond with ONLY valid JSON, no other text.',
          ].join('\n'),
        }],
      }
      const retry = await runner.run([...outgoing, ...first.messages, feedback], options)
      this._addUsage(retry.tokenUsage)
      const merged = {
        output: retry.output,
        messages: [...first.messages, feedback, ...retry.messages],
        tokenUsage: {
          input_tokens: first.tokenUsage.input_tokens + retry.tokenUsage.input_tokens,
          output_tokens: first.tokenUsage.output_tokens + retry.tokenUsage.output_tokens,
        },
        toolCalls: [...first.toolCalls, ...retry.toolCalls],
      }
      let r
      try {
        const structured = validateOutput(schema, extractJSON(retry.output))
        r = { success: true, ...merged, structured }
      } catch {
        r = { success: false, ...merged, structured: undefined }
      }
      if (retry.budgetExceeded) r.budgetExceeded = true
      if (retry.aborted) r.aborted = true
      return r
    }
  }

  _agentTrace(callerOptions, r, startMs) {
    if (!callerOptions.onTrace) return
    const endMs = Date.now()
    emitTrace(callerOptions.onTrace, {
      type: 'agent',
      runId: callerOptions.runId ?? '',
      taskId: callerOptions.taskId,
      agent: callerOptions.traceAgent ?? this.name,
      turns: r.messages.filter((m) => m.role === 'assistant').length,
      tokens: r.tokenUsage,
      toolCalls: r.toolCalls.length,
      startMs,
      endMs,
      durationMs: endMs - startMs,
    })
  }
}

/** A failed run's output: the error's message as text, whatever the thrower put there (a
 *  Symbol, a throwing getter); the run's result is returned in every case. */
function messageOf(error) {
  try {
    const m = error.message
    return typeof m === 'string' ? m : safeString(m)
  } catch {
    return safeString(error)
  }
}

function restore(history, userMessage) {
  const i = history.lastIndexOf(userMessage)
  if (i >= 0) history.splice(i)
}

module.exports = { Agent }
