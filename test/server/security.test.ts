/**
 * The server's secrets and request checks as pure functions: the viewer's cookie secret, the login
 * form's rate limit, and the Host / Origin / Content-Type rules of `Access`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import { Access, Security } from "../../src/server.js"

const token = Redacted.make("the-token-0123456789")

describe("Security", () => {
  it("the cookie's secret is per port and per token, and is not the token", () => {
    const a = Redacted.value(Security.sessionSecret(token, "4477"))
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(a).not.toContain("the-token")
    expect(Redacted.value(Security.sessionSecret(token, "4477"))).toBe(a)
    expect(Redacted.value(Security.sessionSecret(token, "4478"))).not.toBe(a)
    expect(Redacted.value(Security.sessionSecret(Redacted.make("another-token-0123456"), "4477"))).not.toBe(a)
    expect(Security.cookieName("4477")).toBe("effect_agent_session_4477")
  })

  it("the login rate limit: 2^(n-1) seconds after the n-th wrong token in a row, at most 15 minutes; a right one clears it", () => {
    const throttle = Security.loginThrottle()
    expect(throttle.attempt(0)).toEqual({ _tag: "Open" })
    let now = 0
    const waits: Array<number> = []
    for (let n = 0; n < 14; n++) {
      throttle.failed(now)
      const wait = throttle.attempt(now)
      if (wait._tag !== "Wait") throw new Error("expected a wait")
      waits.push(wait.retryAfterMillis / 1000)
      expect(throttle.attempt(now + wait.retryAfterMillis - 1)._tag).toBe("Wait")
      now += wait.retryAfterMillis
      expect(throttle.attempt(now)).toEqual({ _tag: "Open" })
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900])
    // Six tries in the first minute at most.
    expect(waits.slice(0, 6).reduce((a, b) => a + b, 0)).toBeGreaterThan(60)
    throttle.succeeded()
    throttle.failed(now)
    expect(throttle.attempt(now)).toEqual({ _tag: "Wait", retryAfterMillis: 1000 })
  })

  it("login codes: each signs in once, within its lifetime by the clock it is given; at most 16 held, the oldest dropped", () => {
    const codes = Security.loginCodes()
    const minute = 60_000
    const issuedAt = 1_000_000
    const fresh = codes.issue(issuedAt)
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(codes.consume(fresh, issuedAt + 9 * minute)).toBe("signedIn")
    expect(codes.consume(fresh, issuedAt + 9 * minute)).toBe("unknown")
    // Ten minutes: its time is up (and the attempt uses it up).
    const late = codes.issue(issuedAt)
    expect(codes.consume(late, issuedAt + Security.loginCodeLifetimeMillis - 1)).toBe("signedIn")
    const expired = codes.issue(issuedAt)
    expect(codes.consume(expired, issuedAt + Security.loginCodeLifetimeMillis)).toBe("expired")
    expect(codes.consume(expired, issuedAt)).toBe("unknown")
    expect(codes.consume("not-a-code", issuedAt)).toBe("unknown")
    expect(Security.loginCodeLifetimeMillis).toBe(10 * minute)
    // The bound: the 17th drops the first; the other sixteen still sign in.
    expect(Security.maxLoginCodes).toBe(16)
    const issued = Array.from({ length: Security.maxLoginCodes + 1 }, () => codes.issue(issuedAt))
    expect(codes.consume(issued[0]!, issuedAt)).toBe("unknown")
    for (const code of issued.slice(1)) expect(codes.consume(code, issuedAt)).toBe("signedIn")
    // A lifetime of its own.
    const short = Security.loginCodes({ lifetimeMillis: minute })
    expect(short.consume(short.issue(issuedAt), issuedAt + minute)).toBe("expired")
  })
})

describe("Access", () => {
  it("Host: localhost, IP addresses and configured names; nothing that is not a host", () => {
    for (const host of ["localhost", "localhost:1", "127.0.0.1:4477", "[::1]:4477", "10.0.0.5", "[fe80::1]"]) expect(Access.hostAllowed(host, []), host).toBe(true)
    for (const host of [undefined, "", "evil.example", "localhost.evil.example", "a.localhost", "user@127.0.0.1", "127.0.0.1/x", "127.0.0.1 evil", "[::1"]) {
      expect(Access.hostAllowed(host, []), String(host)).toBe(false)
    }
    expect(Access.hostAllowed("Agent.Internal:443", ["agent.internal"])).toBe(true)
    expect(Access.hostAllowed("evil.example", ["*"])).toBe(true)
  })

  it("another origin's page: by Sec-Fetch-Site, else by Origin; reads by navigation pass", () => {
    const own = { host: "127.0.0.1:4477" }
    expect(Access.fromOtherOrigin("POST", { ...own })).toBe(false)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "http://127.0.0.1:4477" })).toBe(false)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "https://127.0.0.1:4477" })).toBe(false)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "http://127.0.0.1:4478" })).toBe(true)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "http://localhost:4477" })).toBe(true)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "null" })).toBe(true)
    expect(Access.fromOtherOrigin("POST", { ...own, origin: "null", "sec-fetch-site": "same-origin" })).toBe(false)
    expect(Access.fromOtherOrigin("GET", { ...own, "sec-fetch-site": "same-site", "sec-fetch-mode": "no-cors" })).toBe(true)
    expect(Access.fromOtherOrigin("GET", { ...own, "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" })).toBe(false)
    expect(Access.fromOtherOrigin("POST", { ...own, "sec-fetch-site": "same-site", "sec-fetch-mode": "navigate" })).toBe(true)
    expect(Access.fromOwnPage({ ...own })).toBe(false)
    expect(Access.fromOwnPage({ ...own, "sec-fetch-site": "same-origin" })).toBe(true)
    expect(Access.fromOwnPage({ ...own, origin: "http://127.0.0.1:4477" })).toBe(true)
    expect(Access.fromOwnPage({ ...own, origin: "http://127.0.0.1:4477", "sec-fetch-site": "same-site" })).toBe(false)
  })

  it("bodies of state-changing requests: JSON or none", () => {
    expect(Access.bodyRefused("POST", { "content-type": "application/json" })).toBe(false)
    expect(Access.bodyRefused("POST", { "content-type": "application/json;charset=utf-8" })).toBe(false)
    expect(Access.bodyRefused("POST", {})).toBe(false)
    expect(Access.bodyRefused("POST", { "content-length": "0" })).toBe(false)
    expect(Access.bodyRefused("POST", { "content-length": "2" })).toBe(true)
    expect(Access.bodyRefused("DELETE", { "content-type": "text/plain" })).toBe(true)
    expect(Access.bodyRefused("PUT", { "content-type": "multipart/form-data; boundary=x" })).toBe(true)
    expect(Access.bodyRefused("GET", { "content-type": "text/plain" })).toBe(false)
  })

  it("credentials: the bearer token, or this port's cookie with this port's secret", () => {
    const headers = (cookie: string) => ({ host: "127.0.0.1:4477", cookie })
    const secret = Redacted.value(Security.sessionSecret(token, "4477"))
    expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: "Bearer the-token-0123456789" })).toBe("bearer")
    expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: `Bearer ${secret}` })).toBeUndefined()
    expect(Access.credential(token, headers(`other=1; effect_agent_session_4477=${secret}`))).toBe("cookie")
    expect(Access.credential(token, headers(`effect_agent_session_4478=${secret}`))).toBeUndefined()
    expect(Access.credential(token, { host: "127.0.0.1:4478", cookie: `effect_agent_session_4478=${secret}` })).toBeUndefined()
    expect(Access.refusal(token, "POST", headers(`effect_agent_session_4477=${secret}`))).toBe("not-own-page")
    // Reads with the cookie need the page's key too (a server on another port of the host receives the cookie).
    const key = Redacted.value(Security.pageKey(token, "4477"))
    for (const method of ["GET", "HEAD"]) {
      expect(Access.refusal(token, method, headers(`effect_agent_session_4477=${secret}`))).toBe("no-page-key")
      expect(Access.refusal(token, method, { ...headers(`effect_agent_session_4477=${secret}`), "x-effect-agent-key": "" })).toBe("no-page-key")
      expect(Access.refusal(token, method, { ...headers(`effect_agent_session_4477=${secret}`), "x-effect-agent-key": secret })).toBe("no-page-key")
      expect(Access.refusal(token, method, { ...headers(`effect_agent_session_4477=${secret}`), "x-effect-agent-key": key })).toBeUndefined()
      expect(Access.refusal(token, method, { host: "127.0.0.1:4477", authorization: "Bearer the-token-0123456789" })).toBeUndefined()
    }
  })

  // Cookies ignore ports: a page on another port of the host may set this port's cookie name with a
  // longer path (`Path=/sessions`), which the browser sends first; the viewer's own cookie follows.
  it("a cookie of the same name tossed ahead of the viewer's does not lock the viewer out; a few values are looked at, not any number", () => {
    const secret = Redacted.value(Security.sessionSecret(token, "4477"))
    const key = Redacted.value(Security.pageKey(token, "4477"))
    const headers = (cookie: string) => ({ host: "127.0.0.1:4477", cookie, "x-effect-agent-key": key })
    expect(Access.refusal(token, "GET", headers(`effect_agent_session_4477=junk; effect_agent_session_4477=${secret}`))).toBeUndefined()
    expect(Access.refusal(token, "GET", headers(`effect_agent_session_4477=${secret}; effect_agent_session_4477=junk`))).toBeUndefined()
    expect(Security.cookieValues("a=1; b=2; a=3;a = 4", "a")).toEqual(["1", "3", "4"])
    const tossed = Array.from({ length: Security.maxCookieValues }, (_, i) => `effect_agent_session_4477=junk${i}`).join("; ")
    expect(Access.refusal(token, "GET", headers(`${tossed}; effect_agent_session_4477=${secret}`))).toBe("unauthorized")
    expect(Access.refusal(token, "GET", headers("effect_agent_session_4477=junk"))).toBe("unauthorized")
  })

  it("the Authorization scheme is case-insensitive (RFC 9110 §11.1); the token is not", () => {
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: `${scheme} the-token-0123456789` }), scheme).toBe("bearer")
    }
    expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: "bearer THE-TOKEN-0123456789" })).toBeUndefined()
    expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: "Basic the-token-0123456789" })).toBeUndefined()
    expect(Access.credential(token, { host: "127.0.0.1:4477", authorization: "Bearerthe-token-0123456789" })).toBeUndefined()
  })
})
