/**
 * How the JSONL store appends (issue 10): one write per batch, no `stat` while this process holds
 * the session's writer lock (and a fresh look at the log when it takes the lock again), group
 * commit behind an `fsync` under way, and what a failed flush leaves. The file operations are
 * counted through the store's `AppendIo` seam.
 */
import { appendFileSync, copyFileSync, readFileSync, renameSync, truncateSync, writeFileSync } from "node:fs"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, tempDir } from "../helpers.js"

const created = (sessionId: string): AgentEvent.AgentEvent => ({
  id: "evt_1",
  sessionId,
  sequence: 1,
  timestamp: "2026-01-01T00:00:00.000Z",
  type: "session.created",
  payload: { cwd: "/work", client: "test" }
})

const delta = (sessionId: string, sequence: number): AgentEvent.AgentEvent => ({
  id: `evt_${sequence}`,
  sessionId,
  turnId: "turn_1",
  sequence,
  timestamp: "2026-01-01T00:00:00.000Z",
  type: "model.delta",
  payload: { text: `text ${sequence}` }
})

const events = (sessionId: string, n: number) => [created(sessionId), ...Array.from({ length: n - 1 }, (_, i) => delta(sessionId, i + 2))]

/** The real file system, counting writes, flushes and stats; flushes wait while `gate.closed`. */
const counting = () => {
  const count = { writes: 0, syncs: 0, stats: 0, opens: 0, closes: 0, identities: 0 }
  const gate = { closed: false, held: [] as Array<() => void>, failNext: false }
  const io: AppendIo.Io = {
    ...AppendIo.node,
    open: (path) => {
      const fd = AppendIo.node.open(path)
      count.opens++
      return fd
    },
    close: (fd) => {
      count.closes++
      AppendIo.node.close(fd)
    },
    write: (fd, data) => {
      count.writes++
      return AppendIo.node.write(fd, data)
    },
    sync: (fd, done) => {
      count.syncs++
      const run = () => {
        if (gate.failNext) {
          gate.failNext = false
          return done(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }))
        }
        AppendIo.node.sync(fd, done)
      }
      if (gate.closed) gate.held.push(run)
      else run()
    },
    size: (path) => {
      count.stats++
      return AppendIo.node.size(path)
    },
    identity: (fd, path, ino, dev) => {
      count.identities++
      return AppendIo.node.identity(fd, path, ino, dev)
    }
  }
  const open = () => {
    gate.closed = false
    gate.held.splice(0).forEach((run) => run())
  }
  return { count, gate, io, open }
}

const setup = (options: Partial<JsonlEventStore.Options> = {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir
    const disk = counting()
    const store = yield* JsonlEventStore.make({ dataDir, ...options }).pipe(Effect.provideService(AppendIo.AppendIo, disk.io))
    const file = (sessionId: string) => `${dataDir}/sessions/${sessionId}.jsonl`
    return { store, disk, file }
  })

const sequences = (list: ReadonlyArray<AgentEvent.AgentEvent>) => list.map((e) => e.sequence)
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

describe("JSONL appends", () => {
  it.scoped("appendAll writes a batch in one write, after the header; a batch not starting at last + 1 is refused whole", () =>
    Effect.gen(function*() {
      const { store, disk, file } = yield* setup()
      yield* store.appendAll(events("s", 100))
      expect(disk.count.writes).toBe(1)
      expect(readFileSync(file("s"), "utf8").split("\n")).toHaveLength(102)
      const refused = yield* Effect.either(store.appendAll([delta("s", 102), delta("s", 103)]))
      expect(Either.isLeft(refused) && refused.left.reason).toBe("sequence_conflict")
      expect(disk.count.writes).toBe(1)
      expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(100))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("while this process holds the writer lock, appends never read the log's size by name (one identity check of the open file per batch); without it, each one does", () =>
    Effect.gen(function*() {
      const { store, disk } = yield* setup()
      const scope = yield* Scope.make()
      yield* Scope.extend(store.acquireWriter("held"), scope)
      for (const event of events("held", 50)) yield* store.append(event)
      expect(disk.count.stats).toBe(0)
      expect(disk.count.writes).toBe(50)
      expect(disk.count.identities).toBe(50)
      yield* Scope.close(scope, Exit.void)
      for (const event of events("loose", 10)) yield* store.append(event)
      // The first append of a session reads the log's end instead; each later one checks its size.
      expect(disk.count.stats).toBe(9)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the logs of sessions this process holds stay open up to a bound: the least recently appended to is closed, and its next append goes on from its end", () =>
    Effect.gen(function*() {
      const { store, disk } = yield* setup()
      const ids = Array.from({ length: 300 }, (_, i) => `s${i}`)
      for (const id of ids) {
        yield* store.acquireWriter(id)
        yield* store.appendAll(events(id, 2))
      }
      // One open handle per held session without the bound: 300, where a process's limit may be 1,024 for everything.
      expect(disk.count.opens - disk.count.closes).toBe(256)
      // The first sessions' logs were closed: appending again reads each log's end (no `stat`: the lock is held).
      for (const id of ids.slice(0, 10)) yield* store.appendAll([delta(id, 3), delta(id, 4)])
      expect(disk.count.opens - disk.count.closes).toBe(256)
      expect(disk.count.stats).toBe(0)
      for (const id of [ids[0]!, ids[9]!, ids[299]!]) {
        expect(sequences(yield* collect(store.read(id)))).toEqual(upTo(id === ids[299] ? 2 : 4))
      }
      const stale = yield* Effect.either(store.append(delta(ids[0]!, 4)))
      expect(Either.isLeft(stale) && stale.left.reason).toBe("sequence_conflict")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("taking the lock again looks at the log afresh: a line another process added meanwhile is seen", () =>
    Effect.gen(function*() {
      const { store, file } = yield* setup()
      const first = yield* Scope.make()
      yield* Scope.extend(store.acquireWriter("s"), first)
      yield* store.appendAll(events("s", 2))
      yield* Scope.close(first, Exit.void)
      // Another process takes the lock and appends sequence 3.
      appendFileSync(file("s"), JSON.stringify(delta("s", 3)) + "\n")
      yield* store.acquireWriter("s")
      const stale = yield* Effect.either(store.append(delta("s", 3)))
      expect(Either.isLeft(stale) && stale.left).toMatchObject({ reason: "sequence_conflict", detail: "expected sequence 4, got 3" })
      yield* store.append(delta("s", 4))
      expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(4))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("many fibers appending one session at once: one file, sequences 1..n in order", () =>
    Effect.gen(function*() {
      const { store } = yield* setup()
      yield* store.acquireWriter("s")
      yield* Effect.forEach(events("s", 300), (event) => store.append(event), { concurrency: "unbounded", discard: true })
      expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(300))
    }).pipe(Effect.provide(NodeContext.layer)))

  describe("with fsync", () => {
    it.scoped("appends arriving while a flush is under way go out together: one write and one fsync for all of them", () =>
      Effect.gen(function*() {
        const { store, disk, file } = yield* setup({ fsync: true })
        yield* store.acquireWriter("s")
        yield* store.append(created("s"))
        expect(disk.count).toMatchObject({ writes: 1, syncs: 1 })
        disk.gate.closed = true
        // Each append starts at once (immediate): the first writes and waits for its flush, the others queue behind it.
        const fibers = events("s", 50).slice(1).map((event) => Effect.runFork(store.append(event), { immediate: true }))
        expect(disk.count).toMatchObject({ writes: 2, syncs: 2 })
        // Nothing queued is in the file before its turn: only sequence 2 was written.
        expect(readFileSync(file("s"), "utf8").trim().split("\n")).toHaveLength(3)
        disk.open()
        yield* Fiber.joinAll(fibers)
        expect(disk.count).toMatchObject({ writes: 3, syncs: 3 })
        expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(50))
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("a flush that fails refuses its batch and the appends queued behind it, cuts the lines off, and the log goes on", () =>
      Effect.gen(function*() {
        const { store, disk, file } = yield* setup({ fsync: true })
        yield* store.acquireWriter("s")
        yield* store.append(created("s"))
        const before = readFileSync(file("s"), "utf8")
        disk.gate.closed = true
        disk.gate.failNext = true
        const fibers = [2, 3, 4].map((sequence) => Effect.runFork(Effect.either(store.append(delta("s", sequence))), { immediate: true }))
        disk.open()
        const results = yield* Fiber.joinAll(fibers)
        expect(results.map((r) => Either.isLeft(r) && r.left.operation)).toEqual(["append", "append", "append"])
        expect(readFileSync(file("s"), "utf8")).toBe(before)
        yield* store.appendAll([delta("s", 2), delta("s", 3)])
        expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(3))
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("a log changed under a writer holding its lock (review65b)", () => {
    const lines = (path: string) => readFileSync(path, "utf8")
    /** Every line whole: the text ends in a newline and each line parses. */
    const wholeLines = (text: string) => {
      expect(text.endsWith("\n")).toBe(true)
      for (const line of text.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow()
    }

    it.scoped("replaced by a rename (even a byte-identical copy): the append fails log_replaced, writes nothing to the old file, and the next goes to the new one", () =>
      Effect.gen(function*() {
        const { store, file } = yield* setup()
        yield* store.acquireWriter("s")
        yield* store.appendAll(events("s", 3))
        copyFileSync(file("s"), `${file("s")}.tmp`)
        renameSync(`${file("s")}.tmp`, file("s"))
        const refused = yield* Effect.either(store.appendAll([delta("s", 4), delta("s", 5)]))
        expect(Either.isLeft(refused) && refused.left).toMatchObject({ reason: "log_replaced", operation: "append" })
        expect(Either.isLeft(refused) && refused.left.path).toBeUndefined()
        // What the caller is told failed is not stored anywhere; what it goes on with is.
        yield* store.appendAll([delta("s", 4), delta("s", 5)])
        wholeLines(lines(file("s")))
        expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(5))
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("replaced by an older copy: the append fails log_replaced, and the next is checked against the new file's end", () =>
      Effect.gen(function*() {
        const { store, file } = yield* setup()
        yield* store.acquireWriter("s")
        yield* store.appendAll(events("s", 2))
        const older = lines(file("s"))
        yield* store.appendAll([delta("s", 3)])
        writeFileSync(`${file("s")}.tmp`, older)
        renameSync(`${file("s")}.tmp`, file("s"))
        const refused = yield* Effect.either(store.append(delta("s", 4)))
        expect(Either.isLeft(refused) && refused.left.reason).toBe("log_replaced")
        const stale = yield* Effect.either(store.append(delta("s", 4)))
        expect(Either.isLeft(stale) && stale.left.reason).toBe("sequence_conflict")
        expect(lines(file("s"))).toBe(older)
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("cut short in place mid-line: the append fails log_truncated, never glued onto the fragment; the torn tail is cut off", () =>
      Effect.gen(function*() {
        const { store, file } = yield* setup()
        yield* store.acquireWriter("s")
        yield* store.appendAll(events("s", 3))
        const text = lines(file("s"))
        const lastLine = text.lastIndexOf("\n", text.length - 2) + 1
        truncateSync(file("s"), lastLine + 10)
        const refused = yield* Effect.either(store.append(delta("s", 4)))
        expect(Either.isLeft(refused) && refused.left.reason).toBe("log_truncated")
        expect(lines(file("s"))).toBe(text.slice(0, lastLine))
        wholeLines(lines(file("s")))
        yield* store.append(delta("s", 3))
        expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(3))
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("with fsync too: a replaced log's batch is refused, not flushed to the old file", () =>
      Effect.gen(function*() {
        const { store, file } = yield* setup({ fsync: true })
        yield* store.acquireWriter("s")
        yield* store.appendAll(events("s", 2))
        copyFileSync(file("s"), `${file("s")}.tmp`)
        renameSync(`${file("s")}.tmp`, file("s"))
        const refused = yield* Effect.either(store.append(delta("s", 3)))
        expect(Either.isLeft(refused) && refused.left.reason).toBe("log_replaced")
        yield* store.append(delta("s", 3))
        expect(sequences(yield* collect(store.read("s")))).toEqual(upTo(3))
      }).pipe(Effect.provide(NodeContext.layer)))
  })
})
