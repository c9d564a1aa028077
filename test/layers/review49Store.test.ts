/**
 * Review 49's storage findings, each interleaving injected through a seam of the code (no sleeps):
 *
 * - A listing cleared a journal over `compactJournalAt` by unlinking it after reading it: a writer's
 *   `+ S` appended in between went with it. The next listing's full check showed S once, but S's
 *   appends under its lock write no `.` line: its entry stayed stale until the rotation reached it.
 * - `repair` read the log to its end in both passes: a line appended without the lock between them
 *   was written though never planned, before the closing `interrupted` events.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"
import * as SessionIndex from "../../src/layers/jsonl/SessionIndex.js"
import { IdGenerator } from "../../src/services/IdGenerator.js"
import { tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created = (sessionId: string): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-1`, sessionId, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }) as AgentEvent.AgentEvent
const message = (sessionId: string, sequence: number): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at(sequence), type: "user.message", payload: { content: "m" } }) as AgentEvent.AgentEvent
const started = (sessionId: string, sequence: number): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at(sequence), type: "turn.started", payload: { promptPreview: "p" } }) as AgentEvent.AgentEvent

describe("review 49: the journal's clear-out", () => {
  it.scoped("a writer that takes its lock while a listing clears the journal is still heard", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      // More sessions than one listing's rotation checks, so only the journal tells of `held`'s appends.
      const ids = Array.from({ length: SessionIndex.verifiedPerListing + 44 }, (_, i) => `s${String(i).padStart(3, "0")}`)
      for (const id of ids) yield* store.append(created(id))
      // Outside the window the listings' rotations check (listing 2 checks ids[0..255], listing 4 from 256 round to 211).
      const held = ids[230]!
      const scope = yield* Scope.make()
      // The seam: rebuilding the new log `trigger` runs between the listing's read of the journal and its
      // clear-out; there the writer takes `held`'s lock (announcing `+ held`).
      const index = SessionIndex.make({
        fs,
        path,
        dataDir,
        sessionsDir: join(dataDir, "sessions"),
        maxLineBytes: LogLines.defaultMaxLineBytes,
        summarizeAll: (sessionId) =>
          Effect.zipRight(
            sessionId === "trigger" ? Effect.orDie(Scope.extend(store.acquireWriter(held), scope)) : Effect.void,
            Stream.runFold(store.read(sessionId), undefined as Session.SessionSummary | undefined, Session.summarize)
          )
      })
      const lastOf = (sessionId: string) =>
        Effect.map(index.refresh, ({ sessions }) => sessions.find((s) => s.sessionId === sessionId)?.lastSequence)
      expect(yield* lastOf(held)).toBe(1)
      appendFileSync(join(dataDir, "index.journal"), ". s000\n".repeat(Math.ceil(SessionIndex.compactJournalAt / 7)))
      yield* store.append(created("trigger"))
      expect(yield* lastOf("trigger")).toBe(1)
      // `held`'s appends under its lock write no journal line: the listings learn of them from `+ held`.
      for (const sequence of [2, 3, 4]) {
        yield* store.append(message(held, sequence))
        expect(yield* lastOf(held)).toBe(sequence)
      }
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a line appended between the listing's read and the clear-out is read from the journal set aside", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const journal = join(dir, "index.journal")
      writeFileSync(journal, ". a\n+ b\n".repeat(4))
      const { read } = SessionIndex.readJournal(journal, { inode: -1, offset: 0 }, [])
      expect([...read.writing]).toEqual(["b"])
      // The writers' lines land after the listing read the journal, before it is set aside.
      appendFileSync(journal, "- b\n+ c\n. d\n")
      const cleared = SessionIndex.clearJournal(journal, read)
      expect(cleared.same).toBe(true)
      expect([...cleared.read.writing]).toEqual(["c"])
      expect([...cleared.read.changed].sort()).toEqual(["a", "b", "c", "d"])
      expect(cleared.read).toMatchObject({ inode: 0, offset: 0 })
      expect(readdirSync(dir)).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("review 49: repair's two passes", () => {
  it.scoped("a line appended without the lock between the passes fails repair typed; nothing is changed", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const sessionsDir = join(dataDir, "sessions")
      mkdirSync(sessionsDir, { recursive: true })
      const file = join(sessionsDir, "s.jsonl")
      const line = (event: AgentEvent.AgentEvent) => JSON.stringify(event) + "\n"
      // A duplicate sequence to drop, and a turn left open: repair names its closing event between the passes.
      writeFileSync(file, LogLines.header + "\n" + line(created("s")) + line(started("s", 2)) + line(message("s", 2)))
      const late = line(message("s", 3))
      const ids = IdGenerator.of({ next: () => Effect.sync(() => (appendFileSync(file, late), "evt_closing")) })
      const before = readFileSync(file, "utf8")
      const repaired = yield* Effect.either(JsonlEventStore.repair({ dataDir, sessionId: "s" }).pipe(Effect.provideService(IdGenerator, ids)))
      expect(Either.isLeft(repaired) && repaired.left).toMatchObject({ _tag: "EventStoreFailure", operation: "repair", reason: "unavailable" })
      expect(Either.isLeft(repaired) && repaired.left.message).toContain("the log changed while repairing; nothing was changed")
      expect(readFileSync(file, "utf8")).toBe(before + late)
      expect(readdirSync(sessionsDir).filter((name) => !name.endsWith(".lock")).sort()).toEqual(["s.jsonl"])
      expect(existsSync(`${file}.repair`)).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))
})
