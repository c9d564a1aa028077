/**
 * `/live` clients that join a session's shared watch are answered in Node's request callback
 * (perf65serve): no fiber of the platform's (its span, the guards, the router, the handler, the
 * body's run) and none of their own while they follow — counted with a supervisor that hears every
 * fiber the server starts. What they read is what a client answered the platform's way reads: the
 * same headers, every event once, in order; one let go (a stalled socket) reads the gap from the
 * store on a fiber of its own, and follows again.
 */
import { describe, expect, it } from "@effect/vitest"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Option from "effect/Option"
import * as Supervisor from "effect/Supervisor"
import { readFileSync } from "node:fs"
import { get } from "node:http"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { liveUntil, stalledReader, startIn } from "./harness.js"

/** Counts the fibers started under it. */
class Started extends Supervisor.AbstractSupervisor<number> {
  count = 0
  value = Effect.sync(() => this.count)
  override onStart<A, E, R>(_c: Context.Context<R>, _e: Effect.Effect<A, E, R>, _p: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>, _f: Fiber.RuntimeFiber<A, E>) {
    this.count++
  }
}

/** A `/live` reader: its raw headers once connected (the first comment came); `done` with the body's text once it holds `turn.completed`'s frame. */
const reader = (url: string, token: string) => {
  let onConnected!: (headers: Array<string>) => void
  const connected = new Promise<Array<string>>((resolve) => (onConnected = resolve))
  const done = new Promise<string>((resolve, reject) => {
    let text = ""
    const request = get(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, agent: false }, (res) => {
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        if (text.startsWith(": connected\n\n")) onConnected(res.rawHeaders.filter((_, i, all) => all[i - (i % 2)] !== "Date"))
        const end = text.indexOf("event: turn.completed\n")
        if (end >= 0 && text.indexOf("\n\n", end) >= 0) {
          request.destroy()
          resolve(text)
        }
      })
    })
    request.on("error", reject)
  })
  return { connected, done }
}

const completed = (event: AgentEvent.AgentEvent) => event.type === "turn.completed"

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
      const first = reader(url, server.token)
      const firstHeaders = yield* Effect.promise(() => first.connected)
      while (watches.length === 0) yield* Effect.sleep("1 millis")
      const before = supervisor.count
      const clients = 20
      const readers = Array.from({ length: clients }, () => reader(url, server.token))
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

  it.scopedLive("a client answered there and let go reads the gap from the store, every event once, in order", () =>
    Effect.gen(function*() {
      // ~10 MB a delta at a time, past what the sockets' buffers hold (as liveStalled's).
      const deltas = 400
      const text = "x".repeat(25_000)
      const watches: Array<number> = []
      const gapReads: Array<number> = []
      const { dataDir, server } = yield* startIn({
        watchCapacity: 8,
        maxResponse: { chars: 16 * 1024 * 1024 },
        onWatch: (_, from) => watches.push(from),
        onReadFrom: (_, from) => gapReads.push(from),
        responses: [{ chunks: Array.from({ length: deltas }, () => text), delay: "1 millis" }]
      })
      const session = yield* server.client.sessions.create({ payload: {} })
      const url = `${server.url}/sessions/${session.sessionId}/live`
      const opener = stalledReader(url, server.token)
      yield* Effect.promise(() => opener.connected)
      while (watches.length === 0) yield* Effect.sleep("1 millis")
      // The shared watch is there: this one is answered in Node's callback, and stalls.
      const stalled = stalledReader(url, server.token)
      yield* Effect.promise(() => stalled.connected)
      const watching = Effect.promise(() => liveUntil(url, { token: server.token }, completed))
      const [events] = yield* Effect.all([
        watching,
        server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "go" } })
      ], { concurrency: "unbounded" })
      const n = events.length
      expect(n).toBeGreaterThan(deltas)
      const stored = readFileSync(join(dataDir, "sessions", `${session.sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      for (const client of [stalled, opener]) {
        const raw = yield* Effect.promise(() => client.resume((tail) => {
          const last = tail.lastIndexOf(`id: ${n}\n`)
          return last >= 0 && tail.indexOf("\n\n", last) >= 0
        }))
        const ids = Array.from(raw.matchAll(/^id: (\d+)$/gm), (m) => Number(m[1]))
        expect(ids).toEqual(Array.from({ length: n }, (_, i) => i + 1))
        let at = 0
        stored.forEach((line, index) => {
          const frame = `id: ${index + 1}\nevent: ${(JSON.parse(line) as AgentEvent.AgentEvent).type}\ndata: ${line}\n\n`
          const found = raw.indexOf(frame, at)
          expect(found).toBeGreaterThanOrEqual(at)
          at = found + frame.length
        })
      }
      expect(gapReads.some((from) => from > 1)).toBe(true)
    }), 120_000)
})
