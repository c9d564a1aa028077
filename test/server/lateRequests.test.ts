/**
 * A Stop, or a message, that lands a moment too late over HTTP: the client meant the turn it was
 * showing, which has ended meanwhile, and the session's queued follow-up runs now.
 * `POST /sessions/:id/cancel?turnId=` cancels that turn only: a late cancel is a no-op (CONTRACT.md
 * §3, "every adapter keeps this"), and the follow-up's turn goes on. `POST /sessions/:id/steer
 * {message, turnId}` is refused (409 `NoTurnInProgress`) rather than fed to the follow-up's turn.
 * Without `turnId` both act on whatever runs, as before. No timing: the first turn is ended by a
 * cancel the test makes, and the follow-up's model waits on a delay the test never lets pass.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { expectWellFormedLog } from "../helpers.js"
import { raw, startIn, storedEvents } from "./harness.js"

describe("the HTTP API: a late cancel or steer", () => {
  it.scopedLive("a cancel naming a turn that has ended leaves the follow-up's turn running; without a turn id it cancels what runs", () =>
    Effect.gen(function*() {
      // Both model requests wait far longer than the test: only a cancel ends them.
      const { server } = yield* startIn({ responses: [{ chunks: ["first"], delay: "1 hour" }, { chunks: ["second"], delay: "1 hour" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      const id = { id: session.sessionId }
      const { turnId: first } = yield* server.client.sessions.startTurn({ path: id, payload: { message: "the first turn" } })
      yield* server.client.sessions.followUp({ path: id, payload: { message: "the follow-up" } })
      // Another client stops the first turn; the queued follow-up's turn is chosen before that answers.
      yield* server.engine.cancelTurn({ sessionId: session.sessionId, turnId: first })
      // Waits for the follow-up's turn to be stored as started (an event, not a delay).
      const started = yield* server.engine.watchSession({ sessionId: session.sessionId }).pipe(
        Stream.filterMap((e) => e.type === "turn.started" && e.turnId !== first ? Option.some(e.turnId) : Option.none()),
        Stream.runHead
      )
      const second = Option.getOrThrow(started)

      // The viewer's message for the first turn, sent before it saw that turn end: refused, nothing stored.
      const json = (body: unknown) => ({ method: "POST", token: server.token, body: JSON.stringify(body), headers: { "content-type": "application/json" } })
      const lateSteer = yield* raw(`${server.url}/sessions/${session.sessionId}/steer`, json({ message: "meant for the first turn", turnId: first }))
      expect(lateSteer.status).toBe(409)
      expect(lateSteer.body).toMatchObject({ error: "NoTurnInProgress" })
      const steer = yield* raw(`${server.url}/sessions/${session.sessionId}/steer`, json({ message: "meant for the follow-up", turnId: second }))
      expect(steer.status).toBe(202)

      // The viewer's Stop for the first turn, sent before it saw that turn end.
      const late = yield* raw(`${server.url}/sessions/${session.sessionId}/cancel?turnId=${first}`, { method: "POST", token: server.token })
      expect(late.status).toBe(200)
      const after = yield* server.client.sessions.get({ path: id })
      expect(after.openTurnId).toBe(second)
      expect(after.phase).not.toBe("idle")

      // A cancel without a turn id stops the turn that runs, as it always did.
      const plain = yield* raw(`${server.url}/sessions/${session.sessionId}/cancel`, { method: "POST", token: server.token })
      expect(plain.status).toBe(200)
      const events = yield* storedEvents(server, session.sessionId)
      expectWellFormedLog(events)
      const ends = events.filter((e) => e.type === "turn.completed")
      expect(ends.map((e) => [e.turnId, e.payload.stopReason])).toEqual([[first, "cancelled"], [second, "cancelled"]])
    }))

  it.scopedLive("a turn id that is not a turn's id is a 400; a cancel naming the running turn stops it", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["slow"], delay: "1 hour" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      const { turnId } = yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "slow" } })
      const empty = yield* raw(`${server.url}/sessions/${session.sessionId}/cancel?turnId=`, { method: "POST", token: server.token })
      expect(empty.status).toBe(400)
      const named = yield* raw(`${server.url}/sessions/${session.sessionId}/cancel?turnId=${turnId}`, { method: "POST", token: server.token })
      expect(named).toMatchObject({ status: 200, body: { ok: true } })
      const events = yield* storedEvents(server, session.sessionId)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", turnId, payload: { stopReason: "cancelled" } })
    }))
})
