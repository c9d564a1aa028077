/**
 * A hundred clients doing the same thing at once, over real HTTP: answering the same approval (one
 * wins, the others get a typed 409, the log holds one decision), creating sessions (a hundred
 * distinct ones, all listed), cancelling the same turn (all answered, the turn closed once), and
 * starting a turn in the same session (one 202, the rest 409 `TurnInProgress`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/index.js"
import { expectWireError, liveUntil, raw, startIn, storedEvents } from "./harness.js"

const clients = 100

const post = (url: string, token: string, body: unknown) =>
  raw(url, { token, method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

const everyone = <A>(request: (i: number) => Effect.Effect<A>) =>
  Effect.all(Array.from({ length: clients }, (_, i) => request(i)), { concurrency: "unbounded" })

const countBy = (statuses: ReadonlyArray<{ readonly status: number }>) => {
  const counts: Record<number, number> = {}
  for (const { status } of statuses) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

describe("a hundred clients at once", () => {
  it.scopedLive("answering the same approval: one wins, the others get 409 ApprovalNotPending, the log holds one decision", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({
        responses: [
          { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "one" } }] },
          { chunks: ["Done."] }
        ]
      })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "write" } })
      const live = `${server.url}/sessions/${session.sessionId}/live`
      const paused = yield* Effect.promise(() =>
        liveUntil(live, { token: server.token }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask"))
      const { toolCallId } = paused.at(-1)!.payload as { toolCallId: string }
      // Half allow, half deny: whichever is taken first is the one decision.
      const answers = yield* everyone((i) =>
        post(`${server.url}/sessions/${session.sessionId}/approvals/${toolCallId}`, server.token, { decision: i % 2 === 0 ? "allow" : "deny" }))
      expect(countBy(answers)).toEqual({ 200: 1, 409: clients - 1 })
      for (const refused of answers.filter((a) => a.status === 409)) expectWireError(refused.body, "ApprovalNotPending")
      yield* Effect.promise(() => liveUntil(live, { token: server.token, after: paused.at(-1)!.sequence }, (e) => e.type === "turn.completed"))
      const events = yield* storedEvents(server, session.sessionId)
      const decisions = events.filter((e): e is Extract<AgentEvent.AgentEvent, { type: "permission.resolved" }> =>
        e.type === "permission.resolved" && e.payload.toolCallId === toolCallId && e.payload.decision !== "ask")
      expect(decisions).toHaveLength(1)
      expect(events.filter((e) => e.type === "turn.completed")).toHaveLength(1)
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1))
    }), { timeout: 60_000 })

  it.scopedLive("creating sessions: a hundred distinct sessions, every one listed", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const created = yield* everyone(() => post(`${server.url}/sessions`, server.token, {}))
      expect(countBy(created)).toEqual({ 201: clients })
      const ids = created.map((c) => (c.body as { sessionId: string }).sessionId)
      expect(new Set(ids).size).toBe(clients)
      const listed = yield* server.client.sessions.list()
      expect(listed.map((s) => s.sessionId).sort()).toEqual([...ids].sort())
    }), { timeout: 60_000 })

  it.scopedLive("cancelling the same turn and starting a turn in the same session: every cancel answered, the turn closed once; one start wins", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["a", "b", "c", "d"], delay: "30 seconds" }, { chunks: ["again"] }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      const turns = `${server.url}/sessions/${session.sessionId}/turns`
      const starts = yield* everyone(() => post(turns, server.token, { message: "slow" }))
      expect(countBy(starts)).toEqual({ 202: 1, 409: clients - 1 })
      for (const refused of starts.filter((a) => a.status === 409)) expectWireError(refused.body, "TurnInProgress")
      const { turnId } = starts.find((s) => s.status === 202)!.body as { turnId: string }
      const cancels = yield* everyone(() => post(`${server.url}/sessions/${session.sessionId}/cancel?turnId=${turnId}`, server.token, {}))
      expect(countBy(cancels)).toEqual({ 200: clients })
      const events = yield* storedEvents(server, session.sessionId)
      const ends = events.filter((e) => e.type === "turn.completed")
      expect(ends).toHaveLength(1)
      expect(ends[0]).toMatchObject({ turnId, payload: { stopReason: "cancelled" } })
      // The session goes on: the next turn runs.
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "again" } })
      yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token, after: ends[0]!.sequence }, (e) => e.type === "turn.completed"))
    }), { timeout: 60_000 })
})
