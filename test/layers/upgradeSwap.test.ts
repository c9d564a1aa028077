/**
 * The upgrade of an older log and the open of a log for appending work through the descriptor they
 * wrote or checked (stores44). The upgrade wrote `<file>.upgrade`, closed it, renamed it over the log
 * by name and read the log's end again by name: a file swapped in between (another upgrader's
 * `.upgrade`, removed and made again under the same name; anything put there) became the log and
 * its end was trusted, the append written after it. And every open read the log's end, closed it,
 * then opened the log again by name to append: a log replaced between the two (a repair's rename)
 * got an event whose sequence followed the old log's end, not its own. Swaps made through the
 * store's `FileSystem` and `AppendIo`: no sleeps.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, tempDir } from "../helpers.js"

const fixture = new URL("../../fixtures/logs/v0/sess_prototype.jsonl", import.meta.url).pathname
const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const started = (sessionId: string, sequence: number, id: string): AgentEvent.AgentEvent =>
  ({ id, sessionId, turnId: `turn_${id}`, sequence, timestamp: at(sequence), type: "turn.started", payload: { promptPreview: "p" } }) as AgentEvent.AgentEvent
const created = (sessionId: string): AgentEvent.AgentEvent =>
  ({ id: "e1", sessionId, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }) as AgentEvent.AgentEvent
const line = (event: AgentEvent.AgentEvent) => JSON.stringify(event) + "\n"

const sessionsOf = (dataDir: string) => {
  const sessionsDir = join(dataDir, "sessions")
  return { sessionsDir, file: join(sessionsDir, "sess_prototype.jsonl") }
}

describe("an upgrade and an open work through their descriptor", () => {
  it.scoped("a file swapped in for the upgraded log before its rename is not read back as the log", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const { file, sessionsDir } = sessionsOf(dataDir)
      const original = readFileSync(fixture, "utf8")
      mkdirSync(sessionsDir, { recursive: true })
      writeFileSync(file, original)
      // Someone else's file under the upgrade's name: a log of 14 events none of which this store wrote.
      const foreign = LogLines.header + "\n" + line(created("sess_prototype")) +
        Array.from({ length: 13 }, (_, i) => line(started("sess_prototype", i + 2, `forged${i + 2}`))).join("")
      const fs = yield* FileSystem.FileSystem
      let swapped = false
      const seam = FileSystem.FileSystem.of({
        ...fs,
        rename: (from, to) =>
          Effect.suspend(() => {
            if (!swapped && to === file) {
              swapped = true
              writeFileSync(`${from}.other`, foreign)
              renameSync(`${from}.other`, from)
            }
            return fs.rename(from, to)
          })
      })
      const store = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(FileSystem.FileSystem, seam))
      const appended = yield* Effect.either(store.append(started("sess_prototype", 15, "mine")))
      expect(swapped).toBe(true)
      // Before: the append was stored after the forged events, read back as what the upgrade wrote.
      expect(Either.isLeft(appended) && appended.left).toMatchObject({ _tag: "EventStoreFailure", operation: "append", reason: "unavailable" })
      // Nothing changed: the original is the log again; an append made again upgrades it and follows its events.
      expect(readFileSync(file, "utf8")).toBe(original)
      const again = yield* Effect.either(store.append(started("sess_prototype", 15, "mine")))
      expect(Either.isRight(again)).toBe(true)
      const events = yield* collect(store.read("sess_prototype"))
      expect(events.map((event) => event.id).filter((id) => id.startsWith("forged"))).toEqual([])
      expect(events.map((event) => event.sequence)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a log replaced between the read of its end and the open for appending gets no event numbered for the old one", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writer = yield* JsonlEventStore.make({ dataDir })
      yield* writer.appendAll([created("s"), started("s", 2, "e2"), started("s", 3, "e3")].map((e) => ({ ...e, sessionId: "s" })))
      const file = join(dataDir, "sessions", "s.jsonl")
      // A repair's swap: a shorter log renamed over the old one.
      const replacement = LogLines.header + "\n" + line(created("s"))
      let swapped = false
      const io: AppendIo.Io = {
        ...AppendIo.node,
        open: (path) => {
          if (!swapped) {
            swapped = true
            writeFileSync(`${file}.new`, replacement)
            renameSync(`${file}.new`, file)
          }
          return AppendIo.node.open(path)
        }
      }
      const other = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io))
      const appended = yield* Effect.either(other.append(started("s", 4, "late")))
      expect(swapped).toBe(true)
      // Before: stored as sequence 4 right after sequence 1, a log no reader accepts.
      expect(Either.isLeft(appended) && appended.left).toMatchObject({ _tag: "EventStoreFailure", operation: "append" })
      expect(readFileSync(file, "utf8")).toBe(replacement)
      const again = yield* Effect.either(other.append(started("s", 2, "next")))
      expect(Either.isRight(again)).toBe(true)
      expect((yield* collect(other.read("s"))).map((event) => event.id)).toEqual(["e1", "next"])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("of two appenders without the lock upgrading one log, the later rename does not drop what the first appended", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const { file, sessionsDir } = sessionsOf(dataDir)
      mkdirSync(sessionsDir, { recursive: true })
      writeFileSync(file, readFileSync(fixture, "utf8"))
      const fs = yield* FileSystem.FileSystem
      // a: another process; its rename synchronous so that it can run whole inside b's steps.
      const syncRename = FileSystem.FileSystem.of({ ...fs, rename: (from, to) => Effect.sync(() => renameSync(from, to)) })
      const a = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(FileSystem.FileSystem, syncRename))
      const outcomes: Record<string, boolean> = {}
      const appendA = (sequence: number) => {
        outcomes[`a${sequence}`] = Either.isRight(Effect.runSync(Effect.either(a.append(started("sess_prototype", sequence, `a${sequence}`)))))
      }
      let reads = 0
      // b reads the version-0 log's end (a upgrades it and appends 15 meanwhile), then upgrades what
      // it then finds; just before b's rename, a appends 16.
      const io: AppendIo.Io = {
        ...AppendIo.node,
        readAt: (fd, offset, length) => {
          if (reads++ === 0) appendA(15)
          return AppendIo.node.readAt(fd, offset, length)
        }
      }
      const renames = FileSystem.FileSystem.of({
        ...fs,
        rename: (from, to) => Effect.suspend(() => (to === file && outcomes["a16"] === undefined ? Effect.sync(() => appendA(16)) : Effect.void)).pipe(Effect.zipRight(fs.rename(from, to)))
      })
      const b = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io), Effect.provideService(FileSystem.FileSystem, renames))
      const appended = yield* Effect.either(b.append(started("sess_prototype", 17, "b17")))
      outcomes["b17"] = Either.isRight(appended)
      expect(outcomes["a15"]).toBe(true)
      // Every append told it was stored is in the log. (Before: a16 dropped by b's rename of its copy over a's log.)
      const ids = (yield* collect(a.read("sess_prototype"))).map((event) => event.id)
      for (const [id, stored] of Object.entries(outcomes)) if (stored) expect(ids).toContain(id)
    }).pipe(Effect.provide(NodeContext.layer)))
})
