/**
 * The environment a tool's command runs with: built from an allow-list, never from the agent's own
 * environment minus a few names, so `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `SSH_AUTH_SOCK` and
 * any key the agent holds stay out of reach unless the user passes them on by name.
 *
 * @since 0.1.0
 */

/** What the user adds to the allow-list. */
export interface Options {
  /** More names to pass on from the agent's environment; a name ending in `*` is a prefix (`NPM_CONFIG_*`). */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Variables set to fixed values (they win over passed-on ones). */
  readonly set?: Readonly<Record<string, string>> | undefined
}

/** The names passed on by default: what programs need to find themselves, their files and the user's locale. */
export const defaultAllow: ReadonlyArray<string> = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "TZ",
  "TMPDIR", "TMP", "TEMP", "PWD"
]

const matcher = (names: ReadonlyArray<string>) => {
  const exact = new Set(names.filter((n) => !n.endsWith("*")))
  const prefixes = names.filter((n) => n.endsWith("*")).map((n) => n.slice(0, -1))
  return (name: string) => exact.has(name) || prefixes.some((p) => name.startsWith(p))
}

/**
 * The environment for a command: the allowed names from `source`, minus `hidden`, plus `set`, with
 * `PWD` naming the directory it runs in.
 */
export const build = (
  source: Readonly<Record<string, string | undefined>>,
  options: Options & { readonly hidden?: ReadonlyArray<string>; readonly cwd: string }
): Record<string, string> => {
  const allowed = matcher([...defaultAllow, ...(options.allow ?? [])])
  const hidden = new Set(options.hidden ?? [])
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && allowed(name) && !hidden.has(name)) env[name] = value
  }
  env.PWD = options.cwd
  return { ...env, ...options.set }
}
