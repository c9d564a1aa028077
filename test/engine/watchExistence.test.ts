/**
 * A watch of a session this engine does not hold checks that the session is stored (storage3). It
 * read the session's first event for that — on JSONL a 64 KiB chunk of the log, or the whole log
 * when smaller — even with `fromSequence` past everything stored; a store that tells a log's last
 * sequence from its end (4 KiB) answers it now, and the log is read from where the watch starts only.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { collect, tempDir } from "../helpers.js"
import { engineOn as watchingEngineOn } from "./watchingEngine.js"

const engineOn = (dataDir: string, responses: number, readsFrom: Array<number>) =>
  watchingEngineOn(dataDir, responses, { read: (fromSequence) => readsFrom.push(fromSequence) }, 20)

describe("watchSession of a session another engine writes", () => {
  it.live("from past the end: the log is never read from its start", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writer = yield* engineOn(dataDir, 2, [])
      const readsFrom: Array<number> = []
      const watcher = yield* engineOn(dataDir, 0, readsFrom)
      const { sessionId } = yield* writer.createSession({ cwd: "/work", client: "test" })
      yield* collect(writer.runTurn({ sessionId, userMessage: "one" }))
      const stored = yield* collect(writer.replaySession({ sessionId }))
      const from = stored.length + 1
      const watching = yield* watcher.watchSession({ sessionId, fromSequence: from }).pipe(Stream.take(1), collect, Effect.fork)
      yield* collect(writer.runTurn({ sessionId, userMessage: "two" }))
      const [first] = yield* Fiber.join(watching)
      expect(first?.sequence).toBe(from)
      // Before: [1, …] — the existence check's read of the first event.
      expect(readsFrom.filter((sequence) => sequence < from)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))

  it.live("a session never stored is still SessionNotFound", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const watcher = yield* engineOn(dataDir, 0, [])
      const error = yield* Effect.flip(watcher.watchSession({ sessionId: "sess_none" }).pipe(Stream.runDrain))
      expect(error._tag).toBe("SessionNotFound")
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
})
