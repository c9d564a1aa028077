/**
 * Issue 19, item 5 over HTTP: `POST /sessions/:id/followups` answers 202 as soon as the follow-up is
 * stored, while a manual compaction (`POST /sessions/:id/compact`) still runs — here one that runs
 * until its client goes away; the follow-up's turn runs once the compaction has ended.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { AgentEvent } from "../../src/index.js"
import { liveUntil, raw, type Running, startIn, storedEvents } from "./harness.js"

const send = (server: Running, path: string, body: unknown) =>
  raw(`${server.url}${path}`, { method: "POST", token: server.token, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const liveAfter = (server: Running, sessionId: string, after: number, until: (event: AgentEvent.AgentEvent) => boolean) =>
  Effect.promise(() => liveUntil(`${server.url}/sessions/${sessionId}/live`, { token: server.token, after }, until))

describe("POST /sessions/:id/followups during a manual compaction", () => {
  it.scopedLive("answers 202 once stored, while the compaction runs; the follow-up's turn runs after it", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["never"], delay: "1 hour" }, { chunks: ["answer 3"] }]
      })
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      for (const message of ["one", "two"]) {
        const { lastSequence } = yield* server.client.sessions.get({ path: { id: sessionId } })
        const { turnId } = yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message } })
        yield* liveAfter(server, sessionId, lastSequence, (e) => e.type === "turn.completed" && e.turnId === turnId)
      }
      const { lastSequence } = yield* server.client.sessions.get({ path: { id: sessionId } })
      // The summary never comes: the compaction runs until its client goes away.
      const abort = new AbortController()
      const compaction = yield* Effect.fork(Effect.promise(() =>
        fetch(`${server.url}/sessions/${sessionId}/compact`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          body: JSON.stringify({ keepRecentTokens: 0 }),
          signal: abort.signal
        }).then(() => "answered", () => "aborted")
      ))
      yield* liveAfter(server, sessionId, lastSequence, (e) => e.type === "compaction.started")
      const queued = yield* Effect.fork(send(server, `/sessions/${sessionId}/followups`, { message: "three" }))
      // The follow-up answers while the compaction still runs (a follow-up that waited for the
      // compaction's end would wait until vitest's timeout: the compaction only ends when aborted).
      const answer = yield* Fiber.join(queued)
      expect(answer.status).toBe(202)
      const { queueId } = answer.body as { queueId: string }
      const stored = yield* storedEvents(server, sessionId)
      expect(stored.map((e) => e.type).slice(lastSequence)).toEqual(["compaction.started", "followup.queued"])
      // The compaction ends (its client goes away); the follow-up's turn then runs.
      abort.abort()
      expect(yield* Fiber.join(compaction)).toBe("aborted")
      const rest = yield* liveAfter(server, sessionId, lastSequence, (e) => e.type === "turn.completed")
      expect(rest.map((e) => e.type)).toEqual([
        "compaction.started",
        "followup.queued",
        "compaction.failed",
        "turn.started",
        "user.message",
        "context.built",
        "model.delta",
        "turn.completed"
      ])
      expect(rest.find((e) => e.type === "compaction.failed")).toMatchObject({ payload: { errorCode: "cancelled" } })
      expect(rest.find((e) => e.type === "turn.started")).toMatchObject({ payload: { queueId } })
    }))
})
