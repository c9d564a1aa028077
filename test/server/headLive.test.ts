/**
 * `HEAD /sessions/:id/live` answers what a GET would (200 and the SSE headers, 404 for an unknown
 * session) and opens no watch: a HEAD has no body to carry events, so none is read or held.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/index.js"
import { Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, workspace } from "./harness.js"

describe("HEAD /sessions/:id/live", () => {
  it.live("answers 200 with the SSE headers and no body, and opens no watch; an unknown session is 404", () =>
    Effect.gen(function*() {
      const { cwd, dataDir } = workspace()
      const watches = { asked: 0, run: 0 }
      // The engine, its watches counted: asked for (the stream made) and run (the feed joined).
      const counted = Layer.map(embedderEngine(dataDir), (context) => {
        const engine = Context.get(context, SessionEngine.SessionEngine)
        return Context.add(context, SessionEngine.SessionEngine, {
          ...engine,
          watchSession: (input) => {
            watches.asked++
            return Stream.onStart(engine.watchSession(input), Effect.sync(() => watches.run++))
          }
        })
      })
      const { dispose, handler } = HttpApiBuilder.toWebHandler(
        Layer.mergeAll(Server.layer(ServerConfig.make({ token: "t0ken-for-head", defaultCwd: cwd })).pipe(Layer.provide(counted)), HttpServer.layerContext)
      )
      const auth = { authorization: "Bearer t0ken-for-head" }
      const created = yield* Effect.promise(() => handler(new Request("http://127.0.0.1/sessions", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{}" })))
      const { sessionId } = (yield* Effect.promise(() => created.json())) as { sessionId: string }
      const head = yield* Effect.promise(() => handler(new Request(`http://127.0.0.1/sessions/${sessionId}/live`, { method: "HEAD", headers: auth })))
      expect(head.status).toBe(200)
      expect(head.headers.get("content-type")).toBe("text/event-stream")
      expect(yield* Effect.promise(() => head.text())).toBe("")
      expect(watches).toEqual({ asked: 0, run: 0 })
      const unknown = yield* Effect.promise(() => handler(new Request("http://127.0.0.1/sessions/sess_nope/live", { method: "HEAD", headers: auth })))
      expect(unknown.status).toBe(404)
      const badResume = yield* Effect.promise(() => handler(new Request(`http://127.0.0.1/sessions/${sessionId}/live`, { method: "HEAD", headers: { ...auth, "last-event-id": "x" } })))
      expect(badResume.status).toBe(400)
      expect(watches).toEqual({ asked: 0, run: 0 })
      yield* Effect.promise(() => dispose())
    }))
})
