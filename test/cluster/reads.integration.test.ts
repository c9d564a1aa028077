/**
 * Reads without an engine (issue 24, item 4): through a runner, `sessionState` and
 * `pendingApprovals` — and so the HTTP server's existence checks, which call `sessionState` — fold
 * the session's log from the store; no engine is made per call. The runner's `Engines` is wrapped
 * to count the engines it makes; the state read equals the fold of the stored log.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Engines } from "../../src/cluster.js"
import { EventStore, SessionState } from "../../src/index.js"
import { PostgresEventStore } from "../../src/postgres.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

/** Wraps a runner's `Engines` to count the engines it makes. */
const counted = (made: Ref.Ref<number>) => (base: ReturnType<typeof Engines.layer>) =>
  Layer.effect(Engines.Engines, Effect.map(Engines.Engines, (engines) => ({ ...engines, make: Effect.zipLeft(engines.make, Ref.update(made, (n) => n + 1)) }))).pipe(
    Layer.provide(base)
  )

/** Wraps a runner's `Engines` so that its store counts the events its reads take. */
const countingReads = (read: Ref.Ref<number>) => (base: ReturnType<typeof Engines.layer>) =>
  Layer.effect(
    Engines.Engines,
    Effect.map(Engines.Engines, (engines) => ({
      ...engines,
      store: { ...engines.store, read: (sessionId: string, options?: EventStore.ReadOptions) => Stream.tap(engines.store.read(sessionId, options), () => Ref.update(read, (n) => n + 1)) }
    }))
  ).pipe(Layer.provide(base))

describe("reads through a runner", () => {
  it.live("read a session's state on from the last read: only what was appended since, whoever appended it", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("reads_tail")
      const read = yield* Ref.make(0)
      const { engine } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [{ chunks: ["one"] }, { chunks: ["two"] }], countingReads(read))
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // Two turns, driven by the owner (this runner's entity, another engine): a log of some length.
      yield* Stream.runDrain(engine.runTurn({ sessionId, userMessage: "first" }))
      yield* Stream.runDrain(engine.runTurn({ sessionId, userMessage: "second" }))
      const logOf = Effect.map(Stream.runCollect(engine.replaySession({ sessionId })), Chunk.toReadonlyArray)
      const log = yield* logOf
      expect(log.length).toBeGreaterThan(10)

      // The first read folds the whole log; the next ones read the store again from the last event
      // folded (read again, to know the log is still the one folded), and find nothing new.
      yield* Ref.set(read, 0)
      expect(yield* engine.sessionState({ sessionId })).toEqual(Either.getOrThrow(SessionState.replay(log)))
      expect(yield* Ref.get(read)).toBe(log.length)
      yield* Ref.set(read, 0)
      for (let i = 0; i < 20; i++) {
        yield* engine.sessionState({ sessionId })
        yield* engine.pendingApprovals({ sessionId })
      }
      expect(yield* Ref.get(read)).toBe(40)

      // The owner appends (a rename): the next read has it, having read only that.
      yield* engine.renameSession({ sessionId, title: "renamed by the owner" })
      yield* Ref.set(read, 0)
      const renamed = yield* engine.sessionState({ sessionId })
      expect(renamed.title).toBe("renamed by the owner")
      expect(yield* Ref.get(read)).toBe(2)

      // Another process appends, on its own connection: the next read has it too.
      const other = yield* Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) }))
      const otherStore = Context.get(other, EventStore.EventStore)
      yield* otherStore.append({
        id: "evt_elsewhere",
        sessionId,
        sequence: renamed.lastSequence + 1,
        timestamp: new Date().toISOString(),
        type: "session.titled",
        payload: { title: "renamed elsewhere" }
      })
      yield* Ref.set(read, 0)
      const after = yield* engine.sessionState({ sessionId })
      expect(after.title).toBe("renamed elsewhere")
      expect(yield* Ref.get(read)).toBe(2)
      expect(after).toEqual(Either.getOrThrow(SessionState.replay(yield* logOf)))
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })


  it.live("fold the log from the store: no engine is made per sessionState or pendingApprovals call", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("reads")
      const made = yield* Ref.make(0)
      const { engine, turns } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [{ toolCalls: [{ tool: "note", args: { text: "x" } }] }], counted(made))
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // A turn (detached, on its owner) that waits for approval, so there is something pending to read.
      yield* turns.start(sessionId, "note it")
      const pending = yield* engine.pendingApprovals({ sessionId }).pipe(
        Effect.filterOrFail((calls) => calls.length > 0),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      expect(pending.map((call) => call.tool)).toEqual(["note"])

      const before = yield* Ref.get(made)
      for (let i = 0; i < 50; i++) {
        yield* engine.sessionState({ sessionId })
        yield* engine.pendingApprovals({ sessionId })
      }
      expect(yield* Ref.get(made)).toBe(before)

      // What it reads is the fold of the stored log; an unknown or malformed id is not found.
      const log = Chunk.toReadonlyArray(yield* Stream.runCollect(engine.replaySession({ sessionId })))
      expect(yield* engine.sessionState({ sessionId })).toEqual(Either.getOrThrow(SessionState.replay(log)))
      expect(yield* Effect.flip(engine.sessionState({ sessionId: "sess_unknown" }))).toMatchObject({ _tag: "SessionNotFound" })
      expect(yield* Effect.flip(engine.pendingApprovals({ sessionId: "../etc" }))).toMatchObject({ _tag: "SessionNotFound" })
      expect(yield* Ref.get(made)).toBe(before)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })

  it.live("pendingApprovals of a parent paused on its subagent lists the subagent's ask, labelled, answered through the parent", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("reads_subagent")
      const { engine, turns } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, {
        responses: [{ toolCalls: [{ tool: "task", args: { description: "take notes", prompt: "child: note" } }] }, { chunks: ["parent done"] }],
        subagents: { "child: note": [{ toolCalls: [{ tool: "note", args: { text: "x" } }] }, { chunks: ["child done"] }] }
      })
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* turns.start(sessionId, "delegate")
      // This runner's policy asks for every call: first the parent's `task`, then, once allowed, the subagent's `note`.
      const waitFor = (tool: string) =>
        engine.pendingApprovals({ sessionId }).pipe(
          Effect.filterOrFail((calls) => calls.some((c) => c.tool === tool)),
          Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
        )
      const [task] = yield* waitFor("task")
      expect(task!.askedBy).toBeUndefined()
      yield* engine.resolvePermission({ sessionId, toolCallId: task!.toolCallId, decision: "allow" })
      const pending = yield* waitFor("note")
      expect(pending).toHaveLength(1)
      const [call] = pending
      expect(call).toMatchObject({ tool: "note", askedBy: { description: "take notes" } })
      expect(call!.askedBy!.sessionId).not.toBe(sessionId)
      // The same as the engine's own fold of the child's log, labelled.
      expect(SessionState.pendingApprovals(yield* engine.sessionState({ sessionId: call!.askedBy!.sessionId })).map((c) => c.toolCallId)).toEqual([call!.toolCallId])

      // Answered on the parent (passed down by its owner): the tree completes.
      yield* engine.resolvePermission({ sessionId, toolCallId: call!.toolCallId, decision: "allow" })
      const state = yield* engine.sessionState({ sessionId }).pipe(
        Effect.filterOrFail((s) => s.openTurn === undefined && s.turnCount === 1),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      expect(state.openTurn).toBeUndefined()
      expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })
})
