/**
 * `/live` over real HTTP, many clients of a session that commits a delta at a time (a paced model):
 * the clients that have the session's events share one watch of the engine — not a watch, and a
 * fiber's run, each per commit — and each event is encoded once; every client reads every event
 * once, in order, each frame the stored line.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { liveReader as reader, startIn } from "./harness.js"

describe("/live with many clients of a paced turn", () => {
  it.scopedLive("the clients share one watch of the session and one encoding of each event; each reads every event once", () =>
    Effect.gen(function*() {
      const clients = 20
      const watches: Array<number> = []
      const { dataDir, server } = yield* startIn({
        responses: [{ chunks: Array.from({ length: 40 }, (_, i) => `d${i} `), delay: "1 millis" }],
        onWatch: (_, from) => watches.push(from)
      })
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      // From the session's end (its `session.created`), as a reconnecting client asks.
      const url = `${server.url}/sessions/${sessionId}/live?after=1`
      const readers = Array.from({ length: clients }, () => reader(url, server.token))
      yield* Effect.promise(() => Promise.all(readers.map((r) => r.connected)))
      const encodedBefore = Live.encoded()
      yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "go" } })
      const texts = yield* Effect.promise(() => Promise.all(readers.map((r) => r.done)))
      const stored = readFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      const expected = ": connected\n\n" + stored.slice(1).map((line, i) =>
        `id: ${i + 2}\nevent: ${(JSON.parse(line) as AgentEvent.AgentEvent).type}\ndata: ${line}\n\n`).join("")
      for (const text of texts) expect(text).toBe(expected)
      // One watch of the engine for the twenty, and each live event encoded once.
      expect(watches).toEqual([2])
      expect(Live.encoded() - encodedBefore).toBe(stored.length - 1)
    }), 60_000)

  // perf61serve: a client resuming past the session's end started the shared watch there, and the
  // clients that had the session's events each read through a watch of their own meanwhile.
  it.scopedLive("a client resuming past the session's end leaves the others one shared watch", () =>
    Effect.gen(function*() {
      const watches: Array<number> = []
      const { server } = yield* startIn({
        responses: [{ chunks: Array.from({ length: 20 }, (_, i) => `d${i} `), delay: "1 millis" }],
        onWatch: (_, from) => watches.push(from)
      })
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      const live = `${server.url}/sessions/${sessionId}/live`
      const far = reader(`${live}?after=1000`, server.token)
      yield* Effect.promise(() => far.connected)
      // Its watch asked for (no wall time assumed: looked at until it is).
      while (watches.length === 0) yield* Effect.sleep("1 millis")
      const readers = Array.from({ length: 10 }, () => reader(`${live}?after=1`, server.token))
      yield* Effect.promise(() => Promise.all(readers.map((r) => r.connected)))
      yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "go" } })
      yield* Effect.promise(() => Promise.all(readers.map((r) => r.done)))
      // One watch of the engine for the eleven, from the session's end.
      expect(watches).toEqual([2])
    }), 60_000)
})
