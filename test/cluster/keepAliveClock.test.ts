/**
 * The approval hold of a session's entity (`KeepAlive`) across a jump of the wall clock: a turn
 * waiting for the user keeps its entity for `approvalHold` of time that passed, whichever way the
 * clock was set meanwhile.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { KeepAlive } from "../../src/cluster.js"
import { FakeModelProvider, IdGenerator, MemoryEventStore, SessionEngine } from "../../src/index.js"
import { withJumpingClock } from "../clockJumps.js"
import { testTools } from "../helpers.js"

/** An engine with a session whose turn waits for the user's answer, and a keeper of that session recording what it asks of the cluster. */
const waitingKeeper = Effect.gen(function*() {
  const engine = yield* SessionEngine.make()
  const { sessionId } = yield* engine.createSession({ cwd: "/w", client: "test" })
  const kept: Array<boolean> = []
  const keeper = yield* KeepAlive.make({ engine, sessionId, approvalHold: "1 minute", keepAlive: (on) => Effect.sync(() => void kept.push(on)) })
  const asked = yield* Deferred.make<void>()
  yield* engine.runTurn({ sessionId, userMessage: "go" }).pipe(
    // No permission engine: the default asks the user about every call, and the turn waits.
    Stream.runForEach((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void),
    Effect.forkScoped
  )
  yield* Deferred.await(asked)
  keeper.drove(false)
  yield* keeper.check
  return kept
}).pipe(
  Effect.provide(Layer.mergeAll(
    MemoryEventStore.layer,
    FakeModelProvider.layer({ responses: [{ toolCalls: [{ tool: "nothing", args: {} }] }] }),
    IdGenerator.layerSequential,
    testTools({ nothing: { run: () => Effect.succeed({ result: "done" }) } })
  ))
)

describe("the approval hold across a jump of the wall clock", () => {
  it.scoped("a waiting turn lets its entity go after approvalHold when the clock stepped back an hour meanwhile", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const kept = yield* waitingKeeper
        yield* TestClock.adjust("1 second")
        expect(kept).toEqual([false, true])
        yield* jump(-60 * 60 * 1000)
        yield* TestClock.adjust("2 minutes")
        expect(kept).toEqual([false, true, false])
      })
    ))

  it.scoped("a waiting turn keeps its entity for approvalHold when the clock steps forward a day", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const kept = yield* waitingKeeper
        yield* TestClock.adjust("1 second")
        yield* jump("1 day")
        yield* TestClock.adjust("30 seconds")
        expect(kept).toEqual([false, true])
      })
    ))
})
