/**
 * The page's key in the server's traces: `@effect/platform` makes a span of every request, with each
 * of its headers and its answer's as attributes (`http.request.header.<name>`), leaving out only the
 * names it is told are secret (`authorization`, `cookie`, `set-cookie` by default). An embedder who
 * exports traces would have sent the viewer's key — what now opens every session with the cookie — to
 * its trace store: from a request that carried it, and from the sign-in form's answer that hands it
 * out. Here a tracer that keeps every span sees the server answer the viewer's requests.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Tracer from "effect/Tracer"
import { Security, Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, workspace } from "./harness.js"
import { cookiePair, send } from "./requests.js"

/** A tracer that makes spans as Effect's own does, and keeps them. */
const keeping = Effect.map(Effect.tracer, (native) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: (f) => f()
  })
  return { tracer, spans }
})

/** A server with a tracer that keeps every span, on a fresh workspace: what each case reads. */
const tracedServer = Effect.gen(function*() {
  const { cwd, dataDir } = workspace()
  const token = "trace-token-0123456789"
  const config = ServerConfig.make({ token, defaultCwd: cwd })
  const { spans, tracer } = yield* keeping
  const context = yield* Layer.build(Server.serve(config, { port: 0 }).pipe(Layer.provide(embedderEngine(dataDir, { responses: [] })), Layer.provide(Layer.setTracer(tracer))))
  const url = yield* Effect.provide(Server.url, context)
  const port = Number(new URL(url).port)
  const key = Redacted.value(Security.pageKey(Redacted.make(token), String(port)))
  return { config, key, port, spans, token, url }
})

describe("the page's key in the server's traces", () => {
  it.scopedLive("no span of the server holds the page's key, the cookie or the token, whichever request carried or answered them", () =>
    Effect.gen(function*() {
      const { key, port, spans, token, url } = yield* tracedServer

      // The sign-in form hands out the key (in its answer's header); the page reads and writes with it.
      const own = { origin: url, "content-type": "application/json" }
      const signIn = yield* Effect.promise(() => send(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token }) }))
      expect(signIn.headers["x-effect-agent-key"]).toBe(key)
      const cookie = cookiePair(signIn)
      expect((yield* Effect.promise(() => send(port, "/sessions", { headers: { cookie, "x-effect-agent-key": key } }))).status).toBe(200)
      expect((yield* Effect.promise(() => send(port, "/sessions", { method: "POST", headers: { ...own, cookie, "x-effect-agent-key": key }, body: "{}" }))).status).toBe(201)
      expect((yield* Effect.promise(() => send(port, "/sessions", { headers: { authorization: `Bearer ${token}` } }))).status).toBe(200)

      const server = spans.filter((span) => span.kind === "server")
      expect(server.length).toBeGreaterThanOrEqual(4)
      // The header is named, its value is not there.
      expect(server.some((span) => span.attributes.has("http.request.header.x-effect-agent-key"))).toBe(true)
      expect(server.some((span) => span.attributes.has("http.response.header.x-effect-agent-key"))).toBe(true)
      const secret = cookie.split("=")[1]!
      for (const span of server) {
        for (const [name, value] of span.attributes) {
          for (const [what, given] of [["the page's key", key], ["the cookie", secret], ["the token", token]] as const) {
            expect(String(value), `${span.name} ${name} holds ${what}`).not.toContain(given)
          }
        }
      }
    }))

  it.scopedLive("the one-time sign-in URL's answer (`location: /#key=…`) leaves the page's key out of the server's spans; pages send a cross-origin opener policy (review 54)", () =>
    Effect.gen(function*() {
      const { config, key, port, spans } = yield* tracedServer
      const answer = yield* Effect.promise(() => send(port, `/login?code=${config.loginCodes.issue()}`))
      expect(answer.status).toBe(303)
      expect(answer.headers["location"]).toBe(`/#key=${key}`)
      const server = spans.filter((span) => span.kind === "server")
      expect(server.length).toBeGreaterThanOrEqual(1)
      for (const span of server) {
        for (const [name, value] of span.attributes) expect(String(value), `${span.name} ${name}`).not.toContain(key)
      }
      // A page that opened the viewer (`window.open`) keeps no handle to its window.
      for (const path of ["/login", "/"]) {
        expect((yield* Effect.promise(() => send(port, path))).headers["cross-origin-opener-policy"], path).toBe("same-origin")
      }
    }))
})
