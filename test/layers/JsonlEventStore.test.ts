import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as LogReader from "../../src/layers/jsonl/LogReader.js"
import * as Stream from "effect/Stream"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, tempDir } from "../helpers.js"

const created = (sessionId: string): AgentEvent.AgentEvent => ({
  id: "evt_1",
  sessionId,
  sequence: 1,
  timestamp: "2026-01-01T00:00:00.000Z",
  type: "session.created",
  payload: { cwd: "/work", client: "test" }
})

const delta = (sessionId: string, sequence: number, text = `text ${sequence}`): AgentEvent.AgentEvent => ({
  id: `evt_${sequence}`,
  sessionId,
  turnId: "turn_1",
  sequence,
  timestamp: "2026-01-01T00:00:00.000Z",
  type: "model.delta",
  payload: { text }
})

const header = `{"format":"effect-agent/events","version":1}`
const line = (event: AgentEvent.AgentEvent) => AgentEvent.encodeJson(event) + "\n"

/** A store in a fresh data dir, with helpers to write its files by hand. */
const setup = (recovery: JsonlEventStore.Recovery = "skip-trailing-partial") =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dataDir = yield* tempDir
    const store = yield* JsonlEventStore.make({ dataDir, recovery })
    const file = (sessionId: string) => `${dataDir}/sessions/${sessionId}.jsonl`
    const writeRaw = (sessionId: string, text: string) =>
      fs.makeDirectory(`${dataDir}/sessions`, { recursive: true }).pipe(Effect.zipRight(fs.writeFileString(file(sessionId), text)))
    const readRaw = (sessionId: string) => fs.readFileString(file(sessionId))
    return { store, dataDir, file, writeRaw, readRaw, fs }
  })

const readAll = (store: EventStore.Service, sessionId: string) => Effect.either(collect(store.read(sessionId)))

describe("JsonlEventStore", () => {
  it.scoped("appends one line per event after a format header and reads them back", () =>
    Effect.gen(function*() {
      const { store, readRaw } = yield* setup()
      yield* store.append(created("s1"))
      yield* store.append(delta("s1", 2, "multi\nline \u2028 \"quoted\" 🌍 漢字"))
      expect(yield* readRaw("s1")).toBe(header + "\n" + line(created("s1")) + line(delta("s1", 2, "multi\nline \u2028 \"quoted\" 🌍 漢字")))
      expect(yield* collect(store.read("s1"))).toEqual([created("s1"), delta("s1", 2, "multi\nline \u2028 \"quoted\" 🌍 漢字")])
      expect(yield* collect(store.read("s1", { fromSequence: 2 }))).toEqual([delta("s1", 2, "multi\nline \u2028 \"quoted\" 🌍 漢字")])
      expect(yield* collect(store.read("unknown"))).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a log smaller than a chunk, read whole, gives what a read a chunk at a time gives: the events, then the failure after them", () =>
    Effect.gen(function*() {
      const { writeRaw, file } = yield* setup()
      const logs: ReadonlyArray<readonly [string, string]> = [
        ["valid", header + "\n" + line(created("s1")) + line(delta("s1", 2)) + line(delta("s1", 3))],
        ["corrupt third event", header + "\n" + line(created("s1")) + line(delta("s1", 2)) + "{nope\n" + line(delta("s1", 4))],
        ["gap", header + "\n" + line(created("s1")) + line(delta("s1", 3))],
        ["torn last line", header + "\n" + line(created("s1")) + line(delta("s1", 2)).slice(0, -1)]
      ]
      for (const [name, text] of logs) {
        yield* writeRaw("s1", text)
        for (const recovery of ["skip-trailing-partial", "strict"] as const) {
          for (const fromSequence of [1, 2]) {
            const read = (chunkBytes?: number) =>
              LogReader.events({ sessionId: "s1", file: file("s1"), recovery, maxLineBytes: 1 << 20, fromSequence, ...(chunkBytes === undefined ? {} : { chunkBytes }) }).pipe(
                Stream.either,
                Stream.runCollect,
                Effect.map((chunk) => Array.from(chunk))
              )
            // The default chunk holds the whole log; 16 bytes read it a piece at a time.
            const whole = yield* read()
            expect([name, recovery, fromSequence, whole]).toEqual([name, recovery, fromSequence, yield* read(16)])
            if (fromSequence === 1) expect(whole.length).toBeGreaterThan(0)
          }
        }
      }
      const missing = LogReader.events({ sessionId: "s2", file: file("s2"), recovery: "strict", maxLineBytes: 1 << 20 })
      expect(yield* collect(missing)).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("refuses a sequence that is not last + 1", () =>
    Effect.gen(function*() {
      const { store } = yield* setup()
      const first = yield* Effect.either(store.append(delta("s1", 2)))
      expect(Either.isLeft(first) && first.left).toMatchObject({ reason: "sequence_conflict", sequence: 2 })
      yield* store.append(created("s1"))
      for (const sequence of [1, 3]) {
        const result = yield* Effect.either(store.append(delta("s1", sequence)))
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "EventStoreFailure", reason: "sequence_conflict" })
      }
      expect(yield* collect(store.read("s1"))).toHaveLength(1)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("notices events appended by someone else since its last append", () =>
    Effect.gen(function*() {
      const { store, fs, file } = yield* setup()
      yield* store.append(created("s1"))
      yield* store.append(delta("s1", 2))
      // Another writer appends sequence 3 behind this store's back.
      yield* fs.writeFileString(file("s1"), line(delta("s1", 3)), { flag: "a" })
      const stale = yield* Effect.either(store.append(delta("s1", 3)))
      expect(Either.isLeft(stale) && stale.left.reason).toBe("sequence_conflict")
      yield* store.append(delta("s1", 4))
      expect((yield* collect(store.read("s1"))).map((e) => e.sequence)).toEqual([1, 2, 3, 4])
    }).pipe(Effect.provide(NodeContext.layer)))

  describe("a torn last line", () => {
    const torn = (sessionId: string) => header + "\n" + line(created(sessionId)) + line(delta(sessionId, 2)) + `{"id":"evt_3","sessionId":"${sessionId}","tu`

    it.scoped("is skipped in skip-trailing-partial mode and cut off before the next append", () =>
      Effect.gen(function*() {
        const { store, writeRaw, readRaw } = yield* setup("skip-trailing-partial")
        yield* writeRaw("s1", torn("s1"))
        expect((yield* collect(store.read("s1"))).map((e) => e.sequence)).toEqual([1, 2])
        yield* store.append(delta("s1", 3))
        expect(yield* readRaw("s1")).toBe(header + "\n" + line(created("s1")) + line(delta("s1", 2)) + line(delta("s1", 3)))
        expect((yield* collect(store.read("s1"))).map((e) => e.sequence)).toEqual([1, 2, 3])
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("fails in strict mode, naming file and line, for reads and appends", () =>
      Effect.gen(function*() {
        const { store, writeRaw, readRaw, file } = yield* setup("strict")
        yield* writeRaw("s1", torn("s1"))
        const read = yield* readAll(store, "s1")
        expect(Either.isLeft(read) && read.left).toMatchObject({ reason: "torn_line", path: file("s1"), line: 4 })
        expect(Either.isLeft(read) && read.left.message).toContain(`${file("s1")}:4`)
        const append = yield* Effect.either(store.append(delta("s1", 3)))
        expect(Either.isLeft(append) && append.left.reason).toBe("torn_line")
        expect(yield* readRaw("s1")).toBe(torn("s1"))
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("a complete event missing only its newline is still torn: it was never acknowledged", () =>
      Effect.gen(function*() {
        const { store, writeRaw } = yield* setup()
        yield* writeRaw("s1", header + "\n" + line(created("s1")) + AgentEvent.encodeJson(delta("s1", 2)))
        expect((yield* collect(store.read("s1"))).map((e) => e.sequence)).toEqual([1])
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("a damaged log fails in both modes, naming the line, and never skips a complete line", () => {
    const cases: ReadonlyArray<[string, (s: string) => string, number, string]> = [
      ["a corrupt middle line", (s) => header + "\n" + line(created(s)) + "{not json\n" + line(delta(s, 2)), 3, "not a valid event"],
      ["a valid JSON line that is not an event", (s) => header + "\n" + line(created(s)) + `{"type":"model.delta"}\n` + line(delta(s, 2)), 3, "not a valid event"],
      ["an empty middle line", (s) => header + "\n" + line(created(s)) + "\n" + line(delta(s, 2)), 3, "not a valid event"],
      ["a sequence gap", (s) => header + "\n" + line(created(s)) + line(delta(s, 3)), 3, "gap in sequence: expected 2, found 3"],
      ["a duplicate", (s) => header + "\n" + line(created(s)) + line(delta(s, 2)) + line(delta(s, 2)), 4, "duplicate or out-of-order sequence"],
      ["another session's event", (s) => header + "\n" + line(created(s)) + line(delta("other", 2)), 3, "another session"],
      ["a first line that is neither a header nor an event", (s) => `{"hello":"world"}\n` + line(created(s)), 1, "not an effect-agent log header"],
      ["a future format version", (s) => `{"format":"effect-agent/events","version":99}\n` + line(created(s)), 1, "unsupported log format version 99"]
    ]
    for (const [name, content, lineNumber, detail] of cases) {
      for (const recovery of ["skip-trailing-partial", "strict"] as const) {
        it.scoped(`${name} (${recovery})`, () =>
          Effect.gen(function*() {
            const { store, writeRaw, file } = yield* setup(recovery)
            yield* writeRaw("s1", content("s1"))
            const result = yield* readAll(store, "s1")
            expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "EventStoreFailure", reason: "corrupt", path: file("s1"), line: lineNumber })
            expect(Either.isLeft(result) && result.left.detail).toContain(detail)
          }).pipe(Effect.provide(NodeContext.layer)))
      }
    }
  })

  it.scoped("a data dir that cannot be written is an EventStoreFailure with the path and reason", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir
      yield* fs.writeFileString(`${dir}/a-file`, "")
      const store = yield* JsonlEventStore.make({ dataDir: `${dir}/a-file/data` })
      const result = yield* Effect.either(store.append(created("s1")))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "EventStoreFailure", operation: "append", reason: "unavailable" })
      expect(Either.isLeft(result) && result.left.path).toContain(`${dir}/a-file/data`)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("lists sessions, most recently active first, with turn counts", () =>
    Effect.gen(function*() {
      const { store } = yield* setup()
      expect(yield* store.list).toEqual([])
      yield* store.append(created("a"))
      yield* store.append({ ...created("b"), timestamp: "2026-01-02T00:00:00.000Z" })
      yield* store.append({ ...delta("a", 2), type: "turn.started", turnId: "turn_1", payload: { promptPreview: "p" }, timestamp: "2026-01-03T00:00:00.000Z" })
      const listed = yield* store.list
      expect(listed.map((s) => [s.sessionId, s.turnCount, s.lastSequence])).toEqual([["a", 1, 2], ["b", 0, 1]])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("property: any sequence of appended events reads back identical", () =>
    Effect.gen(function*() {
      const { store } = yield* setup()
      const anyEvent = Arbitrary.make(AgentEvent.AgentEvent)
      let session = 0
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(anyEvent, { maxLength: 20 }), async (generated) => {
            const sessionId = `prop_${++session}`
            const events = [created(sessionId), ...generated.map((e, i) => ({ ...e, sessionId, sequence: i + 2 }) as AgentEvent.AgentEvent)]
            const readBack = await Effect.runPromise(
              Effect.forEach(events, (e) => store.append(e), { discard: true }).pipe(Effect.zipRight(collect(store.read(sessionId))))
            )
            // JSON cannot tell -0 from 0; everything else must survive unchanged.
            expect(readBack).toEqual(JSON.parse(JSON.stringify(events)))
          }),
          { numRuns: 60 }
        )
      )
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a cost JSON cannot hold (Infinity, NaN) is refused at append with a typed error; the log stays readable", () =>
    Effect.gen(function*() {
      const { store } = yield* setup()
      // JSON writes Infinity and NaN as null: stored, the line would not read back as the event it was
      // (found by the property above, seed -1468194898).
      for (const cost of [Number.POSITIVE_INFINITY, Number.NaN]) {
        const sessionId = `cost_${String(cost)}`
        yield* store.append(created(sessionId))
        const completed = { id: `${sessionId}_2`, sessionId, turnId: "turn_1", sequence: 2, timestamp: "2026-01-01T00:00:00.000Z", type: "subagent.completed", payload: { toolCallId: "t1", childSessionId: "c1", outcome: "error", steps: 0, cost } } as AgentEvent.AgentEvent
        const appended = yield* Effect.either(store.append(completed))
        expect(Either.isLeft(appended) && appended.left._tag).toBe("EventStoreFailure")
        expect((yield* collect(store.read(sessionId))).map((e) => e.type)).toEqual(["session.created"])
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  describe("older log versions", () => {
    const fixture = new URL("../../fixtures/logs/v0/sess_prototype.jsonl", import.meta.url).pathname

    it.scoped("a version-0 log (no header, turn.failed / turn.cancelled) reads migrated to the current shape", () =>
      Effect.gen(function*() {
        const { store, writeRaw, fs } = yield* setup()
        yield* writeRaw("sess_prototype", yield* fs.readFileString(fixture))
        const events = yield* collect(store.read("sess_prototype"))
        expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1))
        expect(events.filter((e) => e.type === "turn.completed").map((e) => e.payload)).toEqual([
          { stopReason: "final" },
          { stopReason: "cancelled" },
          { stopReason: "error", errorCode: "rate_limited" }
        ])
        expect(events.find((e) => e.type === "context.built")!.payload).toEqual({ tokens: { instruction: 120, transcript: 8, tools: 0, total: 128 } })
        const listed = yield* store.list
        expect(listed.map((s) => [s.sessionId, s.turnCount, s.lastSequence])).toEqual([["sess_prototype", 3, 14]])
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("the first append upgrades it atomically, keeping the original beside it", () =>
      Effect.gen(function*() {
        const { store, writeRaw, readRaw, fs, file } = yield* setup()
        const original = yield* fs.readFileString(fixture)
        yield* writeRaw("sess_prototype", original)
        const before = yield* collect(store.read("sess_prototype"))
        yield* store.append({ ...delta("sess_prototype", 15), type: "turn.started", turnId: "turn_04", payload: { promptPreview: "again" } })
        const upgraded = yield* readRaw("sess_prototype")
        expect(upgraded.split("\n")[0]).toBe(header)
        expect(yield* fs.readFileString(`${file("sess_prototype")}.v0`)).toBe(original)
        const after = yield* collect(store.read("sess_prototype"))
        expect(after.slice(0, 14)).toEqual(before)
        expect(after).toHaveLength(15)
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  describe("the session index", () => {
    it.scoped("listing keeps an index in step with appends and rebuilds it when missing or stale", () =>
      Effect.gen(function*() {
        const { store, dataDir, fs, file } = yield* setup()
        yield* store.append(created("a"))
        expect((yield* store.list).map((s) => s.lastSequence)).toEqual([1])
        const index = JSON.parse(yield* fs.readFileString(`${dataDir}/index.json`))
        expect(index).toMatchObject({ version: 5, sessions: [{ version: 1, summary: { sessionId: "a", lastSequence: 1 } }] })
        // New lines are folded in from where the index left off.
        yield* store.append({ ...delta("a", 2), type: "turn.started", turnId: "turn_1", payload: { promptPreview: "p" } })
        yield* store.append(delta("a", 3))
        expect((yield* store.list).map((s) => [s.lastSequence, s.turnCount])).toEqual([[3, 1]])
        // A stale index (its session's log replaced by a shorter one) is rebuilt for that session.
        yield* fs.writeFileString(file("a"), header + "\n" + line(created("a")))
        expect((yield* store.list).map((s) => [s.lastSequence, s.turnCount])).toEqual([[1, 0]])
        // A missing or corrupt index is rebuilt from the logs.
        yield* fs.writeFileString(`${dataDir}/index.json`, "{not json")
        expect((yield* store.list).map((s) => s.sessionId)).toEqual(["a"])
        yield* fs.remove(`${dataDir}/index.json`)
        expect((yield* store.list).map((s) => s.sessionId)).toEqual(["a"])
      }).pipe(Effect.provide(NodeContext.layer)))

    it.scoped("listing does not read logs the index already covers", () =>
      Effect.gen(function*() {
        const { store, fs, file } = yield* setup()
        yield* store.append(created("a"))
        yield* store.list
        // Corrupting the covered part goes unnoticed by listing: proof that it is not read again.
        const text = yield* fs.readFileString(file("a"))
        yield* fs.writeFileString(file("a"), text.replace("/work", "/wOrk"))
        expect((yield* store.list).map((s) => s.cwd)).toEqual(["/work"])
      }).pipe(Effect.provide(NodeContext.layer)))
  })

  it.scoped("a full disk (ENOSPC mid-write) is a disk_full failure that leaves no torn line; the next append works", () =>
    Effect.gen(function*() {
      const disk = { full: false }
      // A file system whose appends, while the disk is full, write half their bytes and then fail.
      const fullDisk: AppendIo.Io = {
        ...AppendIo.node,
        write: (fd, data) => {
          if (!disk.full) return AppendIo.node.write(fd, data)
          AppendIo.node.write(fd, typeof data === "string" ? data.slice(0, Math.floor(data.length / 2)) : data.subarray(0, Math.floor(data.length / 2)))
          throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
        }
      }
      const { store, readRaw } = yield* setup().pipe(Effect.provideService(AppendIo.AppendIo, fullDisk))
      yield* store.append(created("s1"))
      disk.full = true
      const failed = yield* Effect.either(store.append(delta("s1", 2)))
      expect(Either.isLeft(failed) && failed.left).toMatchObject({ _tag: "EventStoreFailure", reason: "disk_full", operation: "append" })
      expect(yield* readRaw("s1")).toBe(header + "\n" + line(created("s1")))
      disk.full = false
      yield* store.append(delta("s1", 2))
      expect((yield* collect(store.read("s1"))).map((e) => e.sequence)).toEqual([1, 2])
    }).pipe(Effect.provide(NodeContext.layer)))
})
