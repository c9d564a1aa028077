/**
 * A URL as a message may name it. A base URL can carry a secret — `user:password@`, a `?key=…` a
 * gateway wants, a fragment — and the messages that name where a request went (a connection that
 * failed, which server answers) are printed and logged.
 *
 * @since 0.14.0
 */

/**
 * `url`'s scheme, host, port and path: never its userinfo, query or fragment. What does not parse as
 * a URL is not quoted at all (it may be a key pasted in the wrong place).
 */
export const shown = (url: string): string => {
  if (!URL.canParse(url)) return "(an address that is not a URL)"
  const { host, pathname, protocol } = new URL(url)
  return `${protocol}//${host}${pathname === "/" ? "" : pathname}`
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
 * parameter's name stays when it is a plain word, else the whole parameter goes) and the fragment.
 * Scheme, host, port and path are shown as they are. What does not parse as a URL is not quoted.
 */
export const redacted = (url: string): string => {
  if (!URL.canParse(url)) return "(an address that is not a URL)"
  const { hash, host, password, pathname, protocol, search, username } = new URL(url)
  const query = search === "" ? "" : `?${
    queryAsWritten(search).map(({ name, value }) => value !== undefined && name !== "" && parameterName.test(name) ? `${name}=[redacted]` : "[redacted]").join("&")
  }`
  return `${protocol}//${username === "" && password === "" ? "" : "[redacted]@"}${host}${pathname === "/" && query === "" ? "" : pathname}${query}${hash === "" ? "" : "#[redacted]"}`
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
