/**
 * Every answer of the server says what it is and that it is to be taken as that (audit 3, item 1):
 * `X-Content-Type-Options: nosniff` on the JSON API, its errors, the NDJSON and SSE streams, not
 * only on the viewer's pages and images. The API's answers carry text the model and the tools wrote
 * (`<script>` included); a browser that guessed HTML for one opened in a tab would run it as the
 * server's own page, where the viewer's cookie works. No answer carries a CORS header; the pages
 * say where they may load from, that they are not framed, and keep their address from other sites
 * (an integration test: the pages are the built ones, in dist/).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { startIn } from "./harness.js"
import { send } from "./requests.js"

describe("response headers", () => {
  it.scopedLive("nosniff on every answer, no CORS header on any", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["<script>alert(1)</script>"] }] })
      const { port, token } = server
      const bearer = { authorization: `Bearer ${token}` }
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "<img src=x onerror=alert(1)>" } })
      const id = session.sessionId
      const json = { ...bearer, "content-type": "application/json" }
      const requests: ReadonlyArray<readonly [string, string, Parameters<typeof send>[2]]> = [
        ["health", "/healthz", {}],
        ["list", "/sessions", { headers: bearer }],
        ["state", `/sessions/${id}`, { headers: bearer }],
        ["events", `/sessions/${id}/events`, { headers: bearer }],
        ["ndjson", `/sessions/${id}/events`, { headers: { ...bearer, accept: "application/x-ndjson" } }],
        ["unauthorized", "/sessions", {}],
        ["not found", "/nothing/<script>", { headers: bearer }],
        ["no session", "/sessions/%3Cscript%3E", { headers: bearer }],
        ["bad request", "/sessions", { method: "POST", headers: json, body: "{" }],
        ["not json", "/sessions", { method: "POST", headers: { ...bearer, "content-type": "text/plain" }, body: "x" }],
        ["forbidden", "/sessions", { headers: { ...bearer, origin: "http://evil.example" } }],
        ["preflight", "/sessions", { method: "OPTIONS", headers: { origin: "http://evil.example", "access-control-request-method": "POST" } }],
        ["openapi", "/openapi.json", { headers: bearer }]
      ]
      for (const [name, path, init] of requests) {
        const answer = yield* Effect.promise(() => send(port, path, init))
        expect(answer.headers["x-content-type-options"], name).toBe("nosniff")
        expect(Object.keys(answer.headers).filter((h) => h.startsWith("access-control-")), name).toEqual([])
      }
      // The pages: their own scripts only, never framed, their address (which holds no token: the
      // one-time code is spent and redirected from) never sent to another site.
      for (const [name, path] of [["viewer", "/"], ["sign-in", "/login"]] as const) {
        const page = yield* Effect.promise(() => send(port, path, { headers: bearer }))
        expect(page.status, name).toBe(200)
        expect(page.headers["referrer-policy"], name).toBe("same-origin")
        expect(page.headers["content-security-policy"], name).toMatch(/default-src 'none'; script-src 'self';.*frame-ancestors 'none'/)
        // Images from its own origin and the blob: URLs its script made of what it fetched; no data: URL (the page makes none).
        expect(page.headers["content-security-policy"], name).toContain("img-src 'self' blob:;")
        expect(page.headers["x-frame-options"], name).toBe("DENY")
      }
      const code = yield* Effect.promise(() => send(port, `/login?code=${server.config.loginCodes.issue()}`))
      expect(code.status).toBe(303)
      expect(code.headers["location"]).toMatch(/^\/#key=[A-Za-z0-9_-]{43}$/)

      // The live stream's headers, read without waiting for its end.
      const live = yield* Effect.promise(() =>
        fetch(`${server.url}/sessions/${id}/live?after=0`, { headers: bearer }).then(async (response) => {
          const headers = Object.fromEntries(response.headers)
          await response.body?.cancel()
          return headers
        }))
      expect(live["content-type"]).toMatch(/^text\/event-stream/)
      expect(live["x-content-type-options"]).toBe("nosniff")
    }))
})
