import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect, expectWellFormedLog, jsonlEngine, memoryEngine, tempDir, typesOf } from "../helpers.js"

describe("SessionEngine", () => {
  it.effect("createSession stores session.created first and returns the session read from it", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const session = yield* engine.createSession({ cwd: "/work", client: "cli" })
      const log = yield* collect(engine.replaySession({ sessionId: session.sessionId }))
      expect(log).toHaveLength(1)
      expect(log[0]!.type).toBe("session.created")
      expect(session).toEqual({ sessionId: log[0]!.sessionId, cwd: "/work", client: "cli", createdAt: log[0]!.timestamp })
    }).pipe(Effect.provide(memoryEngine())))

  it.effect("replay returns exactly the events runTurn emitted", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const first = yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      const second = yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      expect(log.slice(1)).toEqual([...first, ...second])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a"] }, { chunks: ["b", "c"] }] }))))

  it.effect("runTurn while a turn runs fails TurnInProgress and the running turn is unaffected", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const running = yield* engine.runTurn({ sessionId, userMessage: "slow" }).pipe(collect, Effect.fork)
      yield* TestClock.adjust("50 millis")
      const second = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "fast" })))
      expect(Either.isLeft(second) && second.left._tag).toBe("TurnInProgress")
      expect(Either.isLeft(second) && second.left).toMatchObject({ sessionId, turnId: "turn_1" })
      yield* TestClock.adjust("1 second")
      const events = yield* Fiber.join(running)
      expect(typesOf(events)).toEqual(["turn.started", "user.message", "model.delta", "model.delta", "turn.completed"])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a", "b"], delay: 100 }] }))))

  it.effect("an empty user message is a typed validation error and stores nothing", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const userMessage of ["", "   \n\t"]) {
        const result = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage })))
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "InvalidInput", field: "userMessage" })
      }
      expect(yield* collect(engine.replaySession({ sessionId }))).toHaveLength(1)
      const badCwd = yield* Effect.either(engine.createSession({ cwd: " ", client: "test" }))
      expect(Either.isLeft(badCwd) && badCwd.left._tag).toBe("InvalidInput")
      // A relative cwd would mean whatever directory a later driver runs in: refused, and nothing is stored.
      for (const cwd of ["proj", "../../", "./", "~/proj", "C:proj"]) {
        const relative = yield* Effect.either(engine.createSession({ cwd, client: "test" }))
        expect(Either.isLeft(relative) && relative.left, cwd).toMatchObject({ _tag: "InvalidInput", field: "cwd", detail: "must be an absolute path" })
      }
      for (const cwd of ["/work", "C:\\work", "D:/work", "\\\\server\\share"]) {
        expect((yield* engine.createSession({ cwd, client: "test" })).cwd).toBe(cwd)
      }
      expect(yield* engine.listSessions).toHaveLength(5)
    }).pipe(Effect.provide(memoryEngine())))

  it.effect("an unknown session is SessionNotFound for runTurn, replay and state; cancel does nothing", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      for (const sessionId of ["sess_missing", "../../etc/passwd"]) {
        const run = yield* Effect.either(collect(engine.runTurn({ sessionId, userMessage: "hi" })))
        expect(Either.isLeft(run) && run.left).toMatchObject({ _tag: "SessionNotFound", sessionId })
        const replay = yield* Effect.either(collect(engine.replaySession({ sessionId })))
        expect(Either.isLeft(replay) && replay.left._tag).toBe("SessionNotFound")
        const state = yield* Effect.either(engine.sessionState({ sessionId }))
        expect(Either.isLeft(state) && state.left._tag).toBe("SessionNotFound")
        yield* engine.cancelTurn({ sessionId })
      }
    }).pipe(Effect.provide(memoryEngine())))

  it.effect("a running turn's state and phase are visible while it runs", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const running = yield* engine.runTurn({ sessionId, userMessage: "slow" }).pipe(collect, Effect.fork)
      yield* TestClock.adjust("150 millis")
      const during = yield* engine.sessionState({ sessionId })
      expect(during.openTurn?.status).toEqual({ state: "running", phase: "model_streaming" })
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(running)
      const after = yield* engine.sessionState({ sessionId })
      expect(after.openTurn).toBeUndefined()
      expect(after.lastTurn).toMatchObject({ turnId: "turn_1", stopReason: "final" })
      expect(after.turnCount).toBe(1)
    }).pipe(Effect.provide(memoryEngine({ responses: [{ chunks: ["a", "b"], delay: 100 }] }))))

  it.scoped("100 sessions running turns concurrently keep complete, gap-free logs of their own events", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const sessions = yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), () =>
          engine.createSession({ cwd: "/work", client: "test" }), { concurrency: "unbounded" })
        // Real file I/O interleaves the sessions' appends; no delays are needed for that.
        yield* Effect.forEach(sessions, ({ sessionId }, i) =>
          Effect.forEach([1, 2], (n) => collect(engine.runTurn({ sessionId, userMessage: `session ${i} turn ${n}` }))), { concurrency: "unbounded" })
        for (const [i, { sessionId }] of sessions.entries()) {
          const log = yield* collect(engine.replaySession({ sessionId }))
          expectWellFormedLog(log)
          expect(log.every((e) => e.sessionId === sessionId)).toBe(true)
          const said = log.filter((e) => e.type === "user.message").map((e) => e.payload.content)
          expect(said).toEqual([`session ${i} turn 1`, `session ${i} turn 2`])
          expect(log.filter((e) => e.type === "turn.completed")).toHaveLength(2)
        }
        expect((yield* engine.listSessions).length).toBe(100)
      }).pipe(Effect.provide(jsonlEngine(dataDir, { responses: Array.from({ length: 200 }, () => ({ chunks: ["x", "y", "z"] })) })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("the stream ends right after turn.completed", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello there" }))
      expect(events.at(-1)!.type).toBe("turn.completed")
      expect(events.filter((e) => e.type === "model.delta").map((e) => e.payload.text).join("")).toBe("Echo: hello there")
      expect(events.every((e) => e.type !== "session.created")).toBe(true)
      const stream = engine.runTurn({ sessionId, userMessage: "x".repeat(200) })
      const started = yield* Stream.runHead(stream)
      expect(started._tag === "Some" && started.value.type === "turn.started" && started.value.payload.promptPreview).toBe("x".repeat(80))
    }).pipe(Effect.provide(memoryEngine())))
})
