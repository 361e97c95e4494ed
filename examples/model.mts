// Which model the examples talk to. By default an embedded scripted server on 127.0.0.1 (no key,
// no network); a real one when the environment says so:
//
//   OMA_BASE_URL=http://localhost:11434/v1 OMA_MODEL=qwen2.5   a local Ollama / vLLM / LM Studio
//                                                              (OpenAI-compatible; OMA_API_KEY if it wants one)
//   OPENAI_API_KEY=sk-…       OpenAI (OMA_MODEL, default gpt-4o-mini; OPENAI_BASE_URL honoured)
//   ANTHROPIC_API_KEY=sk-…    Anthropic (OMA_MODEL, default claude-sonnet-4-6; ANTHROPIC_BASE_URL honoured)
//   OMA_SCRIPTED=1            the scripted server even when one of the above is set
//
// The first that applies wins, in this order. Every path goes through the package's native
// adapters (`provider` + `baseURL` in the agent's configuration).
import { startScriptedServer, type Script, type ScriptedServer, type ScriptedServerOptions } from './scripted-server.mjs'

/** The fields to spread into an `AgentConfig`. */
export interface ModelConfig {
  readonly provider: 'openai' | 'anthropic'
  readonly model: string
  readonly baseURL?: string
  readonly apiKey?: string
}

export interface ModelChoice {
  readonly config: ModelConfig
  /** One line saying what runs, for the example's header. */
  readonly label: string
  /** The embedded server, when the scripted model runs. */
  readonly server: ScriptedServer | undefined
  close(): Promise<void>
}

export async function chooseModel(script: Script, options: ScriptedServerOptions = {}): Promise<ModelChoice> {
  const env = process.env
  const model = env.OMA_MODEL
  const real = (config: ModelConfig, label: string): ModelChoice => ({ config, label, server: undefined, close: async () => {} })
  if (env.OMA_SCRIPTED !== '1') {
    if (env.OMA_BASE_URL) {
      return real(
        { provider: 'openai', model: model ?? 'qwen2.5', baseURL: env.OMA_BASE_URL, apiKey: env.OMA_API_KEY ?? 'local' },
        `${model ?? 'qwen2.5'} at ${env.OMA_BASE_URL} (OMA_BASE_URL, OpenAI-compatible)`,
      )
    }
    if (env.OPENAI_API_KEY) return real({ provider: 'openai', model: model ?? 'gpt-4o-mini' }, `OpenAI ${model ?? 'gpt-4o-mini'} (OPENAI_API_KEY)`)
    if (env.ANTHROPIC_API_KEY) return real({ provider: 'anthropic', model: model ?? 'claude-sonnet-4-6' }, `Anthropic ${model ?? 'claude-sonnet-4-6'} (ANTHROPIC_API_KEY)`)
  }
  const server = await startScriptedServer(script, options)
  return {
    // The native OpenAI-compatible adapter, pointed at the embedded server. It wants some key;
    // the scripted server ignores it.
    config: { provider: 'openai', model: 'scripted-model', baseURL: server.baseURL, apiKey: 'no-key-needed' },
    label: `scripted model at ${server.baseURL} (embedded; set OPENAI_API_KEY, ANTHROPIC_API_KEY or OMA_BASE_URL for a real one)`,
    server,
    close: () => server.close(),
  }
}
