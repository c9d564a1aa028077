/**
 * What the JSONL store reads of a log when it takes the session's writer lock and appends (storage3):
 * its end is found again then (another process may have written meanwhile), and that took a 64 KiB
 * read of its head (for the header line, ~45 bytes) and a 64 KiB read of its end (for the last line,
 * mostly under 4 KiB) — 128 KiB per lock for an append of a few hundred bytes. Counted through the
 * store's `AppendIo` seam; the lines read are checked as before (a long last line, a torn one).
 */
import { appendFileSync, readFileSync } from "node:fs"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, tempDir } from "../helpers.js"

const sessionId = "ses_lockreads"
const at = "2026-01-01T00:00:00.000Z"
const event = (sequence: number, text = `text ${sequence} ${"y".repeat(200)}`): AgentEvent.AgentEvent =>
  sequence === 1
    ? { id: "evt_1", sessionId, sequence, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }
    : { id: `evt_${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at, type: "model.delta", payload: { text } }

/** A store whose reads of a log's end are counted, over a log of `n` events (the last `lastText` long when given). */
const setup = (n: number, lastText?: string) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir
    const writer = yield* JsonlEventStore.make({ dataDir })
    yield* writer.appendAll(Array.from({ length: n }, (_, i) => event(i + 1, i + 1 === n && lastText !== undefined ? lastText : undefined)))
    const read = { calls: 0, bytes: 0 }
    const io: AppendIo.Io = {
      ...AppendIo.node,
      readAt: (fd, offset, length) => {
        const buffer = AppendIo.node.readAt(fd, offset, length)
        read.calls++
        read.bytes += buffer.byteLength
        return buffer
      }
    }
    const store = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io))
    return { dataDir, store, read }
  })

const lockAndAppend = (store: Effect.Effect.Success<ReturnType<typeof JsonlEventStore.make>>, sequence: number) =>
  Effect.scoped(Effect.zipRight(store.acquireWriter(sessionId), store.append(event(sequence, "after the lock"))))

describe("JSONL: taking the writer lock and appending", () => {
  it.scoped("reads a few KiB of a long log, not 64 KiB of its head and 64 KiB of its end", () =>
    Effect.gen(function*() {
      const { read, store } = yield* setup(2000)
      yield* lockAndAppend(store, 2001)
      // Before: 2 reads, 131,072 bytes.
      expect(read.bytes).toBeLessThanOrEqual(8 * 1024)
      const events = yield* collect(store.read(sessionId))
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 2001 }, (_, i) => i + 1))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a last line longer than the first read is still found whole", () =>
    Effect.gen(function*() {
      const { read, store } = yield* setup(300, "z".repeat(100 * 1024))
      yield* lockAndAppend(store, 301)
      expect(read.calls).toBeGreaterThan(2)
      const events = yield* collect(store.read(sessionId))
      expect(events.at(-2)?.payload).toEqual({ text: "z".repeat(100 * 1024) })
      expect(events.at(-1)?.sequence).toBe(301)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a torn last line longer than the first read is cut off before the append", () =>
    Effect.gen(function*() {
      const { dataDir, store } = yield* setup(300)
      const file = `${dataDir}/sessions/${sessionId}.jsonl`
      appendFileSync(file, `{"torn":"${"t".repeat(20 * 1024)}`)
      yield* lockAndAppend(store, 301)
      expect(readFileSync(file, "utf8")).not.toContain("torn")
      const events = yield* collect(store.read(sessionId))
      expect(events.at(-1)?.sequence).toBe(301)
    }).pipe(Effect.provide(NodeContext.layer)))
})
