import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Exit from "effect/Exit"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, expectWellFormedLog, tempDir, testTools, typesOf } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })

/** A tool that runs until the test opens its gate, and says when it has started. */
const gated = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  testTools({
    wait: { run: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Deferred.await(gate)), Effect.as({ result: "waited" })) }
  })

const waitCall = { toolCalls: [{ tool: "wait", args: {} }] }

/** The session's events until `turns` turns have completed, from the store then live. */
const untilTurns = (sessionId: string, turns: number) =>
  Effect.flatMap(SessionEngine, (engine) => {
    let completed = 0
    return collect(engine.watchSession({ sessionId }).pipe(
      Stream.takeUntil((e) => e.type === "turn.completed" && ++completed === turns)
    ))
  })

/** Each turn of a log: its queueId (if any), its user message and how it ended. */
const turnsOf = (log: ReadonlyArray<AgentEvent>) => {
  const turns: Array<{ queueId?: string | undefined; message?: string; stopReason?: string }> = []
  for (const e of log) {
    if (e.type === "turn.started") turns.push({ queueId: e.payload.queueId })
    if (e.type === "user.message") turns.at(-1)!.message = e.payload.content
    if (e.type === "turn.completed") turns.at(-1)!.stopReason = e.payload.stopReason
  }
  return turns
}

/** Runs `body` with a turn started on a gated tool: the tool is running when `body` runs. */
const withGatedTurn = (
  model: FakeModelProvider.Options,
  body: (args: { readonly sessionId: string; readonly gate: Deferred.Deferred<void>; readonly turn: Fiber.RuntimeFiber<ReadonlyArray<AgentEvent>, unknown> }) => Effect.Effect<void, unknown, SessionEngine>
) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const gate = yield* Deferred.make<void>()
    yield* Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
      yield* Deferred.await(started)
      yield* body({ sessionId, gate, turn })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, model).pipe(Layer.provideMerge(gated(started, gate)), Layer.provideMerge(allowAll))))
  })

describe("follow-ups", () => {
  it.effect("run in order as their own turns after a final turn; the running turn's stream ends as today", () =>
    withGatedTurn({ responses: [waitCall, { chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] }, ({ gate, sessionId, turn }) =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const a = yield* engine.followUp({ sessionId, message: "second" })
        const b = yield* engine.followUp({ sessionId, message: "third" })
        expect((yield* engine.sessionState({ sessionId })).followUps.map((f) => f.queueId)).toEqual([a.queueId, b.queueId])
        yield* Deferred.succeed(gate, undefined)
        const emitted = yield* Fiber.join(turn)
        // The first turn's stream ends with its own turn.completed; it never carries a follow-up's events.
        expect(emitted.at(-1)!.type).toBe("turn.completed")
        expect(new Set(emitted.map((e) => "turnId" in e ? e.turnId : undefined)).size).toBe(1)
        const log = yield* untilTurns(sessionId, 3)
        expect(turnsOf(log)).toEqual([
          { queueId: undefined, message: "first", stopReason: "final" },
          { queueId: a.queueId, message: "second", stopReason: "final" },
          { queueId: b.queueId, message: "third", stopReason: "final" }
        ])
        expect(typesOf(log).filter((t) => t === "followup.queued")).toHaveLength(2)
        expectWellFormedLog(log)
        expect((yield* engine.sessionState({ sessionId })).followUps).toEqual([])
      })))

  it.effect("run after a cancelled turn: cancelTurn cancels the running turn only", () =>
    withGatedTurn({ responses: [waitCall, { chunks: ["two"] }] }, ({ sessionId, turn }) =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { queueId } = yield* engine.followUp({ sessionId, message: "second" })
        yield* engine.cancelTurn({ sessionId })
        yield* Fiber.join(turn)
        const log = yield* untilTurns(sessionId, 2)
        expect(turnsOf(log)).toEqual([
          { queueId: undefined, message: "first", stopReason: "cancelled" },
          { queueId, message: "second", stopReason: "final" }
        ])
        expectWellFormedLog(log)
      })))

  it.effect("run after a turn that ended with an error", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const done = yield* Deferred.make<string>()
      // Queued while the first turn streams; the model then fails it.
      yield* collect(engine.runTurn({ sessionId, userMessage: "first" }).pipe(
        Stream.tap((e) =>
          e.type === "model.delta"
            ? Effect.flatMap(engine.followUp({ sessionId, message: "second" }), ({ queueId }) => Deferred.succeed(done, queueId))
            : Effect.void
        )
      ))
      const queueId = yield* Deferred.await(done)
      const log = yield* untilTurns(sessionId, 2)
      expect(turnsOf(log)).toEqual([
        { queueId: undefined, message: "first", stopReason: "error" },
        { queueId, message: "second", stopReason: "final" }
      ])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [{ chunks: ["a", "b"], failure: { reason: "authentication", afterChunks: 1 } }, { chunks: ["ok"] }]
    }))))

  it.effect("queued on an idle session: runs at once; dropFollowUps drops the queued ones, never the running turn", () =>
    withGatedTurn({ responses: [waitCall, { chunks: ["two"] }] }, ({ gate, sessionId, turn }) =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const a = yield* engine.followUp({ sessionId, message: "dropped one" })
        const b = yield* engine.followUp({ sessionId, message: "dropped two" })
        // Named: only those still queued of the ones named; nothing stored when none is.
        expect(yield* engine.dropFollowUps({ sessionId, queueIds: ["fu_unknown"] })).toEqual({ queueIds: [] })
        expect(yield* engine.dropFollowUps({ sessionId, queueIds: [b.queueId] })).toEqual({ queueIds: [b.queueId] })
        expect(yield* engine.dropFollowUps({ sessionId })).toEqual({ queueIds: [a.queueId] })
        expect(yield* engine.dropFollowUps({ sessionId })).toEqual({ queueIds: [] })
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(turn)
        // Idle now: a follow-up starts at once.
        const c = yield* engine.followUp({ sessionId, message: "kept" })
        const log = yield* untilTurns(sessionId, 2)
        expect(turnsOf(log)).toEqual([
          { queueId: undefined, message: "first", stopReason: "final" },
          { queueId: c.queueId, message: "kept", stopReason: "final" }
        ])
        expect(log.filter((e) => e.type === "followup.dropped").map((e) => e.payload)).toEqual([{ queueIds: [b.queueId] }, { queueIds: [a.queueId] }])
        expect((yield* Effect.flip(engine.followUp({ sessionId, message: " " })))._tag).toBe("InvalidInput")
        expectWellFormedLog(log)
      })))

  it.scoped("a queue left by a process that stopped runs when the session is next driven (a new engine on the same store)", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const first = JsonlEventStore.layer({ dataDir })
      // Process 1: queues two follow-ups while a turn runs, then stops before any of them runs.
      const { queued, sessionId } = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        const a = yield* engine.followUp({ sessionId, message: "second" })
        const b = yield* engine.followUp({ sessionId, message: "third" })
        return { sessionId, queued: [a.queueId, b.queueId] }
      }).pipe(Effect.provide(engineLayer(first, { responses: [waitCall] }).pipe(Layer.provideMerge(gated(started, gate)), Layer.provideMerge(allowAll))))
      // Process 2: the next turn runs the queue first; its own stream carries only its own turn.
      const log = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const emitted = yield* collect(engine.runTurn({ sessionId, userMessage: "fourth" }))
        expect(turnsOf(emitted)).toEqual([{ queueId: undefined, message: "fourth", stopReason: "final" }])
        return yield* collect(engine.replaySession({ sessionId }))
      }).pipe(Effect.provide(engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [{ chunks: ["2"] }, { chunks: ["3"] }, { chunks: ["4"] }] })))
      expect(turnsOf(log)).toEqual([
        { queueId: undefined, message: "first", stopReason: "cancelled" },
        { queueId: queued[0], message: "second", stopReason: "final" },
        { queueId: queued[1], message: "third", stopReason: "final" },
        { queueId: undefined, message: "fourth", stopReason: "final" }
      ])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("cancelling a queued turn that runs before a new one cancels that turn only: the new turn still runs", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const sessionId = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        yield* engine.followUp({ sessionId, message: "queued" })
        return sessionId
      }).pipe(Effect.provide(engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [waitCall] }).pipe(Layer.provideMerge(gated(started, gate)), Layer.provideMerge(allowAll))))
      // Process 2: the queued follow-up runs first and blocks in its tool; it is cancelled.
      const started2 = yield* Deferred.make<void>()
      const log = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "new" })).pipe(Effect.fork)
        yield* Deferred.await(started2)
        yield* engine.cancelTurn({ sessionId })
        const emitted = yield* Fiber.join(turn)
        expect(turnsOf(emitted)).toEqual([{ queueId: undefined, message: "new", stopReason: "final" }])
        return yield* collect(engine.replaySession({ sessionId }))
      }).pipe(Effect.provide(
        engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [{ toolCalls: [{ tool: "wait", args: {}, id: "call_in_process_2" }] }, { chunks: ["new answer"] }] }).pipe(
          Layer.provideMerge(gated(started2, yield* Deferred.make<void>())),
          Layer.provideMerge(allowAll)
        )
      ))
      expect(turnsOf(log).map((t) => [t.message, t.stopReason])).toEqual([["first", "cancelled"], ["queued", "cancelled"], ["new", "final"]])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the consumer going away while a queued turn runs first: that turn is cancelled and its own turn never starts", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const sessionId = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        yield* engine.followUp({ sessionId, message: "queued" })
        return sessionId
      }).pipe(Effect.provide(engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [waitCall] }).pipe(Layer.provideMerge(gated(started, gate)), Layer.provideMerge(allowAll))))
      // Process 2: the queued follow-up runs first and blocks in its tool; the new turn's consumer leaves.
      const started2 = yield* Deferred.make<void>()
      const log = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "new" })).pipe(Effect.fork)
        yield* Deferred.await(started2)
        yield* Fiber.interrupt(turn)
        return yield* collect(engine.replaySession({ sessionId }))
      }).pipe(Effect.provide(
        engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [{ toolCalls: [{ tool: "wait", args: {}, id: "call_in_process_2" }] }, { chunks: ["new answer"] }] }).pipe(
          Layer.provideMerge(gated(started2, yield* Deferred.make<void>())),
          Layer.provideMerge(allowAll)
        )
      ))
      expect(turnsOf(log).map((t) => [t.message, t.stopReason])).toEqual([["first", "cancelled"], ["queued", "cancelled"]])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("a cancel and a shutdown together: the turn closes cancelled and the run stops there, its queue left in the log", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // A tool that runs until interrupted, then holds the turn's steps in its finalizer until the test releases them.
      const held = testTools({
        wait: {
          run: () =>
            Deferred.succeed(started, undefined).pipe(
              Effect.zipRight(Effect.never),
              Effect.onInterrupt(() => Effect.zipRight(Deferred.succeed(interrupted, undefined), Deferred.await(release)))
            )
        }
      })
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [waitCall, { chunks: ["never asked"] }] }).pipe(Layer.provideMerge(held), Layer.provideMerge(allowAll)),
        scope
      )
      const { queueId, sessionId } = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        const { queueId } = yield* engine.followUp({ sessionId, message: "second" })
        // The cancel reaches the steps (the tool is interrupted and holds them); then the engine shuts down.
        yield* engine.cancelTurn({ sessionId }).pipe(Effect.fork)
        yield* Deferred.await(interrupted)
        return { queueId, sessionId }
      }).pipe(Effect.provide(context))
      const stop = yield* Effect.fork(Scope.close(scope, Exit.void))
      // The shutdown's interruption is on its way to the run before the steps end.
      yield* Effect.sleep("50 millis")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(stop)
      // Another process: the first turn ended cancelled, the run stopped for the shutdown, and the follow-up waits in the log.
      const { followUps, log } = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        return { log: yield* collect(engine.replaySession({ sessionId })), followUps: (yield* engine.sessionState({ sessionId })).followUps }
      }).pipe(Effect.provide(engineLayer(JsonlEventStore.layer({ dataDir }), {})))
      expect(turnsOf(log)).toEqual([{ queueId: undefined, message: "first", stopReason: "cancelled" }])
      expect(followUps.map((f) => f.queueId)).toEqual([queueId])
      expectWellFormedLog(log)
    }).pipe(Effect.provide(NodeContext.layer)))
})
