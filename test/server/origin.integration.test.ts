/**
 * The server's token stays with its own origin (issue 18, item 8), on the wire: the `Host` a
 * request names (DNS rebinding), where it comes from (`Origin`, `Sec-Fetch-Site`), what its body is
 * (`Content-Type`: JSON only on every state-changing route), and what the viewer's cookie can do
 * (reads; writes only from the viewer's own page). The login form and its rate limit.
 * Chromium runs the same attacks as a page would in browserSecurity.integration.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Redacted from "effect/Redacted"
import { mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { join, resolve } from "node:path"
import { Security } from "../../src/server.js"
import { expectWireError, liveUntil, start, startIn, storedEvents } from "./harness.js"
import { type Answer, cookiePair, send, setCookie } from "./requests.js"

const call = (port: number, path: string, init: Parameters<typeof send>[2] = {}) => Effect.promise(() => send(port, path, init))
const json = "application/json"

/** Logs in with a one-time code, as the URL `serve` prints does: the cookie's `name=value`. */
const loginCookie = (port: number, code: string) =>
  Effect.map(call(port, `/login?code=${code}`), (answer) => {
    expect(answer.status).toBe(303)
    return cookiePair(answer)
  })

const sessionCount = (port: number, token: string) =>
  Effect.map(call(port, "/sessions", { headers: { authorization: `Bearer ${token}` } }), (answer) => (answer.body as Array<unknown>).length)

/**
 * A GET that may answer a stream that does not end (`/live`): its status and its text up to the
 * end, or up to the first chunk holding `until` (then the connection is closed).
 */
const peek = (port: number, path: string, headers: Record<string, string>, until: string) =>
  Effect.promise(() =>
    new Promise<{ readonly status: number; readonly text: string }>((done, fail) => {
      const req = request({ host: "127.0.0.1", port, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (response) => {
        let text = ""
        const finish = () => {
          response.destroy()
          done({ status: response.statusCode ?? 0, text })
        }
        response.setEncoding("latin1")
        response.on("data", (chunk: string) => {
          text += chunk
          if (text.includes(until)) finish()
        })
        response.on("end", finish)
      })
      req.on("error", fail)
      req.end()
    })
  )

const expectForbidden = (answer: Answer, what: string) => {
  expect(answer.status, what).toBe(403)
  expectWireError(answer.body, "Forbidden")
}

describe("the server's token stays with its own origin", () => {
  it.scopedLive("Host must name this server: loopback names and addresses, or a configured host (DNS rebinding is refused)", () =>
    Effect.gen(function*() {
      const { cwd, dataDir, server } = yield* startIn()
      const { port, token } = server
      const bearer = { authorization: `Bearer ${token}` }
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`, "127.0.0.1", `127.0.0.2:${port}`]) {
        expect((yield* call(port, "/sessions", { headers: { host, ...bearer } })).status, host).toBe(200)
      }
      // A name that resolved to 127.0.0.1 (a rebinding attacker's): refused on every route, even with the token and on /healthz.
      for (const host of [`evil.example:${port}`, "evil.example", `127.0.0.1.evil.example:${port}`, `localhost.evil.example:${port}`, `sub.localhost:${port}`, ""]) {
        expectForbidden(yield* call(port, "/healthz", { headers: { host } }), `healthz via ${host}`)
        expectForbidden(yield* call(port, "/sessions", { headers: { host, ...bearer } }), `sessions via ${host}`)
        expectForbidden(yield* call(port, "/login", { headers: { host } }), `login via ${host}`)
        expectForbidden(
          yield* call(port, "/sessions", { method: "POST", headers: { host, ...bearer, "content-type": json }, body: "{}" }),
          `create via ${host}`
        )
      }
      // HTTP/1.1 without a Host at all: Node's server refuses it before any route.
      expect((yield* call(port, "/healthz", { headers: { host: null } })).status).toBe(400)
      expect(yield* sessionCount(port, token)).toBe(0)

      // A host name the operator names (a reverse proxy's) is accepted; others still are not.
      const named = yield* start({ cwd, dataDir: join(dataDir, "named"), allowedHosts: ["agent.internal"] })
      expect((yield* call(named.port, "/healthz", { headers: { host: "agent.internal" } })).status).toBe(200)
      expect((yield* call(named.port, "/healthz", { headers: { host: `Agent.Internal:${named.port}` } })).status).toBe(200)
      expectForbidden(yield* call(named.port, "/healthz", { headers: { host: "evil.example" } }), "unnamed host")
    }))

  it.scopedLive("state-changing routes take JSON only: forms, multipart, text/plain and untyped bodies answer 415", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ responses: [{ chunks: ["slow"], delay: "10 seconds" }] })
      const { port, token } = server
      const bearer = { authorization: `Bearer ${token}` }
      const session = yield* server.client.sessions.create({ payload: {} })
      const refused = [
        { type: "application/x-www-form-urlencoded", body: "cwd=%2F" },
        { type: "multipart/form-data; boundary=x", body: "--x\r\nContent-Disposition: form-data; name=\"cwd\"\r\n\r\n/\r\n--x--\r\n" },
        { type: "text/plain", body: JSON.stringify({ cwd }) },
        { type: "text/plain;charset=UTF-8", body: JSON.stringify({ message: "hi" }) },
        { type: "application/jsonp", body: "{}" },
        { type: null, body: JSON.stringify({ cwd }) }
      ]
      for (const { body, type } of refused) {
        for (const [method, path] of [["POST", "/sessions"], ["POST", `/sessions/${session.sessionId}/turns`], ["POST", `/sessions/${session.sessionId}/followups`]]) {
          const answer = yield* call(port, path!, { method: method!, headers: { ...bearer, "content-type": type }, body })
          expect(answer.status, `${method} ${path} as ${type}`).toBe(415)
          expectWireError(answer.body, "UnsupportedMediaType")
        }
      }
      // A form with no fields has an empty body but still says what it is: refused too; so is a DELETE with a form.
      expect((yield* call(port, `/sessions/${session.sessionId}/cancel`, { method: "POST", headers: { ...bearer, "content-type": "application/x-www-form-urlencoded" }, body: "" })).status).toBe(415)
      expect((yield* call(port, `/sessions/${session.sessionId}/followups`, { method: "DELETE", headers: { ...bearer, "content-type": "text/plain" }, body: "x" })).status).toBe(415)
      expect(yield* sessionCount(port, token)).toBe(1)
      expect((yield* server.client.sessions.get({ path: { id: session.sessionId } })).turnCount).toBe(0)

      // JSON (with a charset, in any case) is taken; a route without a body needs no type at all.
      expect((yield* call(port, "/sessions", { method: "POST", headers: { ...bearer, "content-type": "Application/JSON; charset=utf-8" }, body: "{}" })).status).toBe(201)
      expect((yield* call(port, `/sessions/${session.sessionId}/cancel`, { method: "POST", headers: bearer })).status).toBe(200)
      expect((yield* call(port, `/sessions/${session.sessionId}/compact`, { method: "POST", headers: bearer })).status).toBe(409)
    }))

  it.scopedLive("the viewer's cookie: per port, not the token, opens nothing without the page's key, writes only from the viewer's own page", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port, token } = server
      const login = yield* call(port, `/login?code=${server.config.loginCodes.issue()}`)
      expect(login.status).toBe(303)
      // The viewer's page gets its key in the fragment (never sent to a server); see below.
      const pageKey = /^\/#key=([A-Za-z0-9_-]{43})$/.exec(String(login.headers["location"]))?.[1]
      expect(pageKey).toBeDefined()
      expect(pageKey).not.toContain(token)
      const keyed = { "x-effect-agent-key": pageKey! }
      expect(setCookie(login)).toMatch(new RegExp(`^effect_agent_session_${port}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict$`))
      const cookie = cookiePair(login)
      const secret = cookie.split("=")[1]!
      // A leaked cookie is not the API token: as a bearer it opens nothing.
      expect(secret).not.toBe(token)
      expect(secret).not.toContain(token)
      expect((yield* call(port, "/sessions", { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401)
      // The old, port-less cookie carrying the token itself is no longer a credential; nor is this cookie under another port's name.
      expect((yield* call(port, "/sessions", { headers: { cookie: `effect_agent_token=${token}`, ...keyed } })).status).toBe(401)
      expect((yield* call(port, "/sessions", { headers: { cookie: `effect_agent_session_${port + 1}=${secret}`, ...keyed } })).status).toBe(401)

      // Reads: the page's own fetches carry its key and no Origin, or say same-origin in Sec-Fetch-Site; a navigation
      // to the page is "none" (the page needs no key: a browser sends none when loading it, and it holds no session's data).
      expect((yield* call(port, "/sessions", { headers: { cookie, ...keyed } })).status).toBe(200)
      expect((yield* call(port, "/sessions", { headers: { cookie, ...keyed, "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors" } })).status).toBe(200)
      expect((yield* call(port, "/", { headers: { cookie, "sec-fetch-site": "none", "sec-fetch-mode": "navigate" } })).status).toBe(200)
      // The cookie alone reads no session (the next test has every route).
      expect((yield* call(port, "/sessions", { headers: { cookie } })).status).toBe(401)
      // A page of another port is "same-site" (cookies ignore ports), of another site "cross-site": refused, whatever it loads.
      for (const site of ["same-site", "cross-site"]) {
        for (const mode of ["no-cors", "cors"]) {
          expectForbidden(yield* call(port, "/sessions", { headers: { cookie, ...keyed, "sec-fetch-site": site, "sec-fetch-mode": mode } }), `${site} ${mode}`)
        }
      }
      expectForbidden(yield* call(port, "/sessions", { headers: { cookie, ...keyed, origin: `http://127.0.0.1:${port + 1}` } }), "another port's fetch")

      // Writes with the cookie need the viewer's own Origin (or Sec-Fetch-Site: same-origin) and the page's key.
      const create = (headers: Record<string, string>) =>
        call(port, "/sessions", { method: "POST", headers: { cookie, "content-type": json, ...keyed, ...headers }, body: "{}" })
      expectForbidden(yield* create({}), "no Origin, no Sec-Fetch-Site (not a page of this origin)")
      expectForbidden(yield* create({ origin: `http://127.0.0.1:${port + 1}` }), "another port's Origin")
      expectForbidden(yield* create({ origin: `http://localhost:${port}` }), "the same port under another name")
      expectForbidden(yield* create({ origin: "null" }), "an opaque Origin")
      expectForbidden(yield* create({ origin: `http://127.0.0.1:${port}`, "sec-fetch-site": "same-site" }), "a forged Origin with the browser's own same-site")
      // A server on another port of this host receives the cookie (browsers send a host's cookies to
      // every port) and, outside a browser, can send it back with this server's Origin: without the
      // page's key — which it never sees — it changes nothing.
      for (const [key, why] of [[undefined, "no key"], ["", "an empty key"], [`${pageKey}x`, "a wrong key"], [cookie.split("=")[1]!, "the cookie's value as the key"]] as const) {
        const replayed = yield* call(port, "/sessions", {
          method: "POST",
          headers: { cookie, "content-type": json, origin: `http://127.0.0.1:${port}`, ...(key === undefined ? {} : { "x-effect-agent-key": key }) },
          body: "{}"
        })
        expect(replayed.status, why).toBe(401)
        expectWireError(replayed.body, "Unauthorized")
      }
      expect(yield* sessionCount(port, token)).toBe(0)
      expect((yield* create({ origin: `http://127.0.0.1:${port}` })).status).toBe(201)
      expect((yield* create({ "sec-fetch-site": "same-origin" })).status).toBe(201)
      expect((yield* create({ origin: "null", "sec-fetch-site": "same-origin" })).status).toBe(201)
      // Under another loopback name the cookie is that name's own (browsers keep cookies per host name).
      const viaLocalhost = yield* call(port, `/login?code=${server.config.loginCodes.issue()}`, { headers: { host: `localhost:${port}` } })
      expect((yield* call(port, "/sessions", {
        method: "POST",
        headers: { host: `localhost:${port}`, cookie: cookiePair(viaLocalhost), origin: `http://localhost:${port}`, "content-type": json, ...keyed },
        body: "{}"
      })).status).toBe(201)

      // The bearer token from another origin's page is refused too: no page but the viewer's may drive the API.
      expectForbidden(
        yield* call(port, "/sessions", { method: "POST", headers: { authorization: `Bearer ${token}`, origin: "http://evil.example", "content-type": json }, body: "{}" }),
        "bearer from another origin"
      )
      // And still no CORS header on any answer.
      const preflight = yield* call(port, "/sessions", { method: "OPTIONS", headers: { origin: `http://127.0.0.1:${port + 1}`, "access-control-request-method": "POST" } })
      expect(preflight.headers["access-control-allow-origin"]).toBeUndefined()
      expect(yield* sessionCount(port, token)).toBe(4)
    }))

  it.scopedLive("a replayed cookie reads nothing without the page's key: every session route answers 401 and no session data", () =>
    Effect.gen(function*() {
      // A session holding what a reader should not see: a prompt, an image, a call waiting for approval.
      const { server } = yield* startIn({
        images: true,
        responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "plan.txt", content: "the-written-secret" } }] }]
      })
      const { port, token } = server
      const secretPrompt = "the-secret-prompt-7f3a"
      const png = readFileSync(resolve(import.meta.dirname, "../../fixtures/images/photo.png"))
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: secretPrompt, images: [{ data: png.toString("base64") }] } })
      yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask")
      )
      const message = (yield* storedEvents(server, session.sessionId)).find((e) => e.type === "user.message")!
      const blob = (message.payload as { images: ReadonlyArray<{ blob: string }> }).images[0]!.blob

      // What a server on another port of 127.0.0.1 receives from the browser: the cookie, not the key.
      const login = yield* call(port, `/login?code=${server.config.loginCodes.issue()}`)
      const pageKey = /#key=(.*)$/.exec(String(login.headers["location"]))![1]!
      const cookie = cookiePair(login)
      const id = session.sessionId
      // Each read route, with what its answer holds of the session when it answers.
      const reads: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
        ["/sessions", {}, secretPrompt],
        ["/sessions?search=secret", {}, secretPrompt],
        [`/sessions/${id}`, {}, "plan.txt"],
        [`/sessions/${id}/events`, {}, secretPrompt],
        [`/sessions/${id}/events?after=0`, { accept: "application/x-ndjson" }, secretPrompt],
        [`/sessions/${id}/live`, { accept: "text/event-stream" }, secretPrompt],
        [`/sessions/${id}/live?after=0`, {}, secretPrompt],
        [`/sessions/${id}/blobs/${blob}`, {}, "PNG"]
      ]
      const otherPortKey = Redacted.value(Security.pageKey(Redacted.make(token), String(port + 1)))
      const replays: ReadonlyArray<readonly [string | undefined, string]> = [
        [undefined, "no key"],
        ["", "an empty key"],
        [`${pageKey}x`, "a wrong key"],
        [pageKey.slice(0, -1), "a cut key"],
        [cookie.split("=")[1]!, "the cookie's value as the key"],
        [otherPortKey, "another port's key"]
      ]
      // Outside a browser it can say it is anything: no Origin, the viewer's own, Sec-Fetch-Site same-origin.
      const disguises: ReadonlyArray<Record<string, string>> = [{}, { origin: `http://127.0.0.1:${port}` }, { "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors" }]
      for (const [path, extra, holds] of reads) {
        for (const [key, why] of replays) {
          for (const disguise of disguises) {
            const headers = { cookie, ...extra, ...disguise, ...(key === undefined ? {} : { "x-effect-agent-key": key }) }
            const answer = yield* peek(port, path, headers, holds)
            const what = `${path} with ${why} ${JSON.stringify(disguise)}`
            expect(answer.status, what).toBe(401)
            expectWireError(JSON.parse(answer.text), "Unauthorized")
            expect(answer.text, what).not.toContain(holds)
            expect(answer.text, what).not.toContain(id)
          }
        }
        // HEAD says nothing either; and the key is taken from its header only, never from the URL.
        expect((yield* call(port, path, { method: "HEAD", headers: { cookie, ...extra } })).status, `HEAD ${path}`).toBe(401)
        const inQuery = yield* peek(port, `${path}${path.includes("?") ? "&" : "?"}key=${pageKey}`, { cookie, ...extra }, holds)
        expect(inQuery.status, `${path} with the key in its URL`).toBe(401)
        // The viewer's page sends the key: it reads; the bearer token reads as before.
        const keyed = yield* peek(port, path, { cookie, ...extra, "x-effect-agent-key": pageKey }, holds)
        expect(keyed.status, `${path} with the page's key`).toBe(200)
        expect(keyed.text, `${path} with the page's key`).toContain(holds)
        expect((yield* peek(port, path, { authorization: `Bearer ${token}`, ...extra }, holds)).status, `${path} with the token`).toBe(200)
      }
      // What the page needs to start, and holds no session data, opens with the cookie alone (or with nothing).
      for (const path of ["/", "/viewer.js", "/login", "/login.js", "/healthz"]) {
        const answer = yield* call(port, path, { headers: { cookie } })
        expect(answer.status, path).toBe(200)
        expect(answer.text, path).not.toContain(id)
        expect(answer.text, path).not.toContain(secretPrompt)
      }
      // The OpenAPI document (no session data, but the page does not need it) asks the cookie for the key too.
      expect((yield* call(port, "/openapi.json", { headers: { cookie } })).status).toBe(401)
      expect((yield* call(port, "/openapi.json", { headers: { cookie, "x-effect-agent-key": `${pageKey}x` } })).status).toBe(401)
      expect((yield* call(port, "/openapi.json", { headers: { cookie, "x-effect-agent-key": pageKey } })).status).toBe(200)
      expect((yield* call(port, "/openapi.json", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
      // Nothing was answered meanwhile: the call still waits.
      expect((yield* server.client.sessions.get({ path: { id } })).pendingApprovals).toHaveLength(1)
    }))

  it.scoped("/login?code=…: a code signs in once, within 10 minutes (on the TestClock); an expired one is refused and the page says so", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port } = server
      const issue = Effect.map(Clock.currentTimeMillis, (now) => server.config.loginCodes.issue(now))
      const signsIn = (answer: Answer) => {
        expect(answer.status).toBe(303)
        expect(setCookie(answer)).toMatch(new RegExp(`^effect_agent_session_${port}=`))
      }
      const refused = (answer: Answer, note: string, code: string) => {
        expect(answer.status).toBe(401)
        expect(setCookie(answer)).toBeUndefined()
        expect(answer.headers["location"]).toBeUndefined()
        // The sign-in form, with a note that says why; nothing of the code.
        expect(answer.text).toContain(`<form id="login"`)
        expect(answer.text).toContain(note)
        expect(answer.text).not.toContain(code)
      }
      // A fresh code signs in once.
      const fresh = yield* issue
      signsIn(yield* call(port, `/login?code=${fresh}`))
      refused(yield* call(port, `/login?code=${fresh}`), "That one-time URL was used already", fresh)
      // A second before its time is up it still does.
      const late = yield* issue
      yield* TestClock.adjust(Duration.millis(Security.loginCodeLifetimeMillis - 1000))
      signsIn(yield* call(port, `/login?code=${late}`))
      // Read later from a terminal's scrollback, after its 10 minutes: refused, and used up by the attempt.
      const old = yield* issue
      yield* TestClock.adjust("10 minutes")
      refused(yield* call(port, `/login?code=${old}`), "That one-time URL has expired", old)
      refused(yield* call(port, `/login?code=${old}`), "That one-time URL was used already", old)
      // A new code works.
      signsIn(yield* call(port, `/login?code=${yield* issue}`))
    }))

  it.scoped("/login: a form that takes the token, same-origin only, JSON only, rate limited (on the TestClock)", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port, token } = server
      const own = { origin: `http://127.0.0.1:${port}`, "content-type": json }
      const page = yield* call(port, "/login")
      expect(page.status).toBe(200)
      expect(page.text).toContain(`<form id="login"`)
      expect(page.text).toContain(`<script type="module" src="/login.js">`)
      expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
      const script = yield* call(port, "/login.js")
      expect(script.status).toBe(200)
      expect(script.headers["content-type"]).toContain("javascript")
      // Without the token, / shows the same form (401).
      const root = yield* call(port, "/")
      expect(root.status).toBe(401)
      expect(root.text).toContain(`<form id="login"`)

      // Login CSRF: another page cannot sign the browser in (to a session of its choosing or at all).
      expectForbidden(yield* call(port, "/login", { method: "POST", headers: { "content-type": json }, body: JSON.stringify({ token }) }), "no Origin")
      expectForbidden(yield* call(port, "/login", { method: "POST", headers: { ...own, origin: `http://127.0.0.1:${port + 1}` }, body: JSON.stringify({ token }) }), "another port")
      expect((yield* call(port, "/login", { method: "POST", headers: { origin: own.origin, "content-type": "application/x-www-form-urlencoded" }, body: `token=${token}` })).status).toBe(415)
      const malformed = yield* call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ code: 1 }) })
      expect(malformed.status).toBe(400)
      expectWireError(malformed.body, "BadRequest")

      const right = yield* call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token }) })
      expect(right.status).toBe(204)
      // The sign-in form's script gets the page's key from its answer (the one-time URL's is in its fragment).
      expect(right.headers["x-effect-agent-key"]).toBe(/#key=(.*)$/.exec(String((yield* call(port, `/login?code=${server.config.loginCodes.issue()}`)).headers["location"]))?.[1])
      expect(setCookie(right)).toMatch(new RegExp(`^effect_agent_session_${port}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict$`))
      expect((yield* call(port, "/sessions", { headers: { cookie: cookiePair(right), "x-effect-agent-key": String(right.headers["x-effect-agent-key"]) } })).status).toBe(200)
      expect(cookiePair(right)).toBe(yield* loginCookie(port, server.config.loginCodes.issue()))

      // A wrong token: 401, then every wrong one waits (never the right token), each twice as long.
      const wrong = yield* call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token: `${token}x` }) })
      expect(wrong.status).toBe(401)
      expectWireError(wrong.body, "Unauthorized")
      expect(setCookie(wrong)).toBeUndefined()
      const throttled = yield* call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token: `${token}y` }) })
      expect(throttled.status).toBe(429)
      expectWireError(throttled.body, "TooManyRequests")
      expect(Number(throttled.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      expect(setCookie(throttled)).toBeUndefined()
      // The one-time URL is not throttled: it is the way in that `serve` prints, and its codes cannot be guessed.
      expect((yield* call(port, `/login?code=${server.config.loginCodes.issue()}`)).status).toBe(303)

      // The right token works during the wait too (and clears the count); wrong ones double the wait each time.
      const attempt = (given: string) => call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token: given }) })
      expect((yield* attempt(token)).status).toBe(204)
      const waits: Array<string | undefined> = []
      for (let n = 0; n < 5; n++) {
        expect((yield* attempt("guess")).status).toBe(401)
        const refused = yield* attempt("guess")
        expect(refused.status).toBe(429)
        waits.push(refused.headers["retry-after"] as string)
        yield* TestClock.adjust(`${Number(refused.headers["retry-after"])} seconds`)
      }
      expect(waits).toEqual(["1", "2", "4", "8", "16"])
      expect((yield* attempt(token)).status).toBe(204)
      expect((yield* attempt("guess")).status).toBe(401)
      expect((yield* attempt("guess")).headers["retry-after"]).toBe("1")
      expect((yield* attempt(token)).status).toBe(204)
    }))

  it.scopedLive("a 100k-deep JSON body answers 400 with a reason (arrays and objects), not 500 with nothing", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ maxBodyBytes: 1024 * 1024 })
      const { port, token } = server
      const session = yield* server.client.sessions.create({ payload: {} })
      const headers = { authorization: `Bearer ${token}`, "content-type": json }
      const depth = 100_000
      const bodies = [
        "[".repeat(depth) + "]".repeat(depth),
        `{"cwd":${"[".repeat(depth)}${"]".repeat(depth)}}`,
        `{"cwd":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`,
        `{"message":${'{"a":['.repeat(depth / 2)}1${"]}".repeat(depth / 2)}}`
      ]
      for (const path of ["/sessions", `/sessions/${session.sessionId}/turns`]) {
        for (const body of bodies) {
          const answer = yield* call(port, path, { method: "POST", headers, body })
          expect(answer.status, `${path} ${body.slice(0, 12)}`).toBe(400)
          expectWireError(answer.body, "BadRequest")
        }
      }
      // Brackets inside strings are text, not nesting: this one is shallow, and only its type is wrong.
      const shallow = yield* call(port, `/sessions/${session.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: 1, note: "[".repeat(depth) }) })
      expect(shallow.status).toBe(400)
      expect((shallow.body as { message: string }).message).not.toMatch(/nested/)
      const deep = yield* call(port, "/sessions", { method: "POST", headers, body: bodies[0]! })
      expect((deep.body as { message: string }).message).toMatch(/nested/)
      expect(yield* sessionCount(port, token)).toBe(1)
      // Nesting a real client sends passes the depth check: decoded, and refused only for the field the route does not take.
      const nested = yield* call(port, "/sessions", { method: "POST", headers, body: JSON.stringify({ cwd, extra: [[[[{ a: [1] }]]]] }) })
      expect(nested.status).toBe(400)
      expect((nested.body as { message: string }).message).toContain('"extra"')
      expect((nested.body as { message: string }).message).not.toMatch(/nested/)
      expect((yield* call(port, "/sessions", { method: "POST", headers, body: JSON.stringify({ cwd }) })).status).toBe(201)
    }))

  it.scopedLive("cwd: relative, '../../', missing or a file answers 400 with a reason; a link is stored as the directory it names", () =>
    Effect.gen(function*() {
      const { cwd, root, server } = yield* startIn()
      const { port, token } = server
      const headers = { authorization: `Bearer ${token}`, "content-type": json }
      writeFileSync(join(root, "a-file"), "x")
      mkdirSync(join(cwd, "proj"))
      const cases: Array<[string, RegExp]> = [
        ["proj", /absolute/],
        ["../../", /absolute/],
        ["./", /absolute/],
        ["/does/not/exist", /does not exist/],
        [join(root, "a-file"), /not a directory/],
        [`${cwd}\u0000/x`, /cwd/]
      ]
      for (const [given, reason] of cases) {
        const answer = yield* call(port, "/sessions", { method: "POST", headers, body: JSON.stringify({ cwd: given }) })
        expect(answer.status, given).toBe(400)
        expectWireError(answer.body, "BadRequest")
        expect((answer.body as { message: string }).message, given).toMatch(reason)
      }
      expect(yield* sessionCount(port, token)).toBe(0)
      // `..` and links are resolved once, when the session is created: a later driver cannot land elsewhere.
      symlinkSync(join(cwd, "proj"), join(root, "link"))
      for (const given of [join(root, "link"), `${cwd}/proj/../proj/`, join(root, "link", ".")]) {
        const answer = yield* call(port, "/sessions", { method: "POST", headers, body: JSON.stringify({ cwd: given }) })
        expect(answer.status, given).toBe(201)
        expect((answer.body as { cwd: string }).cwd, given).toBe(realpathSync(join(cwd, "proj")))
      }
    }))
})
