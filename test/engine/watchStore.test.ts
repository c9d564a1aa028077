import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

/** An engine of its own on the JSONL store in `dataDir`, as a second process would have. */
const engineOn = (dataDir: string, responses: number) =>
  Effect.map(
    Layer.build(engineLayer(JsonlEventStore.layer({ dataDir }), { responses: Array.from({ length: responses }, (_, i) => ({ chunks: [`answer ${i}`, "."] })) }, {
      watchPollInterval: "10 millis"
    })),
    (context) => context.unsafeMap.get(SessionEngine.key) as SessionEngine["Type"]
  )

describe("watchSession across processes", () => {
  it.live("a watcher follows a session another engine drives on the same store: every event once, in order, across turns and a follow-up", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writer = yield* engineOn(dataDir, 4)
      const watcher = yield* engineOn(dataDir, 0)
      const { sessionId } = yield* writer.createSession({ cwd: "/work", client: "test" })
      yield* collect(writer.runTurn({ sessionId, userMessage: "one" }))
      let completed = 0
      const watching = yield* collect(watcher.watchSession({ sessionId }).pipe(
        Stream.takeUntil((e) => e.type === "turn.completed" && ++completed === 4)
      )).pipe(Effect.fork)
      yield* collect(writer.runTurn({ sessionId, userMessage: "two" }))
      yield* writer.followUp({ sessionId, message: "three" })
      // The follow-up's turn runs in the writer: wait for it to complete, then run the fourth turn.
      let ended = 0
      yield* collect(writer.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed" && ++ended === 3)))
      yield* collect(writer.runTurn({ sessionId, userMessage: "four" }))
      const seen = yield* Fiber.join(watching)
      const log = yield* collect(writer.replaySession({ sessionId }))
      expect(seen).toEqual(log.slice(0, seen.length))
      expect(seen.at(-1)!.sequence).toBe(log.at(-1)!.sequence)
      expectWellFormedLog(seen)
    }).pipe(Effect.provide(NodeContext.layer), Effect.scoped))
})
