/**
 * Turns through the engine that every provider over the wire server must get right, shared by the
 * vendor adapters' tests and the @effect/ai bridge's: the caller queues the recordings first.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect } from "../helpers.js"
import type * as WireServer from "./WireServer.js"

/** Waits until the server has seen one more connection closed by the client than `before`. */
export const untilClosed = (server: WireServer.WireServer, before: number) =>
  Effect.promise(async () => {
    while (server.clientClosed() === before) await new Promise((done) => setImmediate(done))
  })

/** A turn on a new session whose `model.retry` waits are driven by the `TestClock`; its events. */
export const turnWithRetries = (userMessage: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    return yield* engine.runTurn({ sessionId, userMessage }).pipe(
      Stream.tap((e) => e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void),
      collect
    )
  })

/**
 * A turn cancelled at its first delta (the queued recording stalls after it): the turn's events, once
 * the server has seen the connection closed.
 */
export const cancelledAtFirstDelta = (server: WireServer.WireServer) =>
  Effect.gen(function*() {
    const before = server.clientClosed()
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    const turn = yield* engine.runTurn({ sessionId, userMessage: "hello" }).pipe(
      Stream.tap((e) => e.type === "model.delta" ? engine.cancelTurn({ sessionId }) : Effect.void),
      collect,
      Effect.fork
    )
    const events = yield* Fiber.join(turn)
    yield* untilClosed(server, before)
    return { events, closed: server.clientClosed() - before }
  })
