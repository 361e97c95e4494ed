// The environment a shell command sees: bash and LocalShellExecutor hand it only an allowlist.

/** The names of the variables a shell command may see. */
export const SHELL_ENV_ALLOWED = ['HOME', 'LANG', 'LC_ALL', 'LOGNAME', 'PATH', 'SHELL', 'TEMP', 'TERM', 'TMP', 'TMPDIR', 'USER', 'PWD', 'SHLVL', '_']

/**
 * Runs `body` with an API key and `visible` (a variable off the allowlist) set in process.env, and
 * removes both afterwards.
 */
export async function withForeignVars<T>(visible: string, body: () => Promise<T>): Promise<T> {
  process.env.OPENAI_API_KEY = 'sk-abcdefghijklmnopqrstuvwx'
  process.env[visible] = 'nope'
  try {
    return await body()
  } finally {
    delete process.env.OPENAI_API_KEY
    delete process.env[visible]
  }
}

/** The names in `env`'s output, each of them checked to be on the allowlist. */
export function allowedNames(envOutput: string): string[] {
  const names = envOutput.split('\n').filter(Boolean).map((l) => l.split('=')[0])
  for (const n of names) expect(SHELL_ENV_ALLOWED).toContain(n)
  return names
}
