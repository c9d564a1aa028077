/**
 * Review 54, the daily surfaces' audit. Four holes in what the server reads and says before a
 * request has shown it may:
 * - A request with only the viewer's cookie (no page key) had its body read and held — up to 32 MiB
 *   on a turn's route, for up to the request timeout — before it was refused: the guard read bodies
 *   for any request with a credential, and the cookie alone counted, though it opens nothing
 *   without the key. Whoever receives the cookie (a program on another port of 127.0.0.1 the browser
 *   visits — docs/security.md) could make the server hold GiBs. Now such a request is refused unread,
 *   as one with no credential is.
 * - The sign-in form's 4 KiB limit was chosen by the raw URL (`/login`), while the router also sends
 *   `/LOGIN`, `/login/`, `//login` and `/%6Cogin` to the form's handler: there a stranger's body was
 *   read up to the general 1 MiB. The handler now bounds its own body.
 * (The one-time sign-in URL's answer in the server's spans, and the pages' opener policy: in
 * traceRedaction.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { connect } from "node:net"
import { Security } from "../../src/server.js"
import { startIn } from "./harness.js"
import { cookiePair, send } from "./requests.js"

/**
 * The status line the server answers a request whose headers promise `declared` bytes while only
 * the first MiB is sent. A server that reads the body waits for the rest and never answers: the test
 * then fails at vitest's timeout (no deadline of its own — a busy machine can be later than any guess).
 */
const answerToPartialBody = (port: number, path: string, declared: number, headers: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    socket.on("error", reject)
    let answer = ""
    socket.on("data", (chunk) => {
      answer += String(chunk)
      const end = answer.indexOf("\r\n")
      if (end >= 0) {
        resolve(answer.slice(0, end))
        socket.destroy()
      }
    })
    socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n${headers}\r\n`)
    socket.write(Buffer.alloc(1024 * 1024, 0x61))
  })

describe("what the server reads and says before a request has shown it may (review 54)", () => {
  it.scopedLive("a request with the viewer's cookie but not the page's key is refused unread, as one with no credential", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port, token, url } = server
      const signIn = yield* Effect.promise(() =>
        send(port, "/login", { method: "POST", headers: { origin: url, "content-type": "application/json" }, body: JSON.stringify({ token }) })
      )
      expect(signIn.status).toBe(204)
      const cookie = cookiePair(signIn)
      const session = yield* server.client.sessions.create({ payload: {} })
      const turns = `/sessions/${session.sessionId}/turns`
      const declared = 32 * 1024 * 1024 - 16
      expect(yield* Effect.promise(() => answerToPartialBody(port, turns, declared, ""))).toMatch(/^HTTP\/1\.1 401/)
      // Refused before its body: 403 without the page's origin, 401 without the page's key.
      expect(yield* Effect.promise(() => answerToPartialBody(port, turns, declared, `Cookie: ${cookie}\r\n`))).toMatch(/^HTTP\/1\.1 403/)
      expect(yield* Effect.promise(() => answerToPartialBody(port, turns, declared, `Cookie: ${cookie}\r\nOrigin: ${url}\r\n`))).toMatch(/^HTTP\/1\.1 401/)
      // With the key, the page's own request is read as before (and refused as too large only by its length).
      const key = Redacted.value(Security.pageKey(Redacted.make(token), String(port)))
      const small = yield* Effect.promise(() =>
        send(port, turns, { method: "POST", headers: { origin: url, cookie, "x-effect-agent-key": key, "content-type": "application/json" }, body: JSON.stringify({ message: "hi" }) })
      )
      expect(small.status).toBe(202)
    }), 60_000)

  it.scopedLive("every path the router sends to the sign-in form keeps the form's 4 KiB limit", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port, url } = server
      const body = JSON.stringify({ token: "x".repeat(64 * 1024) })
      for (const path of ["/login", "/LOGIN", "/login/", "//login", "/%6Cogin", "/login;x"]) {
        const answer = yield* Effect.promise(() =>
          send(port, path, { method: "POST", headers: { origin: url, "content-type": "application/json" }, body })
        )
        expect([413, 404], `POST ${path} → ${answer.status} ${answer.text.slice(0, 80)}`).toContain(answer.status)
      }
    }), 60_000)
})
