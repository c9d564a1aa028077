/**
 * A steer that lands a moment too late: the client wrote it for the turn it was showing, which has
 * ended meanwhile, and the session's queued follow-up runs now. Sent with that turn's id, it is
 * refused (`NoTurnInProgress`) rather than fed to the follow-up's turn as if the user had said it
 * there; sent with the running turn's id it is stored in that turn, and without an id it goes to
 * whatever turn runs, as before. No timing: the first turn is ended by a cancel the test makes, and
 * the follow-up's turn waits in a tool until the test opens its gate.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, expectWellFormedLog, testTools } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })

describe("steer: a late one", () => {
  it.effect("naming a turn that has ended is refused while the follow-up's turn runs; naming the running turn, it is stored there", () =>
    Effect.gen(function*() {
      const firstRuns = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const tools = testTools({
        hold: { run: () => Deferred.succeed(firstRuns, undefined).pipe(Effect.zipRight(Effect.never)) },
        wait: { run: () => Effect.as(Deferred.await(gate), { result: "waited" }) }
      })
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const first = yield* collect(engine.runTurn({ sessionId, userMessage: "first" })).pipe(Effect.fork)
        yield* Deferred.await(firstRuns)
        yield* engine.followUp({ sessionId, message: "the follow-up" })
        const firstTurnId = (yield* engine.sessionState({ sessionId })).openTurn!.turnId
        yield* engine.cancelTurn({ sessionId, turnId: firstTurnId })
        yield* Fiber.join(first)
        // The follow-up's turn is in its tool (an event, not a delay).
        const secondTurnId = Option.getOrThrow(yield* engine.watchSession({ sessionId }).pipe(
          Stream.filterMap((e) => e.type === "tool.started" && e.turnId !== firstTurnId ? Option.some(e.turnId) : Option.none()),
          Stream.runHead
        ))

        const late = yield* Effect.either(engine.steer({ sessionId, message: "meant for the first turn", turnId: firstTurnId }))
        expect(late._tag === "Left" && late.left._tag).toBe("NoTurnInProgress")
        yield* engine.steer({ sessionId, message: "meant for the follow-up", turnId: secondTurnId })

        yield* Deferred.succeed(gate, undefined)
        const log = yield* collect(engine.watchSession({ sessionId }).pipe(
          Stream.takeUntil((e) => e.type === "turn.completed" && e.turnId === secondTurnId)
        ))
        expectWellFormedLog(log)
        const steered = log.flatMap((e) => e.type === "turn.steered" ? [[e.turnId, e.payload.content]] : [])
        expect(steered).toEqual([[secondTurnId, "meant for the follow-up"]])
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [{ toolCalls: [{ tool: "hold", args: {} }] }, { toolCalls: [{ tool: "wait", args: {} }] }, { chunks: ["done"] }]
      }).pipe(Layer.provideMerge(tools), Layer.provideMerge(allowAll))))
    }))
})
