import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { withJumpingClock } from "../clockJumps.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"

/**
 * Two engines on one store: `a` with the options under test, `b` a second process in effect. A
 * session `a` still holds refuses `b` (SessionBusy); one `a` has let go is `b`'s to drive.
 */
const twoEngines = (options: SessionEngine.Options, model: FakeModelProvider.Options = {}, tools: Layer.Layer<never> = Layer.empty) =>
  Effect.gen(function*() {
    const a = yield* SessionEngine.make(options)
    const b = yield* SessionEngine.make()
    return { a, b }
  }).pipe(
    Effect.provide(Layer.mergeAll(
      Layer.effect(EventStore, MemoryEventStore.make),
      FakeModelProvider.layer(model),
      IdGenerator.layerSequential,
      tools
    ))
  )

const drivable = (engine: SessionEngine.SessionEngine.Service, sessionId: string) =>
  Effect.map(Effect.either(collect(engine.runTurn({ sessionId, userMessage: "mine?" }))), (result) =>
    Either.isRight(result) ? "ok" : result.left._tag)

describe("the engine's sessions in memory", () => {
  it.scoped("beyond maxLiveSessions the least recently used idle session is let go, with its writer lock; used again, it is reloaded from the store", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoEngines({ maxLiveSessions: 2 })
      const s1 = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
      const s2 = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
      // Both held: the other engine may not drive them.
      expect(yield* drivable(b, s1)).toBe("SessionBusy")
      yield* a.sessionState({ sessionId: s1 }) // s1 is now the most recently used
      yield* a.createSession({ cwd: "/w", client: "test" })
      // s2 was the least recently used: let go, its lock released.
      expect(yield* drivable(b, s2)).toBe("ok")
      expect(yield* drivable(b, s1)).toBe("SessionBusy")
      // a loads s2 again from the store and sees b's turn; writing needs the lock b holds now.
      expect((yield* a.sessionState({ sessionId: s2 })).turnCount).toBe(1)
      expect(yield* drivable(a, s2)).toBe("SessionBusy")
      expectWellFormedLog(yield* collect(a.replaySession({ sessionId: s2 })))
    }))

  it.scoped("a session idle for idleTimeout is let go; one whose turn runs is kept however long it runs", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoEngines({ idleTimeout: "1 minute" }, { responses: [{ chunks: ["x"] }, { chunks: ["slow"], delay: "10 minutes" }] })
      const idle = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
      const busy = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
      yield* collect(a.runTurn({ sessionId: idle, userMessage: "one" }))
      const started = yield* Deferred.make<void>()
      const running = yield* a.runTurn({ sessionId: busy, userMessage: "slow" }).pipe(
        Stream.tap((e) => e.type === "turn.started" ? Deferred.succeed(started, undefined) : Effect.void),
        collect,
        Effect.fork
      )
      yield* Deferred.await(started)
      yield* TestClock.adjust("5 minutes")
      expect(yield* drivable(b, idle)).toBe("ok")
      expect(yield* drivable(b, busy)).toBe("SessionBusy")
      yield* TestClock.adjust("1 hour")
      const events = yield* Fiber.join(running)
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expect(events.filter((e) => e.type === "model.delta").map((e) => e.payload.text)).toEqual(["slow"])
    }))

  it.scoped("a session waiting in memory for the user's answer is never let go", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoEngines({ maxLiveSessions: 1, idleTimeout: "1 minute" }, { responses: [{ toolCalls: [{ tool: "nothing", args: {} }] }] }, testTools({ nothing: { run: () => Effect.succeed({ result: "done" }) } }))
      const waiting = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
      const asked = yield* Deferred.make<string>()
      const turn = yield* a.runTurn({ sessionId: waiting, userMessage: "go" }).pipe(
        // No permission engine: the default asks the user about every call, and the turn waits.
        Stream.runForEach((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
        Effect.fork
      )
      yield* Deferred.await(asked)
      yield* a.createSession({ cwd: "/w", client: "test" })
      yield* TestClock.adjust("1 hour")
      expect(yield* drivable(b, waiting)).toBe("SessionBusy")
      yield* Fiber.interrupt(turn)
    }))
})

describe("the engine's sessions in memory, across a jump of the wall clock", () => {
  it.scoped("a session idle for idleTimeout is let go (its writer lock released) when the wall clock stepped back an hour meanwhile", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const { a, b } = yield* twoEngines({ idleTimeout: "1 minute" })
        const idle = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
        yield* collect(a.runTurn({ sessionId: idle, userMessage: "one" }))
        yield* jump(-60 * 60 * 1000)
        yield* TestClock.adjust("2 minutes")
        expect(yield* drivable(b, idle)).toBe("ok")
      })
    ))

  it.scoped("a session used a moment ago is kept when the wall clock steps forward a day", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const { a, b } = yield* twoEngines({ idleTimeout: "10 minutes" })
        const held = (yield* a.createSession({ cwd: "/w", client: "test" })).sessionId
        yield* collect(a.runTurn({ sessionId: held, userMessage: "one" }))
        yield* jump("1 day")
        yield* TestClock.adjust("5 minutes")
        expect(yield* drivable(b, held)).toBe("SessionBusy")
      })
    ))
})
