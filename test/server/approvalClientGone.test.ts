/**
 * The clients going away in the middle of an approval over HTTP (timing4): the viewer following
 * `/live` disconnects once the turn asks, and no client ever answers. A turn started over HTTP runs
 * on its own whoever is connected, so it stays paused on the question — the session says so, the
 * server goes on serving — and the server's shutdown does not wait for the answer: the turn is left
 * paused in the log. A new server on the same data dir takes the answer and resumes the turn to its end.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { expectWellFormedLog } from "../helpers.js"
import { liveUntil, start, storedEvents, workspace } from "./harness.js"

describe("the HTTP API: the clients go away during an approval", () => {
  it.scopedLive("the turn stays paused, the shutdown does not wait for it, a new server resumes it with the answer", () =>
    Effect.gen(function*() {
      const { cwd, dataDir } = workspace()
      const responses = [{ toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }, { chunks: ["written"] }]
      const first = yield* start({ cwd, dataDir, responses })
      const session = yield* first.client.sessions.create({ payload: {} })
      const id = { id: session.sessionId }
      yield* first.client.sessions.startTurn({ path: id, payload: { message: "write the notes" } })
      // The viewer follows the turn until it asks, then goes away (its reader is cancelled).
      const seen = yield* Effect.promise(() =>
        liveUntil(`${first.url}/sessions/${session.sessionId}/live`, { token: first.token }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask"))
      const asked = seen.at(-1)!
      const toolCallId = (asked.payload as { toolCallId: string }).toolCallId

      const paused = yield* first.client.sessions.get({ path: id })
      expect(paused.pendingApprovals.map((call) => call.toolCallId)).toEqual([toolCallId])
      // The server still serves: another session is created meanwhile.
      const other = yield* first.client.sessions.create({ payload: {} })
      expect(other.sessionId).not.toBe(session.sessionId)
      const before = yield* storedEvents(first, session.sessionId)
      expect(before.at(-1)).toEqual(asked)

      // Nobody answers: the shutdown ends without waiting, the turn left paused in the log.
      yield* first.stop
      const second = yield* start({ cwd, dataDir, responses: responses.slice(1) })
      const stillPaused = yield* second.client.sessions.get({ path: id })
      expect(stillPaused.pendingApprovals.map((call) => call.toolCallId)).toEqual([toolCallId])
      expect(yield* storedEvents(second, session.sessionId)).toEqual(before)

      yield* second.client.sessions.approve({ path: { id: session.sessionId, toolCallId }, payload: { decision: "allow" } })
      const rest = yield* Effect.promise(() =>
        liveUntil(`${second.url}/sessions/${session.sessionId}/live`, { token: second.token, after: before.length }, (e) => e.type === "turn.completed"))
      expect(rest.at(-1)?.payload).toEqual({ stopReason: "final" })
      const log = yield* storedEvents(second, session.sessionId)
      expectWellFormedLog(log)
      expect(log.slice(0, before.length)).toEqual(before)
      expect(log.filter((e) => e.type === "tool.completed")).toHaveLength(1)
    }))
})
