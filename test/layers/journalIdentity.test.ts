/**
 * stores59: the index told its journal by the inode number alone. A listing records which journal
 * it read (and how far); when that journal is cleared (renamed aside and removed by a listing whose
 * save then lost to this one's, last-wins) the writers make a new one, which ext4, tmpfs and
 * overlayfs give the freed number at once. The next listing took it for the journal it had read and
 * read it from the old offset: the `+ <id>` at its start was skipped, and that session's appends
 * under its lock (which write no journal line) went unlisted until the rotation came round (it
 * showed as a flake of journalClears.test.ts under load). A journal this version makes starts with a
 * header naming it (a random id), written with it before it has its name; the index records that id.
 *
 * The reuse is made certain here: where the file system did not give the new journal the old
 * number, the index is told it did (as a listing that read the old journal with that number would
 * have saved it). No timing.
 */
import { appendFileSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SessionIndex from "../../src/layers/jsonl/SessionIndex.js"
import { tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created = (sessionId: string): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-1`, sessionId, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }) as AgentEvent.AgentEvent
const message = (sessionId: string, sequence: number): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at(sequence), type: "user.message", payload: { content: "m" } }) as AgentEvent.AgentEvent

/** A data dir of more sessions than one listing's rotation checks, listed once (the index saved, its journal read to its end). */
const listedDataDir = Effect.gen(function*() {
  const dataDir = yield* tempDir
  const store = yield* JsonlEventStore.make({ dataDir })
  const ids = Array.from({ length: SessionIndex.verifiedPerListing + 44 }, (_, i) => `s${String(i).padStart(3, "0")}`)
  for (const id of ids) yield* store.append(created(id))
  yield* store.list
  const journal = join(dataDir, "index.journal")
  const indexFile = join(dataDir, "index.json")
  /** The index's record of its journal, as saved. */
  const recorded = () => (JSON.parse(readFileSync(indexFile, "utf8")) as { journal: { inode: number; offset: number; id?: string } }).journal
  /**
   * The next listing's rotation starts just past `sessionId`: its 256 checks end before they come
   * round to it again, so only the journal can tell of its appends.
   */
  const rotateAround = (sessionId: string) => writeFileSync(join(dataDir, "index.rotation"), String(ids.indexOf(sessionId) + 1))
  const lastOf = (sessionId: string) =>
    Effect.suspend(() => {
      rotateAround(sessionId)
      return Effect.map(store.list, (sessions) => sessions.find((s) => s.sessionId === sessionId)?.lastSequence)
    })
  return { dataDir, store, ids, journal, indexFile, recorded, lastOf }
})

describe("the index's journal, told by more than its inode number", () => {
  it.scoped("a new journal given the cleared one's number is read from its start: its `+ <id>` is heard", () =>
    Effect.gen(function*() {
      const { indexFile, journal, lastOf, recorded, store } = yield* listedDataDir
      const held = "s230"
      expect(yield* lastOf(held)).toBe(1)
      const read = recorded()
      expect(read.offset).toBe(statSync(journal).size)
      const oldInode = statSync(journal).ino
      // Another listing clears the journal (renamed aside, removed); its save loses to the one above.
      const aside = `${journal}.aside`
      renameSync(journal, aside)
      unlinkSync(aside)
      // A writer takes `held`'s lock: `+ held` opens the writers' new journal. Others' lines follow it,
      // past where the index read the old one.
      const scope = yield* Scope.make()
      yield* Scope.extend(store.acquireWriter(held), scope)
      appendFileSync(journal, ". s000\n".repeat(Math.ceil(read.offset / 7) + 1))
      expect(statSync(journal).size).toBeGreaterThan(read.offset)
      // ext4 gives the new journal the old number at once; where it did not, the index says so.
      const newInode = statSync(journal).ino
      if (newInode !== oldInode) writeFileSync(indexFile, JSON.stringify({ ...JSON.parse(readFileSync(indexFile, "utf8")), journal: { ...read, inode: newInode } }))
      // `held`'s appends under its lock write no journal line: the listings learn of them from `+ held`.
      for (const sequence of [2, 3, 4]) {
        yield* store.append(message(held, sequence))
        expect(yield* lastOf(held)).toBe(sequence)
      }
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the journal a writer makes starts with its own id, which the index records", () =>
    Effect.gen(function*() {
      const { journal, recorded, store } = yield* listedDataDir
      const first = readFileSync(journal, "latin1").split("\n")[0]!
      expect(first).toMatch(/^#journal [0-9a-f]{32}$/)
      expect(recorded().id).toBe(first.slice("#journal ".length))
      // Made again after a clear: another id.
      unlinkSync(journal)
      yield* store.append(message("s001", 2))
      const second = readFileSync(journal, "latin1").split("\n")
      expect(second[0]).toMatch(/^#journal [0-9a-f]{32}$/)
      expect(second[0]).not.toBe(first)
      expect(second.slice(1)).toEqual([". s001", ""])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an index saved without the id (an older effect-agent's) makes one full check, its entries kept", () =>
    Effect.gen(function*() {
      const { dataDir, indexFile, lastOf, recorded } = yield* listedDataDir
      // A line appended in place with no journal line (an older version's lock-less append, a hand edit).
      appendFileSync(join(dataDir, "sessions", "s230.jsonl"), JSON.stringify(message("s230", 2)) + "\n")
      const { id: _, ...withoutId } = recorded()
      writeFileSync(indexFile, JSON.stringify({ ...JSON.parse(readFileSync(indexFile, "utf8")), journal: withoutId }))
      expect(yield* lastOf("s230")).toBe(2)
      expect(recorded().id).toMatch(/^[0-9a-f]{32}$/)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a journal without a header (an older effect-agent made it) is still told by its inode and read from where the index stopped", () =>
    Effect.gen(function*() {
      const { journal } = yield* listedDataDir
      unlinkSync(journal)
      writeFileSync(journal, ". a\n+ b\n")
      const { read } = SessionIndex.readJournal(journal, { inode: -1, offset: 0 }, [])
      expect(read).toMatchObject({ inode: statSync(journal).ino, offset: 8 })
      expect(read.id).toBeUndefined()
      appendFileSync(journal, "- b\n. c\n")
      const next = SessionIndex.readJournal(journal, read, [...read.writing])
      expect(next.same).toBe(true)
      expect([...next.read.changed].sort()).toEqual(["b", "c"])
      expect([...next.read.writing]).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))
})
