/**
 * The server's secrets: the token every route but `/healthz` needs, compared in constant time; the
 * one-time login codes that hand a browser the viewer's cookie, so the token never sits in a URL, a
 * browser history or the page's script; the cookie's value, a secret derived from the token for
 * one port, so a leaked cookie is not the token; and the login form's rate limit.
 *
 * @since 0.2.0
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { MonotonicTime } from "../index.js"

/** A fresh random token (32 bytes, base64url). */
export const randomToken = (): string => randomBytes(32).toString("base64url")

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Whether `given` is the token. Both sides are hashed first, so the comparison takes the same time
 * whatever the length or content of what was sent.
 */
export const matches = (token: Redacted.Redacted<string>, given: string | Redacted.Redacted<string> | undefined): boolean => {
  const candidate = given === undefined ? "" : typeof given === "string" ? given : Redacted.value(given)
  return timingSafeEqual(digest(candidate), expectedDigest(token)) && candidate.length > 0
}

/** Each token's digest, made once: a server checks the same token on every connection (perf63serve counted ~5% of an accept). */
const expectedDigests = new WeakMap<Redacted.Redacted<string>, Buffer>()

const expectedDigest = (token: Redacted.Redacted<string>): Buffer => {
  let known = expectedDigests.get(token)
  if (known === undefined) {
    known = digest(Redacted.value(token))
    expectedDigests.set(token, known)
  }
  return known
}

/**
 * How long a login code opens the viewer. `serve` prints its code at start, for the user who
 * started it to open at once; later the code is only a line of a terminal's scrollback, a shell's
 * log or a shared screen, where someone else may read it. The token, typed into the sign-in form,
 * opens the viewer after that.
 */
export const loginCodeLifetimeMillis = 10 * 60 * 1000

/** How many codes are held at once: one more drops the oldest. `serve` issues one. */
export const maxLoginCodes = 16

/** What a code opened: the viewer, nothing (used already, never issued, or dropped), or nothing because its time was up. */
export type CodeUse = "signedIn" | "unknown" | "expired"

/**
 * A moment on both of a `Clock`'s times, in milliseconds: the wall clock's (`currentTimeMillis`) and
 * the monotonic one (`MonotonicTime`). A number stands for both (a `TestClock`'s, which are one).
 */
export type Instant = number | { readonly wall: number; readonly monotonic: number }

const instantOf = (clock: Clock.Clock) => ({ wall: clock.unsafeCurrentTimeMillis(), monotonic: MonotonicTime.unsafeMillis(clock) })

/**
 * Single-use codes: each opens the viewer once (it sets the cookie), within its lifetime, then is
 * forgotten. Time is an effect `Clock`: the fiber's (`issueNow`, `consumeNow`), or for a plain
 * `issue()` the one the codes were made with (`ServerConfig.layer` gives its own fiber's) — never
 * the wall clock behind a test's `TestClock`, where a code issued at the real time and used at the
 * test's would outlive its ten minutes.
 *
 * A code's lifetime runs on both of the Clock's times, and is up when either says so: the wall clock
 * alone let a code issued before the clock stepped back (NTP, a VM restored, a date set by hand) open
 * the viewer for as long again; the monotonic one alone stops while the machine sleeps, so a code
 * printed before a laptop's lid closed would still work when it opens. A step forward can only end a
 * code sooner, and the token still signs in.
 */
export interface LoginCodes {
  /** A new code, valid until used or until its lifetime from `now` (by default the codes' `Clock`) is up. */
  readonly issue: (now?: Instant) => string
  /** Uses a code at `now` (on the clock `issue` was given): `signedIn` once for each code issued, within its lifetime. */
  readonly consume: (code: string, now: Instant) => CodeUse
  /** `issue` at the fiber's `Clock` time. */
  readonly issueNow: Effect.Effect<string>
  /** `consume` at the fiber's `Clock` time. */
  readonly consumeNow: (code: string) => Effect.Effect<CodeUse>
}

/**
 * An empty set of login codes, each valid for `lifetimeMillis` and at most `max` held at once. An
 * expired code is held until used or dropped, so its use is told apart from a wrong one.
 */
export const loginCodes = (
  options: { readonly lifetimeMillis?: number; readonly max?: number; readonly clock?: Clock.Clock } = {}
): LoginCodes => {
  const lifetime = options.lifetimeMillis ?? loginCodeLifetimeMillis
  const clock = options.clock ?? Clock.make()
  const max = Math.max(1, options.max ?? maxLoginCodes)
  // Insertion order: the first is the oldest.
  const held = new Map<string, { readonly wall: number; readonly monotonic: number }>()
  const both = (now: Instant) => typeof now === "number" ? { wall: now, monotonic: now } : now
  const issue = (now: Instant = instantOf(clock)) => {
    const code = randomBytes(24).toString("base64url")
    while (held.size >= max) held.delete(held.keys().next().value!)
    const at = both(now)
    held.set(code, { wall: at.wall + lifetime, monotonic: at.monotonic + lifetime })
    return code
  }
  const consume = (code: string, now: Instant): CodeUse => {
    // Compared in constant time against every held code (a few at most).
    let found: string | undefined
    for (const candidate of held.keys()) if (matches(Redacted.make(candidate), code)) found = candidate
    if (found === undefined) return "unknown"
    const expiresAt = held.get(found)!
    held.delete(found)
    const at = both(now)
    return at.wall < expiresAt.wall && at.monotonic < expiresAt.monotonic ? "signedIn" : "expired"
  }
  return {
    issue,
    consume,
    issueNow: Effect.map(Effect.clock, (fiberClock) => issue(instantOf(fiberClock))),
    consumeNow: (code) => Effect.map(Effect.clock, (fiberClock) => consume(code, instantOf(fiberClock)))
  }
}

/**
 * The name of the viewer's cookie for the port a browser reaches the server at. Browsers send a
 * host's cookies to every port of that host: one name per port keeps two servers on one machine
 * from reading (or overwriting) each other's cookie.
 */
export const cookieName = (port: string): string => `effect_agent_session_${port}`

/**
 * The cookie's value for a port: an HMAC of the port under the token. It opens only this server on
 * this port (and only as a cookie: it is not the token, so a copy that leaks — to another server of
 * the same host, which receives the host's cookies — is no bearer token, and changing the token
 * revokes it). A restart with the same token keeps it valid, so an open viewer carries on.
 */
export const sessionSecret = (token: Redacted.Redacted<string>, port: string): Redacted.Redacted<string> =>
  Redacted.make(createHmac("sha256", Redacted.value(token)).update(`effect-agent viewer session\u0000${port}`, "utf8").digest("base64url"))

/**
 * The viewer page's key for a port: an HMAC of the port under the token, under a label of its own.
 * Browsers send a host's cookies to every port of it, so a server on another port of 127.0.0.1 —
 * one a command of the agent started, opened in the same browser — receives the viewer's cookie,
 * and outside a browser it can send it back with any `Origin`. So a state-changing request with the
 * cookie must also carry this key ({@link pageKeyHeader}): the sign-in hands it to the viewer's page
 * only (in the redirect's fragment, or the sign-in form's answer), which keeps it in its origin's
 * storage — per port, unlike cookies. Derived like the cookie, so a restart with the same token keeps it.
 */
export const pageKey = (token: Redacted.Redacted<string>, port: string): Redacted.Redacted<string> =>
  Redacted.make(createHmac("sha256", Redacted.value(token)).update(`effect-agent viewer page key\u0000${port}`, "utf8").digest("base64url"))

/** The header a state-changing request with the viewer's cookie carries the page's key in. */
export const pageKeyHeader = "x-effect-agent-key"

/**
 * The `Set-Cookie` value of the viewer's cookie: HttpOnly (the page's script never sees it),
 * SameSite=Strict (no other site's page or link sends it), the whole path, for the browser's session.
 */
export const cookieHeader = (name: string, value: Redacted.Redacted<string>): string =>
  `${name}=${Redacted.value(value)}; Path=/; HttpOnly; SameSite=Strict`

/** The value of one cookie in a `Cookie` header: its first (see {@link cookieValues}). */
export const cookieValue = (header: string | undefined, name: string): string | undefined => cookieValues(header, name)[0]

/** How many values of one cookie name {@link cookieValues} looks at: a header of thousands of them checks no more. */
export const maxCookieValues = 8

/**
 * The values of a cookie name in a `Cookie` header, in its order, at most {@link maxCookieValues}.
 * One name may come several times: cookies ignore ports, so a page on another port of the host can
 * set this one's name with a longer `Path`, which the browser sends first ("cookie tossing"). A
 * check that read the first alone locked the viewer out; one accepts when any of these matches.
 */
export const cookieValues = (header: string | undefined, name: string): ReadonlyArray<string> => {
  const values: Array<string> = []
  if (header === undefined) return values
  for (const part of header.split(";")) {
    const at = part.indexOf("=")
    if (at > 0 && part.slice(0, at).trim() === name) {
      values.push(part.slice(at + 1).trim())
      if (values.length === maxCookieValues) break
    }
  }
  return values
}

/** What the login form's rate limit says of an attempt now. */
export type Attempt = { readonly _tag: "Open" } | { readonly _tag: "Wait"; readonly retryAfterMillis: number }

/**
 * The login form's rate limit, for the whole server (every client of a loopback server is the same
 * machine): after the n-th wrong token in a row, the next attempt waits 2^(n-1) seconds (at most 15
 * minutes) — six tries in the first minute, then fewer and fewer. A wrong token sent while waiting
 * is refused (429) and not counted; the right token always signs in, and clears it (the limit used to
 * refuse every attempt while waiting, and any local process could lock the user out with four
 * wrong tokens). Its `now` is monotonic time (`MonotonicTime`): on the wall clock, a clock stepped back an
 * hour locked the form for an hour more, and one stepped forward ended the wait at once.
 */
export interface LoginThrottle {
  readonly attempt: (now: number) => Attempt
  readonly failed: (now: number) => void
  readonly succeeded: () => void
}

/**
 * The least strength `serve` takes of a token the user chose (`EFFECT_AGENT_TOKEN`), in bits: the
 * bearer header is not rate limited (a 3-character token was found in 14,165 guesses, 122 s), so
 * the token's strength is the guard. The token `serve` makes itself has 256.
 */
export const minTokenBits = 128

/**
 * An estimate of a token's strength in bits, as if each of its characters were drawn at random from
 * the character classes it uses (lower-case letters 26, upper-case 26, digits 10, anything else 33).
 * An upper bound: a chosen word is weaker than it says, but a short token is always refused.
 */
export const tokenBits = (token: string): number => {
  const classes = [[/[a-z]/, 26], [/[A-Z]/, 26], [/[0-9]/, 10], [/[^a-zA-Z0-9]/, 33]] as const
  const alphabet = classes.reduce((size, [pattern, count]) => pattern.test(token) ? size + count : size, 0)
  return alphabet === 0 ? 0 : Math.floor([...token].length * Math.log2(alphabet))
}

/** The longest wait between two attempts. */
export const maxLoginWaitMillis = 15 * 60 * 1000

/** A fresh rate limit. */
export const loginThrottle = (): LoginThrottle => {
  let failures = 0
  let openAt = 0
  return {
    attempt: (now) => (now >= openAt ? { _tag: "Open" } : { _tag: "Wait", retryAfterMillis: openAt - now }),
    failed: (now) => {
      failures += 1
      openAt = now + Math.min(1000 * 2 ** Math.min(failures - 1, 30), maxLoginWaitMillis)
    },
    succeeded: () => {
      failures = 0
      openAt = 0
    }
  }
}
