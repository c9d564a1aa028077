/**
 * A URL as a message may name it. A base URL can carry a secret — `user:password@`, a `?key=…` a
 * gateway wants, a fragment — and the messages that name where a request went (a connection that
 * failed, which server answers) are printed and logged.
 *
 * @since 0.14.0
 */

/**
 * A user name or query value that reads as a token rather than a setting: 8 characters or more
 * with a letter and a digit or base64's `+`, `/` or `=` in them, or 20 or more of anything.
 * `?stream=true`, `?format=json` or `?api-version=2024-11-05` hidden would blank every `true`,
 * `json` or protocol date of a server's results. A path segment has a stricter rule (`pathSecret`).
 */
export const tokenLike = (value: string): boolean => value.length >= 20 || (value.length >= 8 && /[A-Za-z]/.test(value) && /[0-9+/=]/.test(value))

/** A path segment made of lower-case words (`model-context-protocol`): a name, however long. */
const words = /^[a-z]+(?:[-_.][a-z]+)*$/

/**
 * The prefixes keys are issued with (OpenAI's and Anthropic's `sk-`, Stripe's `sk_`/`pk_`/`rk_`,
 * GitHub's `ghp_`…, GitLab's `glpat-`, Slack's `xoxb-`…, Hugging Face's `hf_`, npm's `npm_`, AWS's
 * `AKIA`, Google's `AIza`).
 */
const keyPrefix = /^(?:(?:sk|pk|rk)[-_]|gh[opsur]_|github_pat_|glpat-|xox[abprs]-|xapp-|hf_|npm_|AKIA|AIza)/

/**
 * A part of a name or a version between its separators (`-`, `_`, `.`, `:`, `@`): letters around at
 * most one number of up to 8 digits (`context7`, `V3`, `32B`, `beta1`, `v2024`, `20241105`), at
 * most 24 characters.
 */
const namePart = /^[A-Za-z]*[0-9]{0,8}[A-Za-z]*$/

/**
 * Whether a segment is shaped as a name or a version: each part a `namePart`, and at most one number
 * inside a part's letters (`gpt4o`). A key's random characters put digits in several places
 * (`A7KD-9QXZ-M3PL-T8WN`, `abc123def456`).
 */
const nameShaped = (segment: string): boolean =>
  segment.split(/[-_.:@]/).every((part) => part.length <= 24 && namePart.test(part)) &&
  (segment.match(/[A-Za-z][0-9]+(?=[A-Za-z])/g) ?? []).length <= 1

/** `segment` decoded as a path's is (`%XX`; a `+` stays), or as it is when an escape is malformed. */
export const pathDecoded = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Whether a path segment (as written) may be a secret: hosted MCP servers and gateways put a user's
 * key in the path (`https://mcp.example.com/u/sk-live-abc123def456/sse`, a gateway's `/k/<key>/`).
 * Stricter than a query value's rule (`tokenLike`), for a path is made of names and versions, and a
 * name hidden is blanked in every result of its server ("Use the [redacted] resolve-library-id
 * tool" for `/@upstash/context7-mcp/mcp`): a key's prefix (`sk-`, `ghp_`, `xoxb-`…) and 8 characters
 * more, or, unless shaped as a name or version (`DeepSeek-V3`, `Qwen2.5-Coder-32B-Instruct`,
 * `1.0.0-beta1`, `v2024-11-05`), 16 characters or more mixing letters and digits, or 32 or more.
 * Lower-case words are a name however long.
 */
export const pathSecret = (segment: string): boolean => {
  const decoded = pathDecoded(segment)
  if (words.test(decoded)) return false
  const prefix = keyPrefix.exec(decoded)
  if (prefix !== null && decoded.length - prefix[0].length >= 8) return true
  if (nameShaped(decoded)) return false
  return decoded.length >= 32 || (decoded.length >= 16 && /[A-Za-z]/.test(decoded) && /[0-9]/.test(decoded))
}

/** A URL's path (`pathname`) with each segment that may be a secret as `[redacted]`; `/` alone is nothing. */
const pathShown = (pathname: string): string =>
  pathname === "/" ? "" : pathname.split("/").map((segment) => pathSecret(segment) ? "[redacted]" : segment).join("/")

/**
 * `url`'s scheme, host, port and path, a path segment that may be a secret as `[redacted]`: never
 * its userinfo, query or fragment. What does not parse as a URL is not quoted at all (it may be a
 * key pasted in the wrong place).
 */
export const shown = (url: string): string => {
  if (!URL.canParse(url)) return "(an address that is not a URL)"
  const { host, pathname, protocol } = new URL(url)
  return `${protocol}//${host}${pathShown(pathname)}`
}

/**
 * A URL's query (`search`, with its `?`) as written, parameter by parameter: `URLSearchParams` hands
 * the values over decoded only, and a secret is echoed back as the URL writes it. `value` is
 * `undefined` for a parameter without `=`.
 */
export const queryAsWritten = (search: string): ReadonlyArray<{ readonly name: string; readonly value: string | undefined }> =>
  search.slice(1).split("&").filter((parameter) => parameter !== "").map((parameter) => {
    const equals = parameter.indexOf("=")
    return equals < 0 ? { name: parameter, value: undefined } : { name: parameter.slice(0, equals), value: parameter.slice(equals + 1) }
  })

/** A query parameter's name shown as it is: a word, not what could be a key pasted as a bare parameter. */
const parameterName = /^[A-Za-z][A-Za-z0-9_.-]{0,39}$/

/**
 * `url` with what may be a secret in it replaced by `[redacted]`, its shape kept for a reader to tell
 * servers apart: the userinfo (`user:password@`), each query value (a `?token=…` a server wants; the
 * parameter's name stays when it is a plain word, else the whole parameter goes), each path segment
 * that reads as a token (`pathSecret`) and the fragment. Scheme, host, port and the rest of the
 * path are shown as they are. What does not parse as a URL is not quoted.
 */
export const redacted = (url: string): string => {
  if (!URL.canParse(url)) return "(an address that is not a URL)"
  const { hash, host, password, pathname, protocol, search, username } = new URL(url)
  const query = search === "" ? "" : `?${
    queryAsWritten(search).map(({ name, value }) => value !== undefined && name !== "" && parameterName.test(name) ? `${name}=[redacted]` : "[redacted]").join("&")
  }`
  return `${protocol}//${username === "" && password === "" ? "" : "[redacted]@"}${host}${pathname === "/" ? (query === "" ? "" : "/") : pathShown(pathname)}${query}${hash === "" ? "" : "#[redacted]"}`
}

/**
 * Why `url` cannot be a provider's base URL, or `undefined` when it can — checked before any
 * request, by the CLI (`--base-url`) and the provider layers: `fetch` refuses a URL with a user name
 * or password in it (`user:password@`) without a system code, which read as "could not reach …". The
 * reason never quotes the URL (its userinfo is the secret).
 */
export const unusable = (url: string): string | undefined => {
  if (!URL.canParse(url)) return "is not a URL"
  const { password, protocol, username } = new URL(url)
  if (protocol !== "http:" && protocol !== "https:") return "is not an http: or https: URL"
  if (username !== "" || password !== "") {
    return "holds a user name or password (user:password@), which no request carries: give the key as the API key, or a gateway's address without it"
  }
  return undefined
}
