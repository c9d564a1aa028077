/**
 * A follow-up, a steer or a second turn sent while a rewind runs on the session (timing4). The
 * rewind is held at a known point — its plan's read of the log, gated in a store wrapper — while the
 * others are sent: the follow-up is answered at once (queued durably, before `session.rewound`), a
 * steer is refused `NoTurnInProgress` (no turn runs) and stores nothing, and a turn asked for waits:
 * a rewind holds the session as a manual compaction does, so the turn starts once it has ended
 * (docs/sessions.md). Then the follow-up's turn runs, then the asked one, both after `session.rewound`,
 * on the rewound conversation.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, typesOf } from "../helpers.js"

/** A memory store whose next whole-log read waits, once armed, until released. */
const gatedReads = Effect.runSync(Effect.all({ reached: Deferred.make<void>(), release: Deferred.make<void>() }))
let armed = false
const gated = Layer.effect(
  EventStore,
  Effect.map(EventStore, (store) => ({
    ...store,
    read: (sessionId: string, options?: Parameters<EventStore.Service["read"]>[1]) =>
      armed && options?.fromSequence === undefined
        ? Stream.unwrap(Effect.suspend(() => {
          armed = false
          return Effect.as(Effect.zipRight(Deferred.succeed(gatedReads.reached, undefined), Deferred.await(gatedReads.release)), store.read(sessionId, options))
        }))
        : store.read(sessionId, options)
  }))
).pipe(Layer.provide(MemoryEventStore.layer))

describe("messages sent while a rewind runs", () => {
  it.effect("a follow-up is queued at once, a steer refused, a turn waits; both turns run after the rewind, in order", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "one" }))
      const point = (yield* engine.sessionState({ sessionId })).lastSequence
      yield* collect(engine.runTurn({ sessionId, userMessage: "two" }))
      const before = (yield* engine.sessionState({ sessionId })).lastSequence

      armed = true
      const rewind = yield* Effect.fork(engine.rewindSession({ sessionId, toSequence: point }))
      yield* Deferred.await(gatedReads.reached)
      const { queueId } = yield* engine.followUp({ sessionId, message: "three" })
      const steered = yield* Effect.flip(engine.steer({ sessionId, message: "steer" }))
      expect(steered._tag).toBe("NoTurnInProgress")
      const second = yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: "four" })))
      // Nothing stored for the steer or the waiting turn while the rewind holds the session.
      expect((yield* engine.sessionState({ sessionId })).lastSequence).toBe(before + 1)
      yield* Deferred.succeed(gatedReads.release, undefined)
      const rewound = yield* Fiber.join(rewind)
      expect(rewound.toSequence).toBe(point)
      const asked = yield* Fiber.join(second)
      expect(asked.at(-1)?.payload).toEqual({ stopReason: "final" })

      const log = yield* collect(engine.replaySession({ sessionId }))
      expectWellFormedLog(log)
      const turn = ["turn.started", "user.message", "model.delta", "turn.completed"]
      expect(typesOf(log.slice(before))).toEqual(["followup.queued", "session.rewound", ...turn, ...turn])
      expect(log[before + 2]?.payload).toMatchObject({ queueId })
      expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["one", "two", "three", "four"])
      expect((yield* engine.sessionState({ sessionId })).followUps).toEqual([])
      // The turns after the rewind see its conversation: "one", then theirs — not "two".
      const requests = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      expect(requests.at(-1)!.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["one", "three", "four"])
    }).pipe(Effect.provide(engineLayer(gated, { responses: [{ chunks: ["answer one"] }, { chunks: ["answer two"] }, { chunks: ["answer three"] }, { chunks: ["answer four"] }] }))))
})
