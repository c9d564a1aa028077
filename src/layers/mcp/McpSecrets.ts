/**
 * The values a server's configuration gives it that are secrets — an HTTP server's header values
 * (`Authorization: Bearer …`, `x-api-key`) and its URL's userinfo and query values, a stdio server's `env` values whose names say they are
 * keys or tokens — kept out of what the agent writes about the server: its errors (a 401 page or a
 * proxy's error that shows the request's headers back) and its tools' results go into the session's
 * log and to the model. Before, a server answering 500 with the request's headers put the user's
 * `Authorization` into `tool.failed`.
 *
 * @since 0.5.0
 * @internal
 */
import * as McpConfig from "./McpConfig.js"

/** Shorter values are not hidden: a header of `1` or `yes` would blank every such word of a message. */
const minLength = 4

/** Names of variables whose values are secrets. */
const secretName = /key|token|secret|passw|auth|credential|cookie/i

/** The secrets of `server`: each value, and each of its words long enough to be a token (the part after `Bearer `). */
export const of = (server: McpConfig.Server): ReadonlyArray<string> => {
  const values = McpConfig.isStdio(server)
    ? Object.entries(server.env ?? {}).filter(([name]) => secretName.test(name)).map(([, value]) => value)
    : [...Object.values(server.headers ?? {}), ...urlSecrets(server.url)]
  const secrets = new Set<string>()
  for (const value of values) {
    for (const piece of [value, ...value.split(/[\s,;]+/)]) if (piece.length >= minLength) secrets.add(piece)
  }
  // Longest first: a value is hidden whole before a word of it.
  return [...secrets].sort((a, b) => b.length - a.length)
}

/**
 * A user name or query value that reads as a token rather than a setting: 8 characters or more, not
 * all letters. `?stream=true` or `?format=json` hidden would blank every `true` and `json` of the
 * server's results.
 */
const tokenLike = (value: string) => value.length >= 8 && !/^[A-Za-z]+$/.test(value)

/** The parts of an HTTP server's URL that may be secrets: its password, and its user name and query values that read as tokens, as written and decoded. */
const urlSecrets = (url: string): ReadonlyArray<string> => {
  if (!URL.canParse(url)) return []
  const { password, searchParams, username } = new URL(url)
  const parts = [password, ...[username, ...[...searchParams].map(([name, value]) => value === "" ? name : value)].filter(tokenLike)]
  return parts.filter((part) => part !== "").flatMap((part) => {
    let decoded = part
    try {
      decoded = decodeURIComponent(part)
    } catch {
      // A malformed escape is shown as written.
    }
    return decoded === part ? [part] : [part, decoded, encodeURIComponent(decoded)]
  })
}

/** `text` with every one of `secrets` as `[redacted]`. */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text)
