/**
 * A response's delta is one object on its way to the log (perf65stream): the reading makes each
 * piece's event in the shape the commit stores (`LiveSession.madeEvent`), and the commit sets its
 * sequence, timestamp and id in place (`LiveSession.commitMade`). It was a draft a delta (an object
 * whose only use was to be copied) and the event the commit made of it: two objects a delta on row
 * 1's path where one is kept. Failed on main: there was no way to commit an event as it was made —
 * every commit copied each draft into an event of its own.
 */
import { setFlagsFromString } from "node:v8"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent, EventOfType } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as EventDraft from "../../src/engine/EventDraft.js"
import * as LiveSession from "../../src/engine/LiveSession.js"
import type { Services } from "../../src/engine/Services.js"
import { TurnSink } from "../../src/engine/TurnSink.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"

setFlagsFromString("--allow-natives-syntax")
// Compiled after the flag is set: V8's own answer, not a guess from the outside.
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean

const created: EventOfType<"session.created"> = {
  id: "evt_0",
  sessionId: "sess_1",
  sequence: 1,
  timestamp: "2026-12-07T00:00:00.000Z",
  type: "session.created",
  payload: { cwd: "/w", client: "test" }
}

/** What a commit needs of the engine's services: ids, a store that keeps what it is given, watchers. */
const servicesWith = (stored: Array<AgentEvent>) =>
  Effect.map(IdGenerator.IdGenerator, (ids) => ({
    ids,
    store: { appendAll: (events: ReadonlyArray<AgentEvent>) => Effect.sync(() => void stored.push(...events)) },
    watchers: { publish: () => undefined }
  }) as unknown as Services)

describe("a response's events as they are made", () => {
  it.effect("are stored as the objects made — sequence, timestamp and id set in place — in the shape a draft's commit gives", () =>
    Effect.gen(function*() {
      const stored: Array<AgentEvent> = []
      const services = yield* servicesWith(stored)
      const session = LiveSession.replayed(SessionState.fromCreated(created), [created])
      const [started] = yield* LiveSession.commit(services, session, "turn_1", [EventDraft.turnStarted("hi")])
      const made = ["a", "b", "c"].map((text) => LiveSession.madeEvent(session.sessionId, "turn_1", "model.delta", { text }))
      const sink = new TurnSink()
      let guarded = 0
      const events = yield* LiveSession.commitMade(services, session, "turn_1", made, () => ++guarded > 0, sink)
      // The same objects, stored, folded and handed on: no copy.
      expect(events.length).toBe(3)
      for (let i = 0; i < 3; i++) {
        expect(events[i]).toBe(made[i])
        expect(stored[i + 1]).toBe(made[i])
      }
      expect(events.map((e) => [e.id, e.sequence, e.timestamp])).toEqual([
        ["evt_2", 3, started!.timestamp],
        ["evt_3", 4, started!.timestamp],
        ["evt_4", 5, started!.timestamp]
      ])
      expect(session.state.lastSequence).toBe(5)
      // Folded into the transcript as the turn's text.
      expect(JSON.stringify(session.transcript.snapshot())).toContain('"abc"')
      // Written as a draft's commit writes its event, byte for byte and key for key, and the same hidden class.
      const [copied] = yield* LiveSession.commit(services, session, "turn_1", [EventDraft.modelDelta("d")])
      expect(JSON.stringify({ ...events[0], id: "x", sequence: 0, timestamp: "t", payload: { text: "d" } }))
        .toBe(JSON.stringify({ ...copied, id: "x", sequence: 0, timestamp: "t" }))
      expect(haveSameMap(events[0]!, copied!)).toBe(true)
    }).pipe(Effect.provide(IdGenerator.layerSequential)))

  it.effect("a made event the guard refuses is not stored, and takes no sequence", () =>
    Effect.gen(function*() {
      const stored: Array<AgentEvent> = []
      const services = yield* servicesWith(stored)
      const session = LiveSession.replayed(SessionState.fromCreated(created), [created])
      yield* LiveSession.commit(services, session, "turn_1", [EventDraft.turnStarted("hi")])
      const made = ["a", "b", "c"].map((text) => LiveSession.madeEvent(session.sessionId, "turn_1", "model.delta", { text }))
      const events = yield* LiveSession.commitMade(services, session, "turn_1", made, (_, draft) => draft !== made[1], undefined)
      expect(events).toEqual([made[0], made[2]])
      expect(events.map((e) => e.sequence)).toEqual([3, 4])
      expect(stored.map((e) => e.sequence)).toEqual([2, 3, 4])
    }).pipe(Effect.provide(IdGenerator.layerSequential)))
})
