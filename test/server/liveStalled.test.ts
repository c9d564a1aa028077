/**
 * `/live` with a client that stops reading: a real socket whose reader is paused, so TCP pushes
 * back and the server cannot write to it. The server must neither hold the other clients nor keep
 * the stalled client's events in memory: the session's feed lets the oldest go, and when the
 * client reads again its watcher reads what it missed from the store — every event once, in order,
 * each `data:` the stored line byte for byte.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { liveUntil, stalledReader, startIn } from "./harness.js"

const completed = (event: AgentEvent.AgentEvent) => event.type === "turn.completed"

/**
 * `joined`: a first client starts the session's shared watch, and the stalled one joins it — answered
 * in Node's request callback, without a fiber, and given one once let go (perf65serve).
 */
const stalledRun = (joined: boolean) =>
    Effect.gen(function*() {
      // ~10 MB of events, beyond what the sockets' buffers hold, a delta at a time (each its own
      // commit, as a real provider's stream arrives); the feed keeps the last 8 to 16.
      const deltas = 400
      const text = "x".repeat(25_000)
      const gapReads: Array<{ readonly from: number; readonly afterResume: boolean }> = []
      let resumed = false
      let watches = 0
      const { dataDir, server } = yield* startIn({
        watchCapacity: 8,
        // One response of 10 M characters, past the engine's default limit of a response (4 Mi).
        maxResponse: { chars: 16 * 1024 * 1024 },
        onReadFrom: (_, from) => gapReads.push({ from, afterResume: resumed }),
        onWatch: () => watches++,
        responses: [{ chunks: Array.from({ length: deltas }, () => text), delay: "1 millis" }]
      })
      const session = yield* server.client.sessions.create({ payload: {} })
      const url = `${server.url}/sessions/${session.sessionId}/live`
      const opener = joined ? stalledReader(url, server.token) : undefined
      if (opener !== undefined) {
        yield* Effect.promise(() => opener.connected)
        // Its shared watch is there: the next client joins it in Node's callback.
        while (watches === 0) yield* Effect.sleep("1 millis")
      }
      const stalled = stalledReader(url, server.token)
      yield* Effect.promise(() => stalled.connected)
      const watching = Effect.promise(() => liveUntil(url, { token: server.token }, completed))
      const [events] = yield* Effect.all([
        watching,
        server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "go" } })
      ], { concurrency: "unbounded" })
      const n = events.length
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: n }, (_, i) => i + 1))
      expect(n).toBeGreaterThan(deltas)
      // The stalled client had read a fraction while the turn ran to its end.
      const total = readFileSync(join(dataDir, "sessions", `${session.sessionId}.jsonl`), "utf8").length
      expect(stalled.bytes()).toBeLessThan(total / 2)

      resumed = true
      const raw = yield* Effect.promise(() => stalled.resume((tail) => {
        // The last frame whole, not only its id line: a chunk can end inside it.
        const last = tail.lastIndexOf(`id: ${n}\n`)
        return last >= 0 && tail.indexOf("\n\n", last) >= 0
      }))
      // Every event once, in order, its data the stored line.
      const stored = readFileSync(join(dataDir, "sessions", `${session.sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      expect(stored.length).toBe(n)
      const ids = Array.from(raw.matchAll(/^id: (\d+)$/gm), (m) => Number(m[1]))
      expect(ids).toEqual(Array.from({ length: n }, (_, i) => i + 1))
      let at = 0
      stored.forEach((line, index) => {
        const frame = `id: ${index + 1}\nevent: ${(JSON.parse(line) as AgentEvent.AgentEvent).type}\ndata: ${line}\n\n`
        const found = raw.indexOf(frame, at)
        expect(found).toBeGreaterThanOrEqual(at)
        at = found + frame.length
      })
      // What it missed while stalled came from the store, after it read again.
      expect(gapReads.some((read) => read.afterResume && read.from > 1)).toBe(true)
    })

describe("/live with a stalled client", () => {
  it.scopedLive("other clients and the turn go on; the stalled client later reads every event once, the gap from the store", () => stalledRun(false), 120_000)
  it.scopedLive("the same for a stalled client answered in Node's request callback (it joined a shared watch)", () => stalledRun(true), 120_000)
})
