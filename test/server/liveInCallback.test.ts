/**
 * `/live` clients that join a session's shared watch are answered in Node's request callback
 * (perf65serve): no fiber of the platform's (its span, the guards, the router, the handler, the
 * body's run) and none of their own while they follow — counted with a supervisor that hears every
 * fiber the server starts. What they read is what a client answered the platform's way reads: the
 * same headers, every event once, in order (one let go: liveStalled.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Option from "effect/Option"
import * as Supervisor from "effect/Supervisor"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { liveReader, startIn } from "./harness.js"

/** Counts the fibers started under it. */
class Started extends Supervisor.AbstractSupervisor<number> {
  count = 0
  value = Effect.sync(() => this.count)
  override onStart<A, E, R>(_c: Context.Context<R>, _e: Effect.Effect<A, E, R>, _p: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>, _f: Fiber.RuntimeFiber<A, E>) {
    this.count++
  }
}

describe("/live answered in Node's request callback", () => {
  it.scopedLive("clients joining a shared watch start no fiber; each reads the same headers and every event once", () =>
    Effect.gen(function*() {
      const supervisor = new Started()
      const watches: Array<number> = []
      const { dataDir, server } = yield* Effect.supervised(
        startIn({ responses: [{ chunks: Array.from({ length: 40 }, (_, i) => `d${i} `), delay: "1 millis" }], onWatch: (_, from) => watches.push(from) }),
        supervisor
      )
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      const url = `${server.url}/sessions/${sessionId}/live?after=1`
      // The first client starts the shared watch, the platform's way.
      const first = liveReader(url, server.token)
      const firstHeaders = yield* Effect.promise(() => first.connected)
      while (watches.length === 0) yield* Effect.sleep("1 millis")
      const before = supervisor.count
      const clients = 20
      const readers = Array.from({ length: clients }, () => liveReader(url, server.token))
      const headers = yield* Effect.promise(() => Promise.all(readers.map((r) => r.connected)))
      // On main: 2 fibers a client (its request's, its body's run) — 40 here.
      expect(supervisor.count - before).toBe(0)
      for (const h of headers) expect(h).toEqual(firstHeaders)
      yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "go" } })
      const texts = yield* Effect.promise(() => Promise.all([first, ...readers].map((r) => r.done)))
      const stored = readFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      const expected = ": connected\n\n" + stored.slice(1).map((line, i) =>
        `id: ${i + 2}\nevent: ${(JSON.parse(line) as AgentEvent.AgentEvent).type}\ndata: ${line}\n\n`).join("")
      for (const text of texts) expect(text).toBe(expected)
      expect(watches).toEqual([2])
    }), 60_000)
})
