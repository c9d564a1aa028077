/**
 * Watchers of a session another process drives follow it by reading the store: once per
 * `watchPollInterval` for the session, whatever the number of its watchers (each watcher read the
 * store on a tick of its own before: 500 `/live` clients of an idle session were 2,000 store reads
 * a second), and still every event once, in order.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { collect, expectWellFormedLog, tempDir } from "../helpers.js"
import { engineOn as watchingEngineOn } from "./watchingEngine.js"

const interval = 20

/** An engine of its own (see `watchingEngine`), counting its store's reads, and its looks at a log's last sequence in `looks`. */
const engineOn = (dataDir: string, responses: number, reads: { count: number }, looks = { count: 0 }) =>
  watchingEngineOn(dataDir, responses, { read: () => reads.count++, look: () => looks.count++ }, interval)

describe("watchSession across processes, many watchers", () => {
  it.live("the store is read once per interval for the session, not once per watcher, and every watcher sees every event once", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writerReads = { count: 0 }
      const watcherReads = { count: 0 }
      const watcherLooks = { count: 0 }
      const writer = yield* engineOn(dataDir, 2, writerReads)
      const watcher = yield* engineOn(dataDir, 0, watcherReads, watcherLooks)
      const { sessionId } = yield* writer.createSession({ cwd: "/work", client: "test" })
      yield* collect(writer.runTurn({ sessionId, userMessage: "one" }))
      const watchers = 20
      const watching = yield* Effect.forEach(Array.from({ length: watchers }), () => {
        let ended = 0
        return collect(watcher.watchSession({ sessionId }).pipe(Stream.takeUntil((e) => e.type === "turn.completed" && ++ended === 2))).pipe(Effect.fork)
      })
      // Every watcher has read the store (its first read; the session's existence check only looks at the log's end): now only polls read it.
      while (watcherReads.count < watchers) yield* Effect.sleep("5 millis")
      yield* Effect.sleep(`${2 * interval} millis`)
      const before = watcherReads.count + watcherLooks.count
      const start = performance.now()
      yield* Effect.sleep(`${10 * interval} millis`)
      // A poll with nothing new only looks at the log's end; one with something new reads it.
      const polls = watcherReads.count + watcherLooks.count - before
      const elapsed = performance.now() - start
      // One poll a session every interval at most (a late one may be under way): a watcher's own
      // tick each would be 20 times that.
      expect(polls).toBeLessThanOrEqual(Math.ceil(elapsed / interval) + 1)
      expect(polls).toBeGreaterThan(0)

      // Another process writes a turn: every watcher gets all of it, once, in order, from the shared poll.
      yield* collect(writer.runTurn({ sessionId, userMessage: "two" }))
      const log = yield* collect(writer.replaySession({ sessionId }))
      for (const fiber of watching) {
        const seen = yield* Fiber.join(fiber)
        expect(seen).toEqual(log)
        expectWellFormedLog(seen)
      }
    }).pipe(Effect.provide(NodeContext.layer), Effect.scoped))
})
