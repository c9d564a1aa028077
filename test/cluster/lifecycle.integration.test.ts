/**
 * Runners that stay bounded (issue 24, item 1), in one process on the test PostgreSQL: a session's
 * entity goes once idle for `maxIdleTime` — its engine closes and its writer lease is released —
 * while a turn running detached far longer than that is kept to its end (the cluster's keep-alive)
 * and a turn waiting for the user is kept for `approvalHold`, then let go paused in the log; the
 * answer given later resumes it on a new entity. Time here is real (the cluster's reaper runs on
 * it): the test waits for what it checks, never for a time — the session's events as they are
 * stored (`watchSession`) and each entity's release (the runner's `onReleased`), never a poll.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { KeepAlive } from "../../src/cluster.js"
import { type AgentEvent, type FakeModelProvider, type SessionEngine, SessionState } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

/**
 * A runner whose idle entities go after a second; `owned` counts each start of a session's entity,
 * `released` receives each session whose entity stopped (its engine closed, its lease released).
 */
const runner = (
  url: string,
  owned: Ref.Ref<ReadonlyArray<string>>,
  released: Queue.Queue<string>,
  responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>
) =>
  runnerInProcess(url, {
    shardsPerGroup: 4,
    shardLockTtl: Duration.seconds(3),
    maxIdleTime: Duration.seconds(1),
    approvalHold: Duration.seconds(2),
    onOwned: (sessionId) => Ref.update(owned, (all) => [...all, sessionId]),
    onReleased: (sessionId) => Queue.offer(released, sessionId)
  }, responses)

/** Whether a writer lease of the session is in the database: its entity's engine holds it while it lives. */
const leaseHeld = (url: string, sessionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM writer_leases WHERE session_id = ${sessionId}`).pipe(
    Effect.map(([row]) => row!.n > 0),
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.orDie
  )

/** The limit only ends a hung test. */
const atMost = (what: string) => Effect.timeoutFail({ duration: Duration.seconds(60), onTimeout: () => new Error(`timed out waiting for ${what}`) })

/** Follows the session's events as they are stored until one satisfies `done`; answers it. */
const untilEvent = (engine: SessionEngine.SessionEngine.Service, sessionId: string, what: string, done: (event: AgentEvent.AgentEvent) => boolean, fromSequence = 1) =>
  Stream.runHead(Stream.filter(engine.watchSession({ sessionId, fromSequence }), done)).pipe(
    Effect.map(Option.getOrThrow),
    atMost(what)
  )

const logOf = (engine: SessionEngine.SessionEngine.Service, sessionId: string) =>
  Effect.map(Stream.runCollect(engine.replaySession({ sessionId })), Chunk.toReadonlyArray)

const slow = { chunks: Array.from({ length: 10 }, (_, i) => `${i} `), delay: "200 millis" }
const note = { toolCalls: [{ tool: "note", args: { text: "x" } }] }

describe("a runner's idle sessions", () => {
  it.live("are let go (engine closed, lease released) once idle; a detached turn far longer than the idle time runs to its end; a waiting turn is let go paused after the approval hold and resumed by its answer", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("lifecycle")
      const owned = yield* Ref.make<ReadonlyArray<string>>([])
      const released = yield* Queue.unbounded<string>()
      const { engine, turns } = yield* runner(url, owned, released, [slow, note, { chunks: ["noted"] }])
      /** The next release of the session's entity; afterwards its lease is gone. */
      const releasedNow = (what: string) =>
        Queue.take(released).pipe(
          Effect.filterOrDie((id) => id === sessionId, () => new Error("another session was released")),
          atMost(what),
          Effect.zipRight(leaseHeld(url, sessionId)),
          Effect.map((held) => expect(held).toBe(false))
        )
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })

      // A turn of 5 seconds, started detached: no message is open while it runs; the entity is kept.
      const turnId = yield* turns.start(sessionId, "take long")
      yield* untilEvent(engine, sessionId, "the first turn to end", (e) => e.type === "turn.completed")
      const done = yield* logOf(engine, sessionId)
      expect(done.at(-1)).toMatchObject({ type: "turn.completed", turnId, payload: { stopReason: "final" } })
      expect(done.filter((e) => e.type === "model.delta")).toHaveLength(slow.chunks.length)
      expect(yield* Ref.get(owned)).toEqual([sessionId])

      // Idle now: the entity goes, its engine closes and releases the session's writer lease.
      yield* releasedNow("the idle entity to release its lease")

      // The next message makes a new entity, which drives the session again; it waits for approval.
      yield* turns.start(sessionId, "note it")
      yield* untilEvent(engine, sessionId, "the turn to wait for approval", (e) => e.type === "permission.resolved" && e.payload.decision === "ask")
      const waiting = yield* engine.sessionState({ sessionId })
      expect((yield* Ref.get(owned)).filter((id) => id === sessionId)).toHaveLength(2)
      expect(yield* leaseHeld(url, sessionId)).toBe(true)
      // Past the approval hold the entity may go: the turn stays open, paused in the log, not cancelled.
      yield* releasedNow("the waiting entity to release its lease")
      const paused = yield* logOf(engine, sessionId)
      expect(paused.at(-1)).toMatchObject({ type: "permission.resolved", payload: { decision: "ask" } })
      expect(SessionState.isPaused(yield* engine.sessionState({ sessionId }))).toBe(true)

      // The answer, as the HTTP approve route gives it: stored by a new entity, which resumes the turn.
      const toolCallId = SessionState.pendingApprovals(waiting)[0]!.toolCallId
      yield* engine.resolvePermission({ sessionId, toolCallId, decision: "allow" })
      yield* turns.resumeIfIdle(sessionId)
      yield* untilEvent(engine, sessionId, "the resumed turn to end", (e) => e.type === "turn.completed", paused.length + 1)
      const log = yield* logOf(engine, sessionId)
      expectWellFormedLog(log)
      expect(log.at(-1)).toMatchObject({ payload: { stopReason: "final" } })
      expect(log.filter((e) => e.type === "turn.completed").map((e) => e.type === "turn.completed" && e.payload.stopReason)).toEqual(["final", "final"])
      expect((yield* Ref.get(owned)).filter((id) => id === sessionId)).toHaveLength(3)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 120_000 })
})

describe("what keeps an entity", () => {
  const created = { id: "e1", sessionId: "s", sequence: 1, timestamp: "t", type: "session.created", payload: { cwd: "/w", client: "test" } } as const
  const at = (events: ReadonlyArray<AgentEvent.AgentEvent>) => SessionState.replay([created, ...events]).pipe((e) => e._tag === "Right" ? e.right! : undefined)!
  const turn = (turnId: string, sequence: number) =>
    [
      { id: `e${sequence}`, sessionId: "s", turnId, sequence, timestamp: "t", type: "turn.started", payload: { promptPreview: "x" } },
      { id: `e${sequence + 1}`, sessionId: "s", turnId, sequence: sequence + 1, timestamp: "t", type: "user.message", payload: { content: "x" } }
    ] as const
  const queued = { id: "e2", sessionId: "s", sequence: 2, timestamp: "t", type: "followup.queued", payload: { queueId: "q", content: "x" } } as const

  it("a turn of this engine works; one the log held open at the start does not until the session is driven here; queued follow-ups once driven", () => {
    const fresh = { inheritedTurnId: undefined, driven: false }
    expect(KeepAlive.activityOf(at([]), fresh)).toBe("idle")
    expect(KeepAlive.activityOf(at(turn("t1", 2)), fresh)).toBe("working")
    expect(KeepAlive.activityOf(at(turn("t1", 2)), { inheritedTurnId: "t1", driven: true })).toBe("idle")
    expect(KeepAlive.activityOf(at([queued]), fresh)).toBe("idle")
    expect(KeepAlive.activityOf(at([queued]), { ...fresh, driven: true })).toBe("working")
  })
})
