/**
 * Messages applied once (issue 24, item 2): a follow-up, a steer or an answer to an approval sent
 * with an idempotency key is stored with it, and the same message sent again — to the same engine
 * or, after a restart, to another one reading the same log — is answered from the log instead of
 * being applied twice. A steer waiting for its step boundary is recognised before it is stored; a
 * key already used by another message is refused; old logs without keys read as before.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import { layer as sessionEngineLayer, SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, expectWellFormedLog, tempDir, testTools } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })

/** A tool that runs until the test opens its gate, and says when it has started. */
const gated = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  testTools({
    wait: { run: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Deferred.await(gate)), Effect.as({ result: "waited" })) },
    note: { risk: "write", run: () => Effect.succeed({ result: "noted" }) }
  })

/** An engine with random ids: several engines on one log, as several processes, never repeat an id. */
const engineOn = <E, R>(store: Layer.Layer<EventStore, E, R>, model: FakeModelProvider.Options = {}) =>
  sessionEngineLayer().pipe(
    Layer.provideMerge(store),
    Layer.provideMerge(FakeModelProvider.layer(model)),
    Layer.provideMerge(IdGenerator.layer)
  )

const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))

/** The events of one type in a log. */
const ofType = <T extends AgentEvent.EventType>(log: ReadonlyArray<AgentEvent.AgentEvent>, type: T) =>
  log.filter((e): e is AgentEvent.EventOfType<T> => e.type === type)

describe("idempotency keys", () => {
  it.scoped("a follow-up sent again with its key, to the same engine or to a new one on the same log, is queued once and answers the same queueId", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = JsonlEventStore.layer({ dataDir })
      const model = { responses: [{ chunks: ["one"] }, { chunks: ["two"] }] }
      const first = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const queued = yield* engine.followUp({ sessionId, message: "later", idempotencyKey: "key-1" })
        // Sent again to the same engine (a caller retrying): the same follow-up.
        expect(yield* engine.followUp({ sessionId, message: "later", idempotencyKey: "key-1" })).toEqual(queued)
        yield* collect(engine.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed")))
        return { sessionId, queued }
      }).pipe(Effect.provide(engineLayer(store, model)))
      // Another process (a cluster's next owner) reads the log: the key is in it.
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        expect(yield* engine.followUp({ sessionId: first.sessionId, message: "later", idempotencyKey: "key-1" })).toEqual(first.queued)
        const log = yield* replay(first.sessionId)
        expectWellFormedLog(log)
        expect(ofType(log, "followup.queued").map((e) => e.payload)).toEqual([{ queueId: first.queued.queueId, content: "later", idempotencyKey: "key-1" }])
        expect(ofType(log, "turn.started")).toHaveLength(1)
        // Without a key, or with another, a follow-up is a new one.
        const other = yield* engine.followUp({ sessionId: first.sessionId, message: "later", idempotencyKey: "key-2" })
        expect(other.queueId).not.toBe(first.queued.queueId)
      }).pipe(Effect.provide(engineLayer(store, { responses: [{ chunks: ["three"] }] })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("a follow-up its first process stored and never started starts when sent again", () =>
    Effect.gen(function*() {
      const store = yield* EventStore
      const at = "2026-01-01T00:00:00.000Z"
      yield* store.append({ id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } })
      yield* store.append({ id: "e2", sessionId: "s", sequence: 2, timestamp: at, type: "followup.queued", payload: { queueId: "q1", content: "later", idempotencyKey: "k" } })
      const engine = yield* SessionEngine
      expect(yield* engine.followUp({ sessionId: "s", message: "later", idempotencyKey: "k" })).toEqual({ queueId: "q1" })
      const log = yield* collect(engine.watchSession({ sessionId: "s" }).pipe(Stream.takeUntil((e) => e.type === "turn.completed")))
      expectWellFormedLog(log)
      expect(ofType(log, "followup.queued")).toHaveLength(1)
      expect(ofType(log, "turn.started").map((e) => e.payload.queueId)).toEqual(["q1"])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["done"] }] }))))

  it.effect("the same follow-up sent twice at once, the second while the first is being stored, is queued once", () =>
    Effect.gen(function*() {
      const appending = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The store holds a follow-up's append until the test lets it go: the second delivery comes meanwhile.
      const held = Layer.effect(
        EventStore,
        Effect.map(EventStore, (store) => ({
          ...store,
          appendAll: (events: Parameters<typeof store.appendAll>[0]) =>
            events.some((e) => e.type === "followup.queued")
              ? Deferred.succeed(appending, undefined).pipe(Effect.zipRight(Deferred.await(release)), Effect.zipRight(store.appendAll(events)))
              : store.appendAll(events)
        }))
      ).pipe(Layer.provideMerge(MemoryEventStore.layer))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const first = yield* Effect.fork(engine.followUp({ sessionId, message: "later", idempotencyKey: "k" }))
        yield* Deferred.await(appending)
        const second = yield* Effect.fork(engine.followUp({ sessionId, message: "later", idempotencyKey: "k" }))
        yield* Deferred.succeed(release, undefined)
        const queued = yield* Fiber.join(first)
        expect(yield* Fiber.join(second)).toEqual(queued)
        yield* collect(engine.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed")))
        const log = yield* replay(sessionId)
        expectWellFormedLog(log)
        expect(ofType(log, "followup.queued").map((e) => e.payload.queueId)).toEqual([queued.queueId])
      }).pipe(Effect.provide(engineLayer(held, { responses: [{ chunks: ["done"] }, { chunks: ["again"] }] })))
    }))

  it.effect("a steer sent again is stored once, in the turn it was sent to: recognised while it waits for the step boundary, after it is stored, and after the turn ended", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const model = { responses: [{ toolCalls: [{ tool: "wait", args: {} }] }, { chunks: ["steered"] }, { chunks: ["next"] }] }
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const turn = yield* collect(engine.runTurn({ sessionId, userMessage: "go" })).pipe(Effect.fork)
        yield* Deferred.await(started)
        yield* engine.steer({ sessionId, message: "use tabs", idempotencyKey: "steer-1" })
        // Not stored yet (the tool still runs): the second delivery is recognised all the same.
        yield* engine.steer({ sessionId, message: "use tabs", idempotencyKey: "steer-1" })
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(turn)
        // The turn has ended: the steer is answered from the log, not refused with NoTurnInProgress.
        yield* engine.steer({ sessionId, message: "use tabs", idempotencyKey: "steer-1" })
        // Nor is it steered into the next turn.
        const next = yield* engine.runTurn({ sessionId, userMessage: "again" }).pipe(
          Stream.tap((e) => e.type === "turn.started" ? engine.steer({ sessionId, message: "use tabs", idempotencyKey: "steer-1" }) : Effect.void),
          collect
        )
        expect(next.map((e) => e.type)).not.toContain("turn.steered")
        const log = yield* replay(sessionId)
        expectWellFormedLog(log)
        expect(ofType(log, "turn.steered").map((e) => e.payload)).toEqual([{ content: "use tabs", idempotencyKey: "steer-1" }])
        // A steer with no key still fails when no turn runs.
        expect(yield* Effect.flip(engine.steer({ sessionId, message: "late" }))).toMatchObject({ _tag: "NoTurnInProgress" })
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, model).pipe(Layer.provideMerge(gated(started, gate)), Layer.provideMerge(allowAll))))
    }))

  it.scoped("an answer to an approval sent again succeeds and is stored once, from a waiting driver or from the log; a key reused for another call is refused", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const dataDir = yield* tempDir
      const store = JsonlEventStore.layer({ dataDir })
      const note = (id: string) => ({ toolCalls: [{ tool: "note", args: { text: "x" }, id }] })
      const model = { responses: [note("call_a"), { chunks: ["noted"] }] }
      const sessionId = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        // The default permissions ask about every call: the turn waits for the answer.
        const events = yield* engine.runTurn({ sessionId, userMessage: "note it" }).pipe(
          Stream.tap((e) =>
            e.type === "permission.resolved" && e.payload.decision === "ask"
              ? Effect.fork(Effect.gen(function*() {
                yield* engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow", idempotencyKey: "answer-1" })
                // Handed to the waiting call, maybe not stored yet: the same answer again is recognised.
                yield* engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow", idempotencyKey: "answer-1" })
              }).pipe(Effect.orDie))
              : Effect.void
          ),
          collect
        )
        const toolCallId = ofType(events, "model.tool_call_requested")[0]!.payload.toolCallId
        // After the turn: answered from the log.
        yield* engine.resolvePermission({ sessionId, toolCallId, decision: "allow", idempotencyKey: "answer-1" })
        // Without a key, a second answer is refused as before.
        expect(yield* Effect.flip(engine.resolvePermission({ sessionId, toolCallId, decision: "allow" }))).toMatchObject({ _tag: "ApprovalNotPending" })
        return sessionId
      }).pipe(Effect.provide(engineOn(store, model).pipe(Layer.provideMerge(gated(started, gate)))))

      // A second turn paused in the log, answered by a process that then stops before resuming it;
      // the same answer reaches the next process (the turn's new driver).
      const toolCallId = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        // Consumed by a daemon: the engine's shutdown (not a consumer leaving) stops the turn, which stays paused.
        const fromSequence = (yield* engine.sessionState({ sessionId })).lastSequence + 1
        yield* Effect.forkDaemon(Stream.runDrain(engine.runTurn({ sessionId, userMessage: "note again" })))
        const paused = yield* collect(engine.watchSession({ sessionId, fromSequence }).pipe(
          Stream.takeUntil((e) => e.type === "permission.resolved" && e.payload.decision === "ask")
        ))
        return ofType(paused, "model.tool_call_requested").at(-1)!.payload.toolCallId
      }).pipe(Effect.provide(engineOn(store, { responses: [note("call_b")] }).pipe(Layer.provideMerge(gated(started, gate)))))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId, decision: "deny", idempotencyKey: "answer-2" })
      }).pipe(Effect.provide(engineOn(store).pipe(Layer.provideMerge(gated(started, gate)))))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* engine.resolvePermission({ sessionId, toolCallId, decision: "deny", idempotencyKey: "answer-2" })
        // A key given with one call's answer is not another call's.
        expect(yield* Effect.flip(engine.resolvePermission({ sessionId, toolCallId: "call_other", decision: "deny", idempotencyKey: "answer-2" }))).toMatchObject({
          _tag: "InvalidInput",
          field: "idempotencyKey"
        })
        yield* collect(engine.resumeTurn({ sessionId }))
        const log = yield* replay(sessionId)
        expectWellFormedLog(log)
        const answers = ofType(log, "permission.resolved").filter((e) => e.payload.actor === "user")
        expect(answers.map((e) => [e.payload.decision, e.payload.idempotencyKey])).toEqual([["allow", "answer-1"], ["deny", "answer-2"]])
        expect(ofType(log, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["permission_denied"])
      }).pipe(Effect.provide(engineOn(store, { responses: [{ chunks: ["ok"] }] }).pipe(Layer.provideMerge(gated(started, gate)))))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("a key used by one kind of message is refused for another", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* engine.followUp({ sessionId, message: "later", idempotencyKey: "shared" })
      expect(yield* Effect.flip(engine.steer({ sessionId, message: "now", idempotencyKey: "shared" }))).toMatchObject({ _tag: "InvalidInput", field: "idempotencyKey" })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["one"] }] }))))
})

describe("the fold's memory of keys", () => {
  const created: AgentEvent.AgentEvent = { id: "e1", sessionId: "s", sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/w", client: "test" } }
  const queued = (sequence: number, key?: string): AgentEvent.AgentEvent => ({
    id: `e${sequence}`,
    sessionId: "s",
    sequence,
    timestamp: "2026-01-01T00:00:00.000Z",
    type: "followup.queued",
    payload: key === undefined ? { queueId: `q${sequence}`, content: "x" } : { queueId: `q${sequence}`, content: "x", idempotencyKey: key }
  })

  it("remembers the most recent keys, and a log without keys (an old one) remembers none", () => {
    const events = [created, ...Array.from({ length: SessionState.rememberedKeys + 10 }, (_, i) => queued(i + 2, `k${i}`))]
    const state = Either.getOrThrow(SessionState.replay(events))!
    expect(state.applied).toHaveLength(SessionState.rememberedKeys)
    expect(SessionState.findApplied(state, "k0")).toBeUndefined()
    expect(SessionState.findApplied(state, `k${SessionState.rememberedKeys + 9}`)).toEqual({
      _tag: "FollowUpQueued",
      key: `k${SessionState.rememberedKeys + 9}`,
      queueId: `q${SessionState.rememberedKeys + 11}`
    })
    const old = Either.getOrThrow(SessionState.replay([created, queued(2), queued(3)]))!
    expect(old.applied).toEqual([])
    expect(old.followUps).toHaveLength(2)
  })

  it("an event of a log written before keys existed decodes unchanged, and one with a key round-trips", () => {
    const line = JSON.stringify({ id: "e2", sessionId: "s", sequence: 2, timestamp: "2026-01-01T00:00:00.000Z", type: "followup.queued", payload: { queueId: "q", content: "x" } })
    expect(Either.getOrThrow(AgentEvent.decodeJson(line))).toEqual(JSON.parse(line))
    const keyed = queued(2, "k")
    expect(AgentEvent.encodeJson(Either.getOrThrow(AgentEvent.decodeJson(AgentEvent.encodeJson(keyed))))).toBe(AgentEvent.encodeJson(keyed))
  })
})
