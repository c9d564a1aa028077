/**
 * Cache-break notices in the engine, with the scripted model reporting cache reads: no notice while
 * reads grow, one when they drop — naming the history after a compaction — and the session's last
 * response is read from the log, so a new engine on the same store still compares with it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { collect, engineLayer } from "../helpers.js"

const read = (cacheReadTokens: number, chunks: ReadonlyArray<string> = ["ok"]) => ({ chunks, usage: { inputTokens: 10, outputTokens: 1, cacheReadTokens } })

const breaks = (log: ReadonlyArray<AgentEvent>) => log.flatMap((e) => (e.type === "cache.break" ? [e.payload] : []))

describe("cache.break", () => {
  it.effect("reads that grow break nothing; a compaction between two turns shows as the history that changed", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      yield* collect(agent.runTurn({ sessionId, userMessage: "one" }))
      yield* collect(agent.runTurn({ sessionId, userMessage: "two" }))
      expect(breaks(yield* collect(agent.replaySession({ sessionId })))).toEqual([])
      yield* agent.compactSession({ sessionId })
      yield* collect(agent.runTurn({ sessionId, userMessage: "three" }))
      expect(breaks(yield* collect(agent.replaySession({ sessionId })))).toEqual([
        { previousCacheRead: 500, cacheRead: 0, changed: [{ part: "history", source: "compaction" }] }
      ])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [read(100), read(500), read(0, ["the summary"]), read(0)] }))))

  it.effect("a response without usage leaves the comparison to the next one that has some", () =>
    Effect.gen(function*() {
      const agent = yield* SessionEngine
      const { sessionId } = yield* agent.createSession({ cwd: "/work", client: "test" })
      for (const message of ["one", "two", "three"]) yield* collect(agent.runTurn({ sessionId, userMessage: message }))
      const log = yield* collect(agent.replaySession({ sessionId }))
      expect(log.filter((e) => e.type === "model.usage")).toHaveLength(2)
      expect(breaks(log)).toEqual([{ previousCacheRead: 800, cacheRead: 200, changed: [] }])
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [read(800), { chunks: ["no usage"] }, read(200)] }))))
})
