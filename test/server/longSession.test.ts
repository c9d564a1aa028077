/**
 * The long-session routes (CONTRACT.md §8 over §7.1) through the typed `HttpApiClient` against a
 * real server: steer, follow-ups (queue, drop), manual compaction (and its `compacting` phase, a
 * client that goes away cancelling it, the model's failure as 502), fork; each typed error with its
 * status and `{error, message}` body. Synchronisation is on stored events (`/live`) and state only.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { expectWireError, liveUntil, raw, type Running, startIn, storedEvents } from "./harness.js"

/** A request to one of the server's routes with the token, and a JSON body when given. */
const send = (server: Running, path: string, method: string, body?: unknown) =>
  raw(`${server.url}${path}`, {
    method,
    token: server.token,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A wire error: its status, and a body with the tag, a message, and nothing else. */
const expectStatus = (answer: { status: number; body: unknown }, status: number, error: string) => {
  expect(answer.status).toBe(status)
  expectWireError(answer.body, error)
}

/** The `/live` events after `after` up to the first that satisfies `until`. */
const liveAfter = (server: Running, sessionId: string, after: number, until: (event: AgentEvent.AgentEvent) => boolean) =>
  Effect.promise(() => liveUntil(`${server.url}/sessions/${sessionId}/live`, { token: server.token, after }, until))

/** Runs a turn over HTTP and waits until it has completed; answers the last sequence. */
const runTurn = (server: Running, sessionId: string, message: string) =>
  Effect.gen(function*() {
    const { lastSequence } = yield* server.client.sessions.get({ path: { id: sessionId } })
    const { turnId } = yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message } })
    const events = yield* liveAfter(server, sessionId, lastSequence, (e) => e.type === "turn.completed" && e.turnId === turnId)
    return events.at(-1)!.sequence
  })

const writeCall = (path: string) => ({ toolCalls: [{ tool: "write_file", args: { path, content: "x" } }] })
const isAsk = (e: AgentEvent.AgentEvent) => e.type === "permission.resolved" && e.payload.decision === "ask"

describe("the long-session routes", () => {
  it.scopedLive("steer and follow-ups: a steer reaches the paused turn, a queued follow-up runs after it, a drop empties the queue", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        responses: [writeCall("a.txt"), { chunks: ["Done."] }, { chunks: ["Next done."] }, writeCall("b.txt")]
      })
      const { client } = server
      const { sessionId } = yield* client.sessions.create({ payload: {} })
      const id = { id: sessionId }

      // No turn runs: a steer is refused 409, an empty message 400, a missing session 404.
      expect(yield* client.sessions.steer({ path: id, payload: { message: "hey" } }).pipe(Effect.flip)).toMatchObject({ error: "NoTurnInProgress" })
      expectStatus(yield* send(server, `/sessions/${sessionId}/steer`, "POST", { message: "hey" }), 409, "NoTurnInProgress")
      expectStatus(yield* send(server, `/sessions/${sessionId}/steer`, "POST", { message: " " }), 400, "BadRequest")
      expectStatus(yield* send(server, `/sessions/${sessionId}/followups`, "POST", { message: "" }), 400, "BadRequest")
      expectStatus(yield* send(server, "/sessions/sess_missing/followups", "POST", { message: "x" }), 404, "SessionNotFound")
      expectStatus(yield* send(server, "/sessions/sess_missing/steer", "POST", { message: "x" }), 404, "SessionNotFound")

      // A turn paused on its write: steered, a follow-up queued behind it; a compaction is refused meanwhile.
      const { turnId } = yield* client.sessions.startTurn({ path: id, payload: { message: "write a.txt" } })
      const paused = yield* liveAfter(server, sessionId, 0, isAsk)
      const call = paused.at(-1)!.payload as { toolCallId: string }
      expect(yield* client.sessions.steer({ path: id, payload: { message: "and say done" } })).toEqual({ ok: true })
      const { queueId } = yield* client.sessions.followUp({ path: id, payload: { message: "next" } })
      expect(yield* client.sessions.compact({ path: id, payload: {} }).pipe(Effect.flip)).toMatchObject({ error: "TurnInProgress" })
      expectStatus(yield* send(server, `/sessions/${sessionId}/compact`, "POST", {}), 409, "TurnInProgress")
      expect(yield* client.sessions.get({ path: id })).toMatchObject({ phase: "paused", openTurnId: turnId, followUps: [{ queueId, content: "next" }] })

      // Approved: the tool runs, the steer is stored before the next request, then the follow-up's turn runs.
      yield* client.sessions.approve({ path: { id: sessionId, toolCallId: call.toolCallId }, payload: { decision: "allow" } })
      let completed = 0
      const rest = yield* liveAfter(server, sessionId, paused.at(-1)!.sequence, (e) => e.type === "turn.completed" && ++completed === 2)
      const types = rest.map((e) => e.type)
      expect(types.indexOf("turn.steered")).toBeGreaterThan(types.indexOf("tool.completed"))
      expect(rest.find((e) => e.type === "turn.steered")).toMatchObject({ turnId, payload: { content: "and say done" } })
      const firstEnd = rest.findIndex((e) => e.type === "turn.completed")
      expect(rest[firstEnd]).toMatchObject({ turnId, payload: { stopReason: "final" } })
      const next = rest.slice(firstEnd + 1)
      expect(next[0]).toMatchObject({ type: "turn.started", payload: { queueId } })
      expect(next.filter((e) => e.type === "model.delta").map((e) => (e.payload as { text: string }).text)).toEqual(["Next done."])
      expect(next.at(-1)).toMatchObject({ payload: { stopReason: "final" } })
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("x")
      expect(yield* client.sessions.get({ path: id })).toMatchObject({ phase: "idle", followUps: [] })

      // Queued behind a paused turn, then dropped: they never run.
      const before = (yield* client.sessions.get({ path: id })).lastSequence
      yield* client.sessions.startTurn({ path: id, payload: { message: "write b.txt" } })
      yield* liveAfter(server, sessionId, before, isAsk)
      const one = yield* client.sessions.followUp({ path: id, payload: { message: "one" } })
      const two = yield* send(server, `/sessions/${sessionId}/followups`, "POST", { message: "two" })
      expect(two.status).toBe(202)
      const twoId = (two.body as { queueId: string }).queueId
      expect((yield* client.sessions.get({ path: id })).followUps.map((f) => f.queueId)).toEqual([one.queueId, twoId])
      // A client drops what it showed: `three`, queued by another client after that, stays queued.
      const three = yield* client.sessions.followUp({ path: id, payload: { message: "three" } })
      const named = yield* send(server, `/sessions/${sessionId}/followups?queueId=${one.queueId}&queueId=${twoId}&queueId=fu_unknown`, "DELETE")
      expect(named.status).toBe(200)
      expect(named.body).toEqual({ queueIds: [one.queueId, twoId] })
      expect((yield* client.sessions.get({ path: id })).followUps).toEqual([{ queueId: three.queueId, content: "three" }])
      expectStatus(yield* send(server, `/sessions/${sessionId}/followups?queueId=`, "DELETE"), 400, "BadRequest")
      const many = Array.from({ length: 1_001 }, (_, i) => `queueId=fu_${i}`).join("&")
      expectStatus(yield* send(server, `/sessions/${sessionId}/followups?${many}`, "DELETE"), 400, "BadRequest")
      expect(yield* send(server, `/sessions/${sessionId}/followups?queueId=${three.queueId}`, "DELETE")).toMatchObject({ status: 200, body: { queueIds: [three.queueId] } })
      expect(yield* client.sessions.dropFollowUps({ path: id })).toEqual({ queueIds: [] })
      expect((yield* client.sessions.get({ path: id })).followUps).toEqual([])
      yield* client.sessions.cancel({ path: id })
      const all = yield* storedEvents(server, sessionId)
      expect(all.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
      expect(all.filter((e) => e.type === "followup.dropped").map((e) => e.payload)).toEqual([{ queueIds: [one.queueId, twoId] }, { queueIds: [three.queueId] }])
      expect(all.filter((e) => e.type === "turn.started").map((e) => (e.payload as { queueId?: string }).queueId).filter(Boolean)).toEqual([queueId])
      expect(all.map((e) => e.sequence)).toEqual(all.map((_, i) => i + 1))
    }))

  it.scopedLive("compact: nothing to compact 409, bad input 400, the compacting phase, a client that goes away cancels it, success, the model's failure 502", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({
        responses: [
          { chunks: ["answer 1"] },
          { chunks: ["answer 2"] },
          { chunks: ["never"], delay: "30 seconds" },
          { chunks: ["The summary."] },
          { chunks: ["answer 3"] },
          { failure: { reason: "authentication" } }
        ]
      })
      const { client } = server
      const { sessionId } = yield* client.sessions.create({ payload: {} })
      const id = { id: sessionId }

      expect(yield* client.sessions.compact({ path: id, payload: {} }).pipe(Effect.flip)).toMatchObject({ error: "NothingToCompact" })
      expectStatus(yield* send(server, `/sessions/${sessionId}/compact`, "POST", {}), 409, "NothingToCompact")
      // No body at all is the same as {}.
      expectStatus(yield* send(server, `/sessions/${sessionId}/compact`, "POST"), 409, "NothingToCompact")
      expectStatus(yield* send(server, `/sessions/${sessionId}/compact`, "POST", { keepRecentTokens: -1 }), 400, "BadRequest")
      expectStatus(yield* send(server, `/sessions/${sessionId}/compact`, "POST", { keepRecentTokens: 1.5 }), 400, "BadRequest")
      expectStatus(yield* send(server, "/sessions/sess_missing/compact", "POST", {}), 404, "SessionNotFound")
      yield* runTurn(server, sessionId, "one")
      const last = yield* runTurn(server, sessionId, "two")

      // A compaction whose summary takes long: the state says `compacting`; the client goes away and it is cancelled.
      const abort = new AbortController()
      const gone = yield* Effect.fork(Effect.promise(() =>
        fetch(`${server.url}/sessions/${sessionId}/compact`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          body: JSON.stringify({ keepRecentTokens: 0 }),
          signal: abort.signal
        }).then(() => "answered", () => "aborted")
      ))
      yield* liveAfter(server, sessionId, last, (e) => e.type === "compaction.started")
      expect(yield* client.sessions.get({ path: id })).toMatchObject({ phase: "compacting" })
      abort.abort()
      const failed = yield* liveAfter(server, sessionId, last, (e) => e.type === "compaction.failed")
      expect(failed.at(-1)).toMatchObject({ payload: { errorCode: "cancelled" } })
      expect(failed.at(-1)).not.toHaveProperty("turnId")
      expect(yield* Fiber.join(gone)).toBe("aborted")
      // The phase settles once the request's fiber has ended.
      yield* client.sessions.get({ path: id }).pipe(
        Effect.filterOrFail((view) => view.phase === "idle"),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(20)), times: 500 })
      )

      // A manual compaction to its end: the answer is the stored session.compacted payload; GET shows it.
      const result = yield* client.sessions.compact({ path: id, payload: { keepRecentTokens: 0 } })
      expect(result).toMatchObject({ reason: "manual", summary: "The summary." })
      expect(result.tokensAfter).toBeLessThan(result.tokensBefore)
      const stored = yield* storedEvents(server, sessionId)
      expect(stored.at(-1)).toMatchObject({ type: "session.compacted", payload: result })
      expect(yield* client.sessions.get({ path: id })).toMatchObject({ phase: "idle", lastSequence: stored.at(-1)!.sequence })
      // The next turn goes on from the compacted context.
      yield* runTurn(server, sessionId, "three")

      // The model fails to summarise: 502, compaction.failed stored, the context unchanged.
      const failure = yield* send(server, `/sessions/${sessionId}/compact`, "POST", { keepRecentTokens: 0 })
      expectStatus(failure, 502, "CompactionFailed")
      expect((failure.body as { message: string }).message).toContain("authentication")
      const after = yield* storedEvents(server, sessionId)
      expect(after.at(-1)).toMatchObject({ type: "compaction.failed", payload: { errorCode: "authentication" } })
      expect(after.map((e) => e.sequence)).toEqual(after.map((_, i) => i + 1))
    }))

  it.scopedLive("fork: 201 with a new session that lists, its log ending session.forked; a bad point 400, a missing session 404", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }] })
      const { client } = server
      const source = yield* client.sessions.create({ payload: {} })
      const id = { id: source.sessionId }
      const firstEnd = yield* runTurn(server, source.sessionId, "one")
      const secondEnd = yield* runTurn(server, source.sessionId, "two")

      // Inside a turn, past the end, not a sequence: 400, nothing stored; a missing session 404.
      expect(yield* client.sessions.fork({ path: id, payload: { atSequence: firstEnd - 1 } }).pipe(Effect.flip)).toMatchObject({ error: "BadRequest" })
      expectStatus(yield* send(server, `/sessions/${source.sessionId}/fork`, "POST", { atSequence: firstEnd - 1 }), 400, "BadRequest")
      expectStatus(yield* send(server, `/sessions/${source.sessionId}/fork`, "POST", { atSequence: secondEnd + 5 }), 400, "BadRequest")
      expectStatus(yield* send(server, `/sessions/${source.sessionId}/fork`, "POST", { atSequence: 0 }), 400, "BadRequest")
      expectStatus(yield* send(server, "/sessions/sess_missing/fork", "POST", {}), 404, "SessionNotFound")
      expect((yield* client.sessions.list()).map((s) => s.sessionId)).toEqual([source.sessionId])

      // At the end of the first turn, and by default at the end of the last.
      const early = yield* send(server, `/sessions/${source.sessionId}/fork`, "POST", { atSequence: firstEnd })
      expect(early.status).toBe(201)
      const earlyId = (early.body as { sessionId: string }).sessionId
      const late = yield* client.sessions.fork({ path: id, payload: {} })
      expect(late).toMatchObject({ cwd: source.cwd, client: source.client })
      expect((yield* client.sessions.list()).map((s) => s.sessionId).sort()).toEqual([source.sessionId, earlyId, late.sessionId].sort())

      const earlyLog = yield* storedEvents(server, earlyId)
      expect(earlyLog.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: source.sessionId, atSequence: firstEnd } })
      expect(earlyLog).toHaveLength(firstEnd + 1)
      expect(yield* client.sessions.get({ path: { id: late.sessionId } })).toMatchObject({ phase: "idle", turnCount: 2, lastSequence: secondEnd + 1 })
      // The source is unchanged; the fork runs turns of its own.
      expect((yield* storedEvents(server, source.sessionId)).length).toBe(secondEnd)
      yield* runTurn(server, earlyId, "again")
      // No body at all is the same as {}: the end of the last turn.
      const bodyless = yield* send(server, `/sessions/${source.sessionId}/fork`, "POST")
      expect(bodyless.status).toBe(201)
      const bodylessLog = yield* storedEvents(server, (bodyless.body as { sessionId: string }).sessionId)
      expect(bodylessLog.at(-1)).toMatchObject({ type: "session.forked", payload: { atSequence: secondEnd } })
    }))
})
