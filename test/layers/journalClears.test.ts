/**
 * Two listings clearing the index's journal at the same moment (stores43). Index saves are
 * last-wins: a listing that cleared the journal its writers had just made (holding a `+ S`, a
 * writer taking S's lock) and saved an index saying S is being written could have its save
 * replaced by a slower listing's, which cleared the journal before and never saw `+ S`. That file
 * was gone, so no later listing heard `+ S`: S's appends under its lock (which write no journal
 * line) went unlisted until the rotation came round. Now a listing that clears a journal announces
 * again, in the writers' next journal, each session it learnt is being written whose lock is still
 * held. The interleaving is driven through the index's `summarizeAll` seam: no sleeps.
 */
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"
import * as SessionIndex from "../../src/layers/jsonl/SessionIndex.js"
import { tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created = (sessionId: string): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-1`, sessionId, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }) as AgentEvent.AgentEvent
const message = (sessionId: string, sequence: number): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at(sequence), type: "user.message", payload: { content: "m" } }) as AgentEvent.AgentEvent

/** Lines enough to make a journal one a listing clears. */
const longJournal = ". s000\n".repeat(Math.ceil(SessionIndex.compactJournalAt / 7))

describe("two listings clearing the journal at once", () => {
  it.scoped("a `+` only the losing save saw is still heard", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dataDir = yield* tempDir
      const journal = join(dataDir, "index.journal")
      const store = yield* JsonlEventStore.make({ dataDir })
      // More sessions than one listing's rotation checks, so only the journal tells of `held`'s appends.
      const ids = Array.from({ length: SessionIndex.verifiedPerListing + 44 }, (_, i) => `s${String(i).padStart(3, "0")}`)
      for (const id of ids) yield* store.append(created(id))
      const held = ids[230]!
      const scope = yield* Scope.make()
      const summarize = (sessionId: string) => Stream.runFold(store.read(sessionId), undefined as Session.SessionSummary | undefined, Session.summarize)
      const indexWith = (summarizeAll: (sessionId: string) => Effect.Effect<Session.SessionSummary | undefined, never>) =>
        SessionIndex.make({ fs, path, dataDir, sessionsDir: join(dataDir, "sessions"), maxLineBytes: LogLines.defaultMaxLineBytes, summarizeAll })
      const plain = indexWith((sessionId) => Effect.orDie(summarize(sessionId)))
      const lastOf = (sessionId: string) => Effect.map(plain.refresh, ({ sessions }) => sessions.find((s) => s.sessionId === sessionId)?.lastSequence)
      expect(yield* lastOf(held)).toBe(1)
      // The second listing: a listing of its own, run whole while the first is between its clear and its save.
      const second = indexWith((sessionId) => Effect.orDie(summarize(sessionId)))
      let once = true
      // The first listing clears a long journal, then rebuilds `trigger` (a new log): there the writer
      // takes `held`'s lock (`+ held` in the writers' new journal), that journal grows long, and the
      // second listing reads it, clears it and saves an index saying `held` is being written. The
      // first listing saves after it, never having seen `+ held`.
      const first = indexWith((sessionId) =>
        Effect.zipRight(
          sessionId === "trigger" && once
            ? Effect.gen(function*() {
              once = false
              yield* Effect.orDie(Scope.extend(store.acquireWriter(held), scope))
              appendFileSync(journal, longJournal)
              yield* Effect.orDie(second.refresh)
            })
            : Effect.void,
          Effect.orDie(summarize(sessionId))
        )
      )
      appendFileSync(journal, longJournal)
      // The cleared journals' inode numbers are free for the next ones (ext4 reuses them at once): the
      // index told a journal by its number alone, and a writers' new journal given a cleared one's was
      // read from the old offset, its `+ held` skipped — a flake of this test under load (3 of 8
      // concurrent runs) until stores59 named each journal by its header (journalIdentity.test.ts).
      yield* store.append(created("trigger"))
      yield* Effect.orDie(first.refresh)
      // `held`'s appends under its lock write no journal line: the listings learn of them from `+ held`.
      for (const sequence of [2, 3, 4]) {
        yield* store.append(message(held, sequence))
        expect(yield* lastOf(held)).toBe(sequence)
      }
      yield* Scope.close(scope, Exit.void)
      yield* store.append(message(held, 5))
      expect(yield* lastOf(held)).toBe(5)
    }).pipe(Effect.provide(NodeContext.layer)))
})
