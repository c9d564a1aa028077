/**
 * `/live`'s encoding: a frame's `data:` is the stored event's JSON byte for byte (text with quotes,
 * newlines, U+2028, astral characters and markup included), and an event is encoded once for all
 * the clients watching it — every watcher is handed the same event, so the same bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { startIn } from "./harness.js"

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const completed = (event: AgentEvent.AgentEvent) => event.type === "turn.completed"

describe("/live encoding", () => {
  it.scopedLive("data: is the stored line byte for byte; two watchers share one encoding of each live event", () =>
    Effect.gen(function*() {
      const chunks = ["é😀 \"quoted\" \\ back", "line\nbreak\r\n", "\u2028sep\u2029", "</script><b>", "\u0000nul\u001f"]
      const { dataDir, server } = yield* startIn({ responses: [{ chunks, delay: "1 millis" }] })
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      // A watcher has subscribed once it has read session.created from the store.
      const watch = (subscribed: Deferred.Deferred<void>) =>
        server.engine.watchSession({ sessionId }).pipe(
          Stream.tap((event) => (event.sequence === 1 ? Deferred.succeed(subscribed, undefined) : Effect.void)),
          Stream.takeUntil(completed),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray),
          Effect.fork
        )
      const ready = [yield* Deferred.make<void>(), yield* Deferred.make<void>()] as const
      const watchers = [yield* watch(ready[0]), yield* watch(ready[1])]
      yield* Effect.forEach(ready, Deferred.await)
      yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "go" } })
      const [first, second] = yield* Effect.forEach(watchers, Fiber.join)
      const stored = readFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      expect(first!.length).toBe(stored.length)
      expect(second!.map((e) => e.sequence)).toEqual(first!.map((e) => e.sequence))
      first!.forEach((event, index) => {
        expect(decode(Live.message(event))).toBe(`id: ${event.sequence}\nevent: ${event.type}\ndata: ${stored[index]}\n\n`)
      })
      // The deltas came live to both: the same events, so one encoding (the same bytes) for both.
      const deltas = first!.filter((e) => e.type === "model.delta")
      expect(deltas.map((e) => (e as { payload: { text: string } }).payload.text)).toEqual(chunks)
      for (const delta of deltas) {
        const other = second!.find((e) => e.sequence === delta.sequence)!
        expect(other).toBe(delta)
        expect(Live.message(other)).toBe(Live.message(delta))
      }
    }))
})
