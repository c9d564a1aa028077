/**
 * The values a server's configuration gives it that are secrets — an HTTP server's header values
 * (`Authorization: Bearer …`, `x-api-key`) and its URL's userinfo, query values and path segments that read as keys, a stdio server's `env` values whose names say they are
 * keys or tokens and the values of its arguments' options that do (`--api-key X`, `--header "Authorization: …"`) — kept out of what the agent writes about the server: its errors (a 401 page or a
 * proxy's error that shows the request's headers back) and its tools' results go into the session's
 * log and to the model. Before, a server answering 500 with the request's headers put the user's
 * `Authorization` into `tool.failed`.
 *
 * @since 0.5.0
 * @internal
 */
import * as Address from "../../domain/Address.js"
import type * as McpConfig from "./McpConfig.js"

/** Shorter values are not hidden: a header of `1` or `yes` would blank every such word of a message. */
const minLength = 4

/** Names of variables whose values are secrets. */
const secretName = /key|token|secret|passw|(?:^|[^a-z])pass(?:$|[^a-z])|pwd|auth|credential|cookie/i

/** An authorization scheme's name (`Bearer sk-…`): a word of a secret's value, not a secret — hidden, every "Bearer" of a result went. */
const scheme = /^(?:Bearer|Basic|Digest|Token|Bot)$/i

/**
 * The secrets of `server`: each value, and for a header's or variable's each of its words long enough
 * to be a token (the part after `Bearer `). A URL's values are taken whole: split, `?q=release+notes`
 * would make `notes` a secret.
 */
export const of = (server: McpConfig.Server): ReadonlyArray<string> => {
  const secrets = new Set<string>()
  const values = "command" in server
    ? [...Object.entries(server.env ?? {}).filter(([name]) => secretName.test(name)).map(([, value]) => value), ...argSecrets(server.args ?? [])]
    : Object.values(server.headers ?? {})
  for (const value of values) {
    for (const piece of [value, ...value.split(/[\s,;]+/)]) if (piece.length >= minLength && !scheme.test(piece)) secrets.add(piece)
  }
  // A variable's value that is a URL, whatever its name (`DATABASE_URL=postgresql://u:pass@…`, review 65a).
  const urls = "command" in server
    ? [...(server.args ?? []).flatMap(argUrls), ...Object.values(server.env ?? {}).filter((value) => urlShaped.test(value))]
    : [server.url]
  for (const url of urls) for (const value of urlSecrets(url)) if (value.length >= minLength) secrets.add(value)
  // Longest first: a value is hidden whole before a word of it.
  return [...secrets].sort((a, b) => b.length - a.length)
}

/** Options whose value is an HTTP header (`Name: value`), as servers and proxies (`mcp-remote`) take one. */
const headerOption = /^(?:-H|--header)$/

/** A URL with an authority (`https://…`, `postgresql://user:pass@host/db`): one an argument may hold, whole or as an option's value. */
const urlShaped = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

/** The URLs among an argument and its `--option=value`'s value (their secrets are an HTTP server's URL's: `urlSecrets`). */
const argUrls = (arg: string): ReadonlyArray<string> => {
  const equals = arg.indexOf("=")
  return [arg, ...(arg.startsWith("-") && equals > 0 ? [arg.slice(equals + 1)] : [])].filter((value) => urlShaped.test(value))
}

/**
 * A value shaped as a key (`sk-live-…`, 16 or more letters and digits that are not a name or version),
 * not a path, nor words: a label of 32 characters (`--label "Echo fixture server that repeats text"`)
 * was a key, and each word of it was hidden from every result and tool name (review 65a).
 */
const keyShaped = (value: string) => !value.includes("/") && !/\s/.test(value) && Address.pathSecret(value)

/**
 * The values of a stdio server's arguments that are secrets (review 63b, 64a): the value of an
 * option whose name says it is a key or token (`--api-key X`, `--token=X`, `--password -x…`: taken
 * even when it starts with `-`, unless it is a long option), of a header option or a header given
 * as an argument (`--header "Authorization: Bearer X"`, `"Authorization: Bearer X"`) the value of a
 * header whose name says so, a secret-named `NAME=value` (`API_KEY=…`, as `--env` takes one), a
 * secret-named key's value in an argument that is JSON (`{"apiKey": …}`), and a value shaped as a
 * key (`-k sk-live-…`). A URL's (`--url https://…?api_key=…`, `postgresql://user:pass@…`) are
 * `urlSecrets`'. Before, only `env` values were hidden: a server that echoed the key its arguments
 * gave it put it into `tool.failed`.
 */
const argSecrets = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  const header = (value: string) => {
    const colon = value.indexOf(":")
    if (colon > 0 && /^[A-Za-z][\w-]*$/.test(value.slice(0, colon)) && secretName.test(value.slice(0, colon))) out.push(value.slice(colon + 1).trim())
  }
  // A word that is a value (a positional one, or an option's): what it says of itself.
  const value = (word: string) => {
    if (urlShaped.test(word)) return
    header(word)
    const assignment = /^([A-Za-z_][\w.-]*)=(.+)$/s.exec(word)
    if (assignment !== null && secretName.test(assignment[1]!)) out.push(assignment[2]!)
    if (/^\s*[{[]/.test(word)) out.push(...jsonSecrets(word))
    if (keyShaped(word)) out.push(word)
  }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("-") || arg === "-") {
      value(arg)
      continue
    }
    const equals = arg.indexOf("=")
    const [option, given] = equals > 0 ? [arg.slice(0, equals), arg.slice(equals + 1)] : [arg, undefined]
    if (headerOption.test(option)) header(given ?? args[++i] ?? "")
    else if (secretName.test(option) && /^--?[A-Za-z][\w.-]*$/.test(option)) {
      const next = given ?? args[i + 1]
      if (next !== undefined && (given !== undefined || !/^--[A-Za-z]/.test(next))) out.push(next), i += given === undefined ? 1 : 0
    } else if (given !== undefined) value(given)
  }
  return out
}

/** The most of an argument parsed as JSON for its secrets. */
const jsonBytes = 64 * 1024

/** The values of the keys whose names say they are secrets in `text` as JSON (`{"apiKey": "…"}`), at any depth; none when it is not JSON. */
const jsonSecrets = (text: string): ReadonlyArray<string> => {
  if (text.length > jsonBytes) return []
  const out: Array<string> = []
  const walk = (node: unknown, depth: number): void => {
    if (depth > 64 || typeof node !== "object" || node === null) return
    for (const [key, child] of Object.entries(node)) {
      if (secretName.test(key) && (typeof child === "string" || typeof child === "number")) out.push(String(child))
      else walk(child, depth + 1)
    }
  }
  try {
    walk(JSON.parse(text), 0)
  } catch {
    // not JSON
  }
  return out
}

/** `written` decoded as a query's value is (`+` a space, then `%XX`), or as it is when an escape is malformed. */
const queryDecoded = (written: string) => {
  try {
    return decodeURIComponent(written.replaceAll("+", " "))
  } catch {
    return written
  }
}

/** A part of a URL in every form a server's error may echo it in: as written, its escapes in lower case, decoded, and encoded again. */
const forms = (written: string, decoded: string): ReadonlyArray<string> =>
  [...new Set([written, written.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()), decoded, encodeURIComponent(decoded)])]

/**
 * The parts of an HTTP server's URL that may be secrets: its password, and its user name, query
 * values and path segments that read as tokens (`Address.tokenLike`, `Address.pathSecret`: a
 * hosted server's `/u/sk-live-…/sse`) — each in every form a server's error may echo it in: as the
 * URL writes it (`abc%2Bdef`, which the request line shows), its escapes in lower case, decoded,
 * and encoded again.
 */
const urlSecrets = (url: string): ReadonlyArray<string> => {
  if (!URL.canParse(url)) return []
  const { password, pathname, search, username } = new URL(url)
  // A parameter without a value may be a key pasted bare (`?sk-…`).
  const values = Address.queryAsWritten(search).map(({ name, value }) => value === undefined || value === "" ? name : value)
  const written = [password, ...[username, ...values].filter((value) => Address.tokenLike(queryDecoded(value)))].filter((part) => part !== "")
  const segments = pathname.split("/").filter(Address.pathSecret)
  return [
    ...written.flatMap((part) => forms(part, queryDecoded(part))),
    ...segments.flatMap((segment) => forms(segment, Address.pathDecoded(segment)))
  ]
}

/** `text` with every one of `secrets` as `[redacted]`. */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text)

/**
 * `value` (JSON: a tool's input schema) with every one of `secrets` as `[redacted]` in its strings
 * and its objects' keys. Walked, not redacted as JSON text: there a secret is written escaped (a
 * `"` or `\\` in it) and would be missed, and a secret such as `true` would be cut out of the syntax.
 */
export const redactJson = <A>(value: A, secrets: ReadonlyArray<string>): A => {
  if (secrets.length === 0) return value
  const walk = (node: unknown): unknown =>
    typeof node === "string"
      ? redact(node, secrets)
      : Array.isArray(node)
      ? node.map(walk)
      : typeof node === "object" && node !== null
      ? Object.fromEntries(Object.entries(node).map(([key, child]) => [redact(key, secrets), walk(child)]))
      : node
  return walk(value) as A
}
