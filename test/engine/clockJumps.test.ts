/**
 * A session written across a step of the wall clock: event timestamps are the Clock's (CONTRACT §2),
 * so a turn after the clock stepped back an hour is stamped earlier than the turn before it. Nothing
 * orders by them but the listing: the log stays well formed and gap-free, replay folds it, the title,
 * a fork and the listing take it as it is, and the session's activity time is its last event's stamp.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { withJumpingClock } from "../clockJumps.js"
import { collect, expectWellFormedLog, tempDir } from "../helpers.js"
import * as NodeContext from "@effect/platform-node/NodeContext"

describe("a session across a wall clock stepped back", () => {
  it.scoped("turns before and after the step: a well-formed log, replayed, titled, forked and listed by its last stamp", () =>
    withJumpingClock(({ jump }) =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const engine = yield* SessionEngine.make().pipe(
          Effect.provide(Layer.mergeAll(JsonlEventStore.layer({ dataDir }), FakeModelProvider.layer(), IdGenerator.layer))
        )
        yield* TestClock.adjust("2 hours")
        const { sessionId } = yield* engine.createSession({ cwd: "/w", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "first" }))
        const other = (yield* engine.createSession({ cwd: "/w", client: "test" })).sessionId
        yield* jump(-60 * 60 * 1000)
        yield* TestClock.adjust("1 minute")
        yield* collect(engine.runTurn({ sessionId, userMessage: "second" }))
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        const stamps = log.map((e) => e.timestamp)
        expect(stamps.at(-1)! < stamps[0]!).toBe(true)
        const state = yield* engine.sessionState({ sessionId })
        expect(state.turnCount).toBe(2)
        expect(state.lastActivityAt).toBe(stamps.at(-1))
        // The listing orders by the last stamp: the session written after the step is below the one made before it.
        const listed = yield* engine.listSessions
        expect(listed.map((s) => s.sessionId)).toEqual([other, sessionId])
        expect(listed[1]).toMatchObject({ title: "first", lastActivityAt: stamps.at(-1) })
        const fork = yield* engine.forkSession({ sessionId })
        const forked = yield* collect(engine.replaySession({ sessionId: fork.sessionId }))
        expectWellFormedLog(forked)
        expect(forked.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["first", "second"])
      })
    ).pipe(Effect.provide(NodeContext.layer)))
})
