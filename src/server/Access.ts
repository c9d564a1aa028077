/**
 * Who may reach the server, from where, with what: the checks every request passes before any
 * route, and the credential it carries. Pure functions of a request's method and headers.
 *
 * - **Host.** A request must name this server: `localhost`, an IP address (loopback or not: a
 *   browser sends an address only when the page's URL was that address), or a host name the
 *   operator allowed (`allowedHosts`, e.g. a reverse proxy's). Any other name is a page whose DNS
 *   answer was turned to this machine (DNS rebinding): refused, on every route. The port is not
 *   checked: a browser always sends the port it connected to, and an SSH tunnel or a container's
 *   port mapping legitimately changes it.
 * - **Origin.** Browsers say where a request comes from (`Origin`, and `Sec-Fetch-Site`, which a
 *   page cannot set). A request from another origin's page — another port of the same host is
 *   another origin, though the same "site" for cookies — is refused, on every route and whatever
 *   credential it carries; so are subresource loads (`<img>`, `<script>`) from such a page. Top-level
 *   navigations (a link, the address bar) are let through when they are reads (GET): nothing changes
 *   and the answer is shown to the user, not to the linking page. Clients that are not browsers send
 *   neither header.
 * - **Bodies.** State-changing requests (every method but GET, HEAD and OPTIONS) take JSON only:
 *   `application/x-www-form-urlencoded`, `multipart/form-data` and `text/plain` are what a page of
 *   any origin may send without asking (a `<form>`, `fetch(…, {mode: "no-cors"})`,
 *   `navigator.sendBeacon`); a body without a type is refused too.
 * - **Credentials.** The bearer token (`Authorization: Bearer`), or the viewer's cookie (see
 *   `Security`) with the page's key (`Security.pageKey`) beside it. The browser sends the cookie on
 *   its own — to a server on another port of the host too, which can replay it from outside a
 *   browser with any `Origin` — so the cookie alone opens nothing here: every request with it, reads
 *   included, carries the key, which only the viewer's page holds. A state-changing one must also
 *   prove it comes from that page: `Origin` is this server's, or `Sec-Fetch-Site: same-origin`. (The
 *   viewer's page and script, which hold no session's data, open with the cookie alone: see `Viewer`.)
 *
 * @since 0.4.0
 */
import { isIP } from "node:net"
import * as Redacted from "effect/Redacted"
import * as Security from "./Security.js"

/** A request's headers, names in lower case (as Node and `@effect/platform` give them). */
export type Headers = Readonly<Record<string, string | undefined>>

/**
 * A request's headers, with `host` filled in from its URL when the header itself is missing — as in
 * a web `Request` (`HttpApiBuilder.toWebHandler`), whose URL carries the host the client named.
 */
export const headersOf = (request: { readonly headers: Headers; readonly originalUrl: string }): Headers => {
  if (request.headers["host"] !== undefined || request.originalUrl.startsWith("/")) return request.headers
  try {
    return { ...request.headers, host: new URL(request.originalUrl).host }
  } catch {
    return request.headers
  }
}

/** A `Host` header, parsed: its name (lower case; an IPv6 address in brackets) and port ("80" when left out). */
export interface Host {
  readonly hostname: string
  readonly port: string
  /** `hostname[:port]` as URLs normalise it: what an `Origin` of this host has after its scheme. */
  readonly authority: string
}

/** A `Host` header as a host, or undefined when it is not one (empty, user info, a path …). */
export const parseHost = (header: string | undefined): Host | undefined => {
  if (header === undefined || !/^[A-Za-z0-9.\-[\]:]+$/.test(header)) return undefined
  try {
    const url = new URL(`http://${header}`)
    return { hostname: url.hostname, port: url.port === "" ? "80" : url.port, authority: url.host }
  } catch {
    return undefined
  }
}

const isAddress = (hostname: string) => isIP(hostname.startsWith("[") ? hostname.slice(1, -1) : hostname) !== 0

/** Whether the `Host` header names this server (see the module's note). `"*"` in `allowedHosts` allows any. */
export const hostAllowed = (header: string | undefined, allowedHosts: ReadonlyArray<string>): boolean => {
  const host = parseHost(header)
  if (host === undefined) return false
  if (host.hostname === "localhost" || isAddress(host.hostname)) return true
  return allowedHosts.some((allowed) => allowed === "*" || allowed.toLowerCase() === host.hostname)
}

/** Whether an `Origin` header names the host the request was sent to. */
const isOwnOrigin = (origin: string, host: Host | undefined): boolean => {
  if (host === undefined) return false
  try {
    const url = new URL(origin)
    return (url.protocol === "http:" || url.protocol === "https:") && url.host === host.authority
  } catch {
    return false
  }
}

const isRead = (method: string) => method === "GET" || method === "HEAD"

/** Whether the request changes something (every method but GET, HEAD and OPTIONS). */
export const isStateChanging = (method: string): boolean => !isRead(method) && method !== "OPTIONS"

/** Whether a browser sent the request for a page of another origin (see the module's note). */
export const fromOtherOrigin = (method: string, headers: Headers): boolean => {
  if (headers["sec-fetch-mode"] === "navigate" && isRead(method)) return false
  const site = headers["sec-fetch-site"]
  if (site === "same-site" || site === "cross-site") return true
  const origin = headers["origin"]
  if (origin === undefined) return false
  // An opaque origin (a sandboxed frame, a file, a privacy redirect): trusted only on the browser's own word.
  if (origin === "null") return site !== "same-origin"
  return !isOwnOrigin(origin, parseHost(headers["host"]))
}

/** Whether the browser vouches that the request comes from a page of this server's own origin. */
export const fromOwnPage = (headers: Headers): boolean => {
  const site = headers["sec-fetch-site"]
  if (site === "same-origin") return true
  const origin = headers["origin"]
  return site === undefined && origin !== undefined && isOwnOrigin(origin, parseHost(headers["host"]))
}

/** Whether the request says its body is JSON (`application/json`, any parameters, any case). */
export const isJsonBody = (headers: Headers): boolean =>
  headers["content-type"] !== undefined && headers["content-type"].split(";")[0]!.trim().toLowerCase() === "application/json"

/** Whether a state-changing request's body is refused: anything but JSON, or a body with no type. */
export const bodyRefused = (method: string, headers: Headers): boolean => {
  if (!isStateChanging(method)) return false
  if (headers["content-type"] === undefined) return Number(headers["content-length"] ?? "0") > 0 || headers["transfer-encoding"] !== undefined
  return !isJsonBody(headers)
}

/** The viewer's cookie name for the port the request was sent to. */
export const cookieNameOf = (headers: Headers): string => Security.cookieName(parseHost(headers["host"])?.port ?? "80")

/** The cookie's value for the port the request was sent to. */
export const cookieSecretOf = (token: Redacted.Redacted<string>, headers: Headers): Redacted.Redacted<string> =>
  Security.sessionSecret(token, parseHost(headers["host"])?.port ?? "80")

/** The credential a request carries: the bearer token, the viewer's cookie, or none that is valid. */
export const credential = (token: Redacted.Redacted<string>, headers: Headers): "bearer" | "cookie" | undefined => {
  const bearer = bearerOf(headers["authorization"])
  if (bearer !== undefined && Security.matches(token, bearer)) return "bearer"
  const secret = cookieSecretOf(token, headers)
  if (Security.cookieValues(headers["cookie"], cookieNameOf(headers)).some((value) => Security.matches(secret, value))) return "cookie"
  return undefined
}

/** The token of an `Authorization: Bearer` header; the scheme's case does not matter (RFC 9110 §11.1). */
const bearerOf = (authorization: string | undefined): string | undefined => {
  const found = authorization === undefined ? null : /^bearer +/i.exec(authorization)
  return found === null ? undefined : authorization!.slice(found[0].length)
}

/** The viewer page's key for the port the request was sent to. */
export const pageKeyOf = (token: Redacted.Redacted<string>, headers: Headers): Redacted.Redacted<string> =>
  Security.pageKey(token, parseHost(headers["host"])?.port ?? "80")

/**
 * Why a request's credential does not let it through the session routes, or undefined when it does.
 * The key is read from its header only, never from the URL: a URL ends in logs, traces and tools
 * that show requests, where headers marked secret are left out.
 */
export const refusal = (
  token: Redacted.Redacted<string>,
  method: string,
  headers: Headers
): "unauthorized" | "not-own-page" | "no-page-key" | undefined => {
  const found = credential(token, headers)
  if (found === undefined) return "unauthorized"
  if (found === "cookie") {
    if (isStateChanging(method) && !fromOwnPage(headers)) return "not-own-page"
    if (!Security.matches(pageKeyOf(token, headers), headers[Security.pageKeyHeader])) return "no-page-key"
  }
  return undefined
}
