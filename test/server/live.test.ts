/**
 * `/live` (SSE on the engine's watchSession) and the server's turns: the wire format, a reconnect
 * with Last-Event-ID getting exactly the missing events, 100 concurrent clients each getting 1..n
 * in order, a turn that keeps running when every client has gone, and the server's shutdown and
 * restart — running turns cancelled, a turn paused on approval left paused and resumed by an
 * approval over HTTP on the next server.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { liveUntil, readLive, start, startIn, storedEvents } from "./harness.js"

const liveUrl = (url: string, sessionId: string) => `${url}/sessions/${sessionId}/live`
const completed = (event: AgentEvent.AgentEvent) => event.type === "turn.completed"
const sequences = (events: ReadonlyArray<AgentEvent.AgentEvent>) => events.map((e) => e.sequence)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe("/live", () => {
  it.scopedLive("frames: id = sequence, event = type, data = the stored JSON; keep-alive comments while idle", () =>
    Effect.gen(function*() {
      const { dataDir, server } = yield* startIn({ keepAlive: "20 millis", responses: [{ chunks: ["a", "b"] }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "go" } })
      yield* Effect.promise(() => liveUntil(liveUrl(server.url, session.sessionId), { token: server.token }, completed))
      const stored = readFileSync(join(dataDir, "sessions", `${session.sessionId}.jsonl`), "utf8").trim().split("\n").slice(1)
      // The raw stream, read until a keep-alive comment follows the last event.
      const raw = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(liveUrl(server.url, session.sessionId), {
          headers: { authorization: `Bearer ${server.token}` },
          signal: controller.signal
        })
        expect(response.headers.get("content-type")).toContain("text/event-stream")
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
        let text = ""
        while (!text.includes(`id: ${stored.length}\n`) || !text.slice(text.indexOf(`id: ${stored.length}\n`)).includes(": keep-alive")) {
          const next = await reader.read()
          if (next.done) break
          text += next.value
        }
        controller.abort()
        return text
      })
      stored.forEach((line, index) => {
        const event = JSON.parse(line) as AgentEvent.AgentEvent
        expect(raw).toContain(`id: ${index + 1}\nevent: ${event.type}\ndata: ${line}\n\n`)
      })
      expect(raw).toContain(": keep-alive\n\n")
    }))

  it.scopedLive("a reconnect with Last-Event-ID (or ?after=) gets exactly the missing events, then live ones across turns", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["one", "two", "three"] }, { chunks: ["four"] }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "first" } })
      const url = liveUrl(server.url, session.sessionId)
      const whole = yield* Effect.promise(() => liveUntil(url, { token: server.token }, completed))
      const n = whole.length
      expect(sequences(whole)).toEqual(range(1, n))
      // Dropped after event 3: the reconnect sends Last-Event-ID 3 and gets 4..n, none twice.
      const head = yield* Effect.promise(() => liveUntil(url, { token: server.token }, (e) => e.sequence === 3))
      expect(sequences(head)).toEqual([1, 2, 3])
      const resumed = yield* Effect.promise(() => liveUntil(url, { token: server.token, lastEventId: "3" }, completed))
      expect(sequences(resumed)).toEqual(range(4, n))
      expect(resumed).toEqual(whole.slice(3))
      // Last-Event-ID wins over ?after= (an EventSource keeps its URL when it reconnects).
      const both = yield* Effect.promise(() => liveUntil(url, { token: server.token, lastEventId: String(n - 1), after: 1 }, completed))
      expect(sequences(both)).toEqual([n])
      // Connected at the end of the log, a client gets the next turn's events live, from n + 1.
      const next = Effect.promise(() => liveUntil(url, { token: server.token, after: n }, completed))
      const [second] = yield* Effect.all([next, server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "second" } })], {
        concurrency: "unbounded"
      }).pipe(Effect.map(([events]) => [events] as const))
      expect(sequences(second)[0]).toBe(n + 1)
      expect(sequences(second)).toEqual(range(n + 1, n + second.length))
    }))

  it.scopedLive("100 concurrent clients on one session each receive 1..n in order", () =>
    Effect.gen(function*() {
      const chunks = Array.from({ length: 20 }, (_, i) => `c${i} `)
      const { server } = yield* startIn({ responses: [{ chunks, delay: "5 millis" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      const url = liveUrl(server.url, session.sessionId)
      // Clients connect while the turn streams: some read everything from the store, some switch to live mid-turn.
      const clients = Effect.forEach(
        range(1, 100),
        () => Effect.promise(() => liveUntil(url, { token: server.token }, completed)),
        { concurrency: "unbounded" }
      )
      const [received] = yield* Effect.all([
        clients,
        server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "stream" } })
      ], { concurrency: "unbounded" })
      const stored = yield* storedEvents(server, session.sessionId)
      expect(received).toHaveLength(100)
      for (const events of received) expect(events).toEqual(stored)
      expect(sequences(stored)).toEqual(range(1, stored.length))
    }))

  it.scopedLive("a batch of a thousand events committed at once reaches every client whole, in order, once each", () =>
    Effect.gen(function*() {
      // `/live` encodes a big batch a piece at a time (Live.eventsPerStep), yielding between pieces.
      const chunks = Array.from({ length: 1_000 }, (_, i) => `b${i} `)
      const { server } = yield* startIn({ responses: [{ chunks: ["warm"] }, { chunks }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "first" } })
      const url = liveUrl(server.url, session.sessionId)
      // Each client has read the first turn (so the second reaches it live, as the engine commits it) before the second starts.
      const caughtUp: Array<Promise<void>> = []
      const clients = Array.from({ length: 3 }, () => {
        let signal!: () => void
        caughtUp.push(new Promise<void>((resolve) => (signal = resolve)))
        let turns = 0
        return liveUntil(url, { token: server.token }, (event) => {
          if (!completed(event)) return false
          if (++turns === 1) signal()
          return turns === 2
        })
      })
      yield* Effect.promise(() => Promise.all(caughtUp))
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "second" } })
      const received = yield* Effect.promise(() => Promise.all(clients))
      const stored = yield* storedEvents(server, session.sessionId)
      expect(stored.filter((e) => e.type === "model.delta").length).toBeGreaterThan(1_000)
      for (const events of received) expect(events).toEqual(stored)
    }), 120_000) // A thousand events to three clients: 30 s was not enough twice in 12 runs at load 19.

  it.scopedLive("a turn keeps running when every client has disconnected", () =>
    Effect.gen(function*() {
      const chunks = Array.from({ length: 10 }, (_, i) => `w${i} `)
      const { server } = yield* startIn({ responses: [{ chunks, delay: "20 millis" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      const url = liveUrl(server.url, session.sessionId)
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "long" } })
      // Two clients, both gone after the first delta: the request that started the turn is long over too.
      yield* Effect.forEach([1, 2], () => Effect.promise(() => liveUntil(url, { token: server.token }, (e) => e.type === "model.delta")), {
        concurrency: "unbounded"
      })
      const later = yield* Effect.promise(() => liveUntil(url, { token: server.token }, completed))
      expect(later.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(later.filter((e) => e.type === "model.delta").map((e) => (e.payload as { text: string }).text)).toEqual(chunks)
    }))
})

describe("shutdown and restart", () => {
  it.scopedLive("shutting down cancels a running turn; the log is closed", () =>
    Effect.gen(function*() {
      const { cwd, dataDir, server } = yield* startIn({ responses: [{ chunks: ["a", "b", "c"], delay: "10 seconds" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "slow" } })
      // A client is watching: its open stream must not hold the shutdown up.
      const watching = Effect.runPromise(Effect.promise(() =>
        readLive(liveUrl(server.url, session.sessionId), { token: server.token }, () => false).catch(() => undefined)
      ))
      yield* server.stop
      yield* Effect.promise(() => watching)
      const again = yield* start({ cwd, dataDir })
      const events = yield* storedEvents(again, session.sessionId)
      expectWellFormedLog(events)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    }))

  it.scopedLive("a turn paused on approval stays paused across a restart; approving it over HTTP runs the tool once and completes the turn", () =>
    Effect.gen(function*() {
      const { cwd, dataDir, server: first } = yield* startIn({ responses: [{ chunks: ["I will write."], toolCalls: [{ tool: "write_file", args: { path: "out.txt", content: "written once" } }] }]
      })
      const session = yield* first.client.sessions.create({ payload: {} })
      yield* first.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "write out.txt" } })
      const asked = yield* Effect.promise(() =>
        liveUntil(liveUrl(first.url, session.sessionId), { token: first.token }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask")
      )
      const toolCallId = (asked.at(-1)!.payload as { toolCallId: string }).toolCallId
      yield* first.stop

      // The same data dir, a new server (and model script): the turn is still open, waiting.
      const second = yield* start({ cwd, dataDir, responses: [{ chunks: ["Done."] }] })
      const before = yield* storedEvents(second, session.sessionId)
      expect(before).toEqual(asked)
      const state = yield* second.client.sessions.get({ path: { id: session.sessionId } })
      expect(state).toMatchObject({ phase: "paused", pendingApprovals: [{ toolCallId, tool: "write_file" }] })
      expect(existsSync(join(cwd, "out.txt"))).toBe(false)

      yield* second.client.sessions.approve({ path: { id: session.sessionId, toolCallId }, payload: { decision: "allow" } })
      const rest = yield* Effect.promise(() =>
        liveUntil(liveUrl(second.url, session.sessionId), { token: second.token, after: asked.length }, completed)
      )
      expect(rest.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      const log = yield* storedEvents(second, session.sessionId)
      expectWellFormedLog(log)
      expect(log.filter((e) => e.type === "tool.started")).toHaveLength(1)
      expect(log.filter((e) => e.type === "tool.completed")).toHaveLength(1)
      expect(readFileSync(join(cwd, "out.txt"), "utf8")).toBe("written once")
      // A second answer to the same call is refused: nothing runs twice.
      const again = yield* second.client.sessions.approve({ path: { id: session.sessionId, toolCallId }, payload: { decision: "allow" } }).pipe(Effect.flip)
      expect(again).toMatchObject({ error: "ApprovalNotPending" })
    }))
})
