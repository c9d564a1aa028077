/**
 * A read on an engine that does not hold a session's writer lock answers the log as it is when the
 * read is made, not as it was when that engine loaded the session: another engine (another process,
 * or a second engine on the same store) may have written since. The reader catches up with only the
 * events appended since its load — counted by a store wrapper — on every store.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir, testTools } from "../helpers.js"
import { counting, storesOf } from "./countedStores.js"

const stores = storesOf("stale")

/** A write tool the default policy asks about, and the model's script (shared by every engine: each takes the next response). */
const setUp = (store: EventStore.Service, script: FakeModelProvider.Options) =>
  Effect.gen(function*() {
    const counted = counting(store)
    const ports = yield* Layer.build(Layer.mergeAll(
      Layer.succeed(EventStore, counted.service),
      FakeModelProvider.layer({ record: true, ...script }),
      IdGenerator.layerSequential,
      testTools({ save: { risk: "write", run: () => Effect.succeed({ result: "saved" }) } }),
      PermissionPolicy.layer()
    ))
    const engine = Effect.provide(SessionEngine.make(), ports)
    /** Runs `f` on an engine of its own, which then closes (its writer lock released), as a process that exits. */
    const elsewhere = <A, E>(f: (engine: SessionEngine.SessionEngine.Service) => Effect.Effect<A, E>) =>
      Effect.flatMap(Scope.make(), (scope) =>
        Effect.flatMap(Scope.extend(engine, scope), f).pipe(Effect.onExit(() => Scope.close(scope, Exit.void))))
    // Two engines living through the test, as two processes on one store.
    const reader = yield* engine
    const writer = yield* engine
    return { counted, elsewhere, reader, writer }
  })

const turn = (engine: SessionEngine.SessionEngine.Service, sessionId: string, userMessage: string) =>
  collect(engine.runTurn({ sessionId, userMessage }))

/** Runs a turn in the background until the policy asks about its call: the turn's id and the call's. */
const pausedOnAsk = (engine: SessionEngine.SessionEngine.Service, sessionId: string) =>
  Effect.gen(function*() {
    const asked = yield* Deferred.make<string>()
    yield* engine.runTurn({ sessionId, userMessage: "save it" }).pipe(
      Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
      Stream.runDrain,
      Effect.forkDaemon
    )
    return yield* Deferred.await(asked)
  })

/** The state a full load of the log gives. */
const replayed = (store: EventStore.Service, sessionId: string) =>
  Effect.map(collect(store.read(sessionId)), (events) => Either.getOrThrow(SessionState.replay(events)))

const asks = { responses: [{ chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] }, { chunks: ["Saved."] }] }

describe.each(stores)("a read on an engine without the writer lock (%s)", (_name, makeStore) => {
  it.scoped("answers the state another engine wrote since the load, reading only the events appended since", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { counted, reader, writer } = yield* setUp(store, {})
      const { sessionId } = yield* writer.createSession({ cwd: "/w", client: "test" })
      yield* turn(writer, sessionId, "one")
      // Loaded to be read: the writer keeps its lock.
      expect(yield* reader.sessionState({ sessionId })).toEqual(yield* replayed(store, sessionId))
      const appended = yield* turn(writer, sessionId, "two")
      counted.reset()
      const state = yield* reader.sessionState({ sessionId })
      expect(state).toEqual(yield* replayed(store, sessionId))
      expect(counted.read()).toBe(appended.length)
      // Nothing new: nothing read but the empty rest.
      counted.reset()
      expect(yield* reader.sessionState({ sessionId })).toEqual(state)
      expect(counted.read()).toBe(0)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("lists a call another engine's turn waits on, asked after the load", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { reader, writer } = yield* setUp(store, asks)
      const { sessionId } = yield* writer.createSession({ cwd: "/w", client: "test" })
      expect(yield* reader.pendingApprovals({ sessionId })).toEqual([])
      const asked = yield* pausedOnAsk(writer, sessionId)
      expect((yield* reader.pendingApprovals({ sessionId })).map((call) => call.toolCallId)).toEqual([asked])
      expect((yield* reader.sessionState({ sessionId })).openTurn?.turnId).toBeDefined()
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("cancels a turn another engine left paused after the load", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { elsewhere, reader } = yield* setUp(store, asks)
      const sessionId = yield* elsewhere((engine) => Effect.map(engine.createSession({ cwd: "/w", client: "test" }), (s) => s.sessionId))
      expect((yield* reader.sessionState({ sessionId })).openTurn).toBeUndefined()
      // The other engine's turn pauses on the call, then that engine exits: the turn stays paused in the log.
      yield* elsewhere((engine) => pausedOnAsk(engine, sessionId))
      yield* reader.cancelTurn({ sessionId })
      const log = yield* collect(store.read(sessionId))
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
      expect((yield* reader.sessionState({ sessionId })).openTurn).toBeUndefined()
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("answers a call another engine left paused after the load, reading the log's new end once", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { counted, elsewhere, reader } = yield* setUp(store, asks)
      const sessionId = yield* elsewhere((engine) => Effect.map(engine.createSession({ cwd: "/w", client: "test" }), (s) => s.sessionId))
      const before = (yield* reader.sessionState({ sessionId })).lastSequence
      const asked = yield* elsewhere((engine) => pausedOnAsk(engine, sessionId))
      const appended = (yield* collect(store.read(sessionId))).length - before
      counted.reset()
      yield* reader.resolvePermission({ sessionId, toolCallId: asked, decision: "allow" })
      // One look at the log's end (its last sequence where the store tells it), one read of what was appended.
      expect([counted.tails() <= 1, counted.reads(), counted.read()]).toEqual([true, 1, appended])
      const log = yield* collect(store.read(sessionId))
      expect(log.at(-1)).toMatchObject({ type: "permission.resolved", payload: { toolCallId: asked, decision: "allow", actor: "user" } })
      expect(log.length).toBe(before + appended + 1)
      expect(yield* reader.sessionState({ sessionId })).toEqual(yield* replayed(store, sessionId))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("an answer another engine holding the session stored already, given again with its key: done, though the session is busy", () =>
    Effect.gen(function*() {
      const store = yield* makeStore
      const { reader, writer } = yield* setUp(store, asks)
      const { sessionId } = yield* writer.createSession({ cwd: "/w", client: "test" })
      expect((yield* reader.sessionState({ sessionId })).openTurn).toBeUndefined()
      const asked = yield* pausedOnAsk(writer, sessionId)
      const answer = { sessionId, toolCallId: asked, decision: "deny" as const, idempotencyKey: "key-1" }
      yield* writer.resolvePermission(answer)
      // Once the writer's turn has stored it.
      yield* Effect.repeat(collect(store.read(sessionId)), {
        until: (log) => log.some((e) => e.type === "permission.resolved" && e.payload.actor === "user"),
        schedule: Schedule.spaced("10 millis")
      })
      // The writer keeps the session (its lock): the reader cannot write, but the answer is given.
      yield* reader.resolvePermission(answer)
      const other = yield* Effect.either(reader.resolvePermission({ ...answer, idempotencyKey: "key-2" }))
      expect(Either.isLeft(other) && other.left._tag).toBe("SessionBusy")
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("a read on an engine without the writer lock, on JSONL", () => {
  it.scoped("with nothing appended since, the log is not read: its last line tells", () =>
    Effect.gen(function*() {
      const store = yield* JsonlEventStore.make({ dataDir: yield* tempDir })
      const { counted, reader, writer } = yield* setUp(store, {})
      const { sessionId } = yield* writer.createSession({ cwd: "/w", client: "test" })
      yield* turn(writer, sessionId, "one")
      yield* reader.sessionState({ sessionId })
      counted.reset()
      expect(yield* reader.sessionState({ sessionId })).toEqual(yield* replayed(store, sessionId))
      expect(counted.reads()).toBe(0)
      // Something appended: read on from the reader's last sequence.
      const appended = yield* turn(writer, sessionId, "two")
      expect(yield* reader.sessionState({ sessionId })).toEqual(yield* replayed(store, sessionId))
      expect([counted.reads(), counted.read()]).toEqual([1, appended.length])
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("a watch of a session another engine writes, on JSONL", () => {
  it.scopedLive("a poll with nothing appended reads no log: its last line tells; an append is read on from the watcher's end", () =>
    Effect.gen(function*() {
      const store = yield* JsonlEventStore.make({ dataDir: yield* tempDir })
      const counted = counting(store)
      const ports = yield* Layer.build(Layer.mergeAll(Layer.succeed(EventStore, counted.service), FakeModelProvider.layer({}), IdGenerator.layerSequential))
      const writer = yield* Effect.provide(SessionEngine.make(), ports)
      const watcher = yield* Effect.provide(SessionEngine.make({ watchPollInterval: "5 millis" }), ports)
      const { sessionId } = yield* writer.createSession({ cwd: "/w", client: "test" })
      yield* turn(writer, sessionId, "one")
      const stored = (yield* collect(store.read(sessionId))).length
      const seen: Array<number> = []
      yield* watcher.watchSession({ sessionId }).pipe(Stream.runForEach((e) => Effect.sync(() => seen.push(e.sequence))), Effect.forkScoped)
      const until = (done: () => boolean) => Effect.repeat(Effect.void, { until: done, schedule: Schedule.spaced("5 millis") })
      yield* until(() => seen.length === stored)
      // Polls with nothing new: each looks at the log's end, none reads the log.
      counted.reset()
      yield* until(() => counted.tails() + counted.reads() >= 5)
      expect(counted.reads()).toBe(0)
      const appended = yield* turn(writer, sessionId, "two")
      yield* until(() => seen.length === stored + appended.length)
      expect(seen).toEqual(Array.from({ length: stored + appended.length }, (_, i) => i + 1))
      expect(counted.read()).toBe(appended.length)
    }).pipe(Effect.provide(NodeContext.layer)))
})
