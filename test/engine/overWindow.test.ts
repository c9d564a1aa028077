/**
 * review58b: a user message the model's window could never hold (a 1 MB paste into a 128,000-token
 * model) was stored, and that turn and every later one of the session ended `context_overflow` —
 * a compaction keeps the latest message whole. The engine now refuses it before anything is
 * stored: `runTurn` with `InvalidInput {field: "userMessage"}`, `steer` and `followUp` with
 * `{field: "message"}`, the detail saying its size and the window (`Tokens.overWindow`); the
 * session goes on as it was. A message just under the window is taken (its request may still
 * overflow with the history: compaction.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Tokens from "../../src/domain/Tokens.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { collect, engineLayer, typesOf } from "../helpers.js"

const window = 1000
const over = "y".repeat(window * 4 + 1)

describe("a message the model's window could never hold", () => {
  it.effect("runTurn, followUp and steer refuse it with InvalidInput before anything is stored; the session goes on", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const before = yield* collect(engine.replaySession({ sessionId }))
      const refused = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: over })))
      expect(refused).toMatchObject({
        _tag: "InvalidInput",
        field: "userMessage",
        detail: "is about 1,001 tokens (4,001 characters), more than the model's whole context window (1,000 tokens): it could never be sent, " +
          "and would end every later turn of the session context_overflow; nothing was stored — send a shorter message (a long text can go in a file the agent reads)"
      })
      expect(yield* Effect.flip(engine.followUp({ sessionId, message: over }))).toMatchObject({ _tag: "InvalidInput", field: "message" })
      expect(yield* Effect.flip(engine.steer({ sessionId, message: over }))).toMatchObject({ _tag: "InvalidInput", field: "message" })
      expect(yield* collect(engine.replaySession({ sessionId }))).toEqual(before)
      const next = yield* collect(engine.runTurn({ sessionId, userMessage: "a short one" }))
      expect(typesOf(next).slice(0, 2)).toEqual(["turn.started", "user.message"])
      expect(next.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ chunks: ["ok"] }], maxContextTokens: window }))))

  it("the bound is the window itself: a message of the window's size is taken", () => {
    expect(Tokens.overWindow("y".repeat(window * 4), window)).toBeUndefined()
    expect(Tokens.overWindow("y".repeat(window * 4 + 1), window)).toMatch(/^is about 1,001 tokens/)
  })
})
