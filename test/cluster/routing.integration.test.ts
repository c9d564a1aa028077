/**
 * `effect-agent/cluster` in one process: two runners (`Runner.layer`) on the test PostgreSQL, each
 * with its own store, model and tools. Through the runner that does not own a session, the routed
 * engine streams a whole turn from the owner (`RunTurn`), answers its approval on the owner
 * (`ResolvePermission`), cancels a running turn there (`CancelTurn`) and queues a follow-up there
 * (`FollowUp`), compacts there (`CompactSession`), steers the owner's turn (`Steer`) and renames the session there (`RenameSession`); what it streams is what the owner stored. A runner that stops leaves a turn waiting for approval paused; answered through the
 * other runner (as the HTTP approve route does), the turn resumes on its new owner.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type AgentEvent, type FakeModelProvider, type SessionEngine } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

/** A runner of the cluster with its own ports; `owners` records the sessions that arrive at it. */
const runner = (
  name: string,
  url: string,
  owners: Ref.Ref<ReadonlyMap<string, string>>,
  responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>
) =>
  runnerInProcess(url, {
    shardsPerGroup: 6,
    shardLockTtl: Duration.seconds(3),
    onOwned: (sessionId) => Ref.update(owners, (map) => new Map([...map, [sessionId, name]]))
  }, responses)

/** A new session, created through `here`, that the runner named `owner` owns (a cancel with nothing running reaches it). */
const sessionOwnedBy = (here: SessionEngine.SessionEngine.Service, owners: Ref.Ref<ReadonlyMap<string, string>>, owner: string) =>
  Effect.gen(function*() {
    const session = yield* here.createSession({ cwd: "/work", client: "test" })
    yield* here.cancelTurn({ sessionId: session.sessionId })
    return (yield* Ref.get(owners)).get(session.sessionId) === owner ? session.sessionId : yield* Effect.fail("owned by the other runner")
  }).pipe(Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 }), Effect.orDie)

const script = {
  approval: [{ toolCalls: [{ tool: "note", args: { text: "x" } }] }, { chunks: ["noted"] }],
  slow: [{ chunks: Array.from({ length: 100 }, (_, i) => `${i} `), delay: "100 millis" }],
  steered: [{ toolCalls: [{ tool: "note", args: { text: "y" } }] }, { chunks: ["steered"] }]
}

describe("the routed engine of a runner", () => {
  it.live("streams, approves and cancels a turn on the session's owner through the other runner", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("routing")
      const owners = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
      const here = (yield* runner("here", url, owners, [])).engine
      yield* runner("owner", url, owners, [...script.approval, ...script.slow, { chunks: ["followed"] }, { chunks: ["The summary."] }, ...script.steered])
      const sessionId = yield* sessionOwnedBy(here, owners, "owner")

      // A turn streamed from the owner; its approval answered through this runner too.
      const streamed = yield* here.runTurn({ sessionId, userMessage: "note it" }).pipe(
        Stream.tap((event) =>
          event.type === "permission.resolved" && event.payload.decision === "ask"
            ? Effect.fork(here.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: "allow" }).pipe(Effect.orDie))
            : Effect.void
        ),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      expect(streamed.map((event) => event.type)).toContain("tool.completed")
      expect(streamed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })

      // A turn cancelled through this runner while the owner streams it.
      const streaming = yield* Deferred.make<void>()
      const long = yield* here.runTurn({ sessionId, userMessage: "take long" }).pipe(
        Stream.tap((event) => event.type === "model.delta" ? Deferred.succeed(streaming, undefined) : Effect.void),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray),
        Effect.fork
      )
      yield* Deferred.await(streaming)
      yield* here.cancelTurn({ sessionId })
      const cancelled = yield* Fiber.join(long)
      expect(cancelled.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })

      // What was streamed is what the owner stored; the state read here is the owner's.
      const stored = Chunk.toReadonlyArray(yield* Stream.runCollect(here.replaySession({ sessionId })))
      expectWellFormedLog(stored)
      const turnIdOf = (event: AgentEvent.AgentEvent) => ("turnId" in event ? event.turnId : undefined)
      const turnOf = (events: ReadonlyArray<AgentEvent.AgentEvent>, turnId: string | undefined) => events.filter((e) => turnIdOf(e) === turnId)
      expect(turnOf(stored, turnIdOf(streamed[0]!))).toEqual(streamed)
      expect(turnOf(stored, turnIdOf(cancelled[0]!))).toEqual(cancelled)
      const state = yield* here.sessionState({ sessionId })
      expect(state.openTurn).toBeUndefined()
      expect(state.lastTurn).toMatchObject({ stopReason: "cancelled" })
      expect(state.lastSequence).toBe(stored.length)

      // A follow-up queued through this runner runs on the owner as a turn of its own.
      const { queueId } = yield* here.followUp({ sessionId, message: "later" })
      const followed = yield* Stream.runCollect(here.replaySession({ sessionId })).pipe(
        Effect.map(Chunk.toReadonlyArray),
        Effect.filterOrFail((events) => events.at(-1)?.type === "turn.completed" && events.length > stored.length),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      expectWellFormedLog(followed)
      expect(followed.find((event) => event.type === "turn.started" && event.payload.queueId === queueId)).toBeDefined()
      expect(followed.at(-1)).toMatchObject({ payload: { stopReason: "final" } })

      // A manual compaction through this runner (CompactSession) runs on the owner: its answer is what the owner stored.
      const compacted = yield* here.compactSession({ sessionId, keepRecentTokens: 0 })
      expect(compacted).toMatchObject({ reason: "manual", summary: "The summary." })
      const afterCompaction = Chunk.toReadonlyArray(yield* Stream.runCollect(here.replaySession({ sessionId })))
      expectWellFormedLog(afterCompaction)
      expect(afterCompaction.slice(followed.length).map((event) => event.type)).toEqual(["compaction.started", "session.compacted"])
      expect(afterCompaction.at(-1)).toMatchObject({ payload: compacted })
      expect(afterCompaction.at(-1)).not.toHaveProperty("turnId")
      expect((yield* here.sessionState({ sessionId })).compaction).toBeUndefined()
      // Nothing new to compact: the owner's typed error comes back as itself.
      expect(yield* Effect.flip(here.compactSession({ sessionId }))).toMatchObject({ _tag: "NothingToCompact" })

      // A steer through this runner (Steer): refused with no turn running, stored in the owner's turn while one waits.
      expect(yield* Effect.flip(here.steer({ sessionId, message: "too early" }))).toMatchObject({ _tag: "NoTurnInProgress" })
      // One naming a turn that has ended is refused by the owner while another runs: the turn id crosses the cluster.
      const lateSteer: Array<string> = []
      const dropped: Array<ReadonlyArray<string>> = []
      const steeredTurn = yield* here.runTurn({ sessionId, userMessage: "note again" }).pipe(
        Stream.tap((event) =>
          event.type === "permission.resolved" && event.payload.decision === "ask"
            ? here.steer({ sessionId, message: "meant for the first turn", turnId: turnIdOf(streamed[0]!)! }).pipe(
              Effect.match({ onFailure: (error) => lateSteer.push(error._tag), onSuccess: () => lateSteer.push("accepted") }),
              Effect.zipRight(here.steer({ sessionId, message: "then say steered" })),
              // Two follow-ups queued behind the waiting turn; one dropped by name (DropFollowUps names it across the cluster), then the rest.
              Effect.zipRight(Effect.all([here.followUp({ sessionId, message: "a" }), here.followUp({ sessionId, message: "b" })])),
              Effect.flatMap(([a, b]) =>
                Effect.all([here.dropFollowUps({ sessionId, queueIds: [b.queueId] }), here.dropFollowUps({ sessionId })]).pipe(
                  Effect.map((results) => dropped.push([a.queueId, b.queueId], ...results.map((d) => d.queueIds)))
                )
              ),
              Effect.zipRight(here.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: "allow" })),
              Effect.orDie,
              Effect.fork
            )
            : Effect.void
        ),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      const steeredTypes = steeredTurn.map((event) => event.type)
      expect(steeredTypes.indexOf("turn.steered")).toBeGreaterThan(steeredTypes.indexOf("tool.completed"))
      expect(steeredTurn.find((event) => event.type === "turn.steered")).toMatchObject({ payload: { content: "then say steered" } })
      expect(steeredTurn.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(lateSteer).toEqual(["NoTurnInProgress"])
      const [[a, b], first, rest] = dropped as [[string, string], ReadonlyArray<string>, ReadonlyArray<string>]
      expect([first, rest]).toEqual([[b], [a]])
      expect(steeredTurn.filter((event) => event.type === "turn.steered")).toHaveLength(1)

      // A rename through this runner (RenameSession) is stored by the owner; this runner's listing and state read it.
      expect(yield* here.renameSession({ sessionId, title: " Routed\ttitle " })).toEqual({ title: "Routed title" })
      expect((yield* here.listSessions).find((s) => s.sessionId === sessionId)?.title).toBe("Routed title")
      expect((yield* here.sessionState({ sessionId })).title).toBe("Routed title")
      expect(yield* Effect.flip(here.renameSession({ sessionId, title: "\x1b[0m" }))).toMatchObject({ _tag: "InvalidInput", field: "title" })

      // A rewind through this runner (RewindSession) is stored by the owner: back to the end of the compaction.
      const point = afterCompaction.at(-1)!.sequence
      const rewound = yield* here.rewindSession({ sessionId, toSequence: point })
      expect(rewound).toMatchObject({ toSequence: point, changes: [], forced: [] })
      const afterRewind = Chunk.toReadonlyArray(yield* Stream.runCollect(here.replaySession({ sessionId })))
      expectWellFormedLog(afterRewind)
      expect(afterRewind.at(-1)).toMatchObject({ type: "session.rewound", sequence: rewound.sequence, payload: { toSequence: point } })
      // The owner's typed error comes back as itself.
      expect(yield* Effect.flip(here.rewindSession({ sessionId, toSequence: 2 }))).toMatchObject({ _tag: "InvalidInput", field: "toSequence" })
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })

  it.live("a runner that stops cancels its running turns and leaves a turn waiting for approval paused; the approval through the next owner resumes it", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("handover")
      const owners = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
      const here = yield* runner("here", url, owners, [])
      const ownerScope = yield* Scope.make()
      yield* runner("owner", url, owners, [script.approval[0]!, ...script.slow]).pipe(Scope.extend(ownerScope))
      const sessionId = yield* sessionOwnedBy(here.engine, owners, "owner")
      const busyId = yield* sessionOwnedBy(here.engine, owners, "owner")

      // Started through this runner's turn registry: the turn runs on the owner, and pauses on its call.
      const turnId = yield* here.turns.start(sessionId, "note it")
      const paused = yield* here.engine.sessionState({ sessionId }).pipe(
        Effect.filterOrFail((state) => state.openTurn?.toolCalls.some((call) => call.status === "awaiting_approval") === true),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      const toolCallId = paused.openTurn!.toolCalls[0]!.toolCallId
      // And a turn that streams on the owner.
      const busyTurn = yield* here.turns.start(busyId, "take long")
      yield* Stream.runCollect(here.engine.replaySession({ sessionId: busyId })).pipe(
        Effect.filterOrFail((events) => Chunk.some(events, (event) => event.type === "model.delta")),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )

      // The owner stops: the paused turn stays open in the log, the running one is closed cancelled.
      yield* Scope.close(ownerScope, Exit.void)
      const open = Chunk.toReadonlyArray(yield* Stream.runCollect(here.engine.replaySession({ sessionId })))
      expect(open.filter((event) => event.type === "turn.completed")).toEqual([])
      const stopped = Chunk.toReadonlyArray(yield* Stream.runCollect(here.engine.replaySession({ sessionId: busyId })))
      expectWellFormedLog(stopped)
      expect(stopped.at(-1)).toMatchObject({ type: "turn.completed", turnId: busyTurn, payload: { stopReason: "cancelled" } })

      // Answered as the HTTP approve route does: the answer, then the paused turn resumed on its new owner.
      yield* here.engine.resolvePermission({ sessionId, toolCallId, decision: "allow" })
      yield* here.turns.resumeIfIdle(sessionId)
      const done = yield* Stream.runCollect(here.engine.replaySession({ sessionId })).pipe(
        Effect.map(Chunk.toReadonlyArray),
        Effect.filterOrFail((events) => events.some((event) => event.type === "turn.completed")),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      expectWellFormedLog(done)
      expect(done.filter((event) => event.type === "turn.started").map((event) => "turnId" in event && event.turnId)).toEqual([turnId])
      expect(done.find((event) => event.type === "tool.completed")).toMatchObject({ payload: { toolCallId } })
      expect(done.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect((yield* Ref.get(owners)).get(sessionId)).toBe("here")
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })

  it.live("a message's images reach the owner through the other runner, by the shared blob area: streamed (runTurn) and started (the HTTP turn route's registry)", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("routing_images")
      const owners = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
      const here = yield* runner("here", url, owners, [])
      yield* runner("owner", url, owners, [{ chunks: ["seen"] }, { chunks: ["seen again"] }])
      const sessionId = yield* sessionOwnedBy(here.engine, owners, "owner")
      const png = new Uint8Array(readFileSync(join(import.meta.dirname, "../../fixtures/images/photo.png")))
      const gif = new Uint8Array(readFileSync(join(import.meta.dirname, "../../fixtures/images/pixel.gif")))

      const streamed = Chunk.toReadonlyArray(yield* Stream.runCollect(here.engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] })))
      expect(streamed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      yield* here.turns.start(sessionId, "and this", [{ data: gif, mediaType: "image/gif" }])
      const log = yield* Stream.runCollect(here.engine.replaySession({ sessionId })).pipe(
        Effect.map(Chunk.toReadonlyArray),
        Effect.filterOrFail((events) => events.filter((event) => event.type === "turn.completed").length === 2),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 })
      )
      expectWellFormedLog(log)
      const messages = log.flatMap((event) => event.type === "user.message" ? [event.payload] : [])
      expect(messages.map((message) => message.images?.map((image) => image.mediaType))).toEqual([["image/png"], ["image/gif"]])
      const image = yield* here.engine.sessionImage({ sessionId, blob: messages[0]!.images![0]!.blob })
      expect(Buffer.from(image.bytes).equals(Buffer.from(png))).toBe(true)

      // A refused image is refused at the door, as on one process: nothing is sent, nothing stored.
      const svg = new Uint8Array(readFileSync(join(import.meta.dirname, "../../fixtures/images/evil.svg")))
      const refused = yield* Effect.flip(Stream.runDrain(here.engine.runTurn({ sessionId, userMessage: "x", images: [{ data: svg }] })))
      expect(refused).toMatchObject({ _tag: "InvalidInput", field: "images" })
      expect(Chunk.size(yield* Stream.runCollect(here.engine.replaySession({ sessionId })))).toBe(log.length)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 60_000 })
})
