/**
 * Index saves are last-wins (stores44, from closing42): a save that never heard a `. <id>` or
 * `- <id>` line — the other listing read it, in a journal since cleared — can be the one kept. Can a
 * listing then show a deleted session or hide a live one? No: the sessions listed are the sessions
 * folder's names, read by every listing; an index entry whose log is gone is not listed, and a log
 * the index has no entry for is read. What such a save can cost is a known log's summary, stale until
 * its next journal line or the rotation (docs/storage.md). Here the kept index claims to have read
 * the journal's lines about a deleted, a new and an appended-to session without knowing any of them.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created = (sessionId: string): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-1`, sessionId, sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }) as AgentEvent.AgentEvent
const started = (sessionId: string, sequence: number): AgentEvent.AgentEvent =>
  ({ id: `${sessionId}-${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at(sequence), type: "turn.started", payload: { promptPreview: "p" } }) as AgentEvent.AgentEvent

describe("an index save that missed journal lines", () => {
  it.scoped("lists exactly the sessions whose logs exist", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      for (const id of ["alive", "deleted", "appended"]) yield* store.append(created(id))
      expect((yield* store.list).map((s) => s.sessionId).sort()).toEqual(["alive", "appended", "deleted"])
      const indexFile = join(dataDir, "index.json")
      const stale = JSON.parse(readFileSync(indexFile, "utf8"))
      // Meanwhile: one log deleted, one session started, one appended to (each a journal line).
      rmSync(join(dataDir, "sessions", "deleted.jsonl"))
      yield* store.append(created("new"))
      yield* store.append(started("appended", 2))
      // The losing save: entries from before, and the journal taken as read to its end.
      const journal = statSync(join(dataDir, "index.journal"))
      writeFileSync(indexFile, JSON.stringify({ ...stale, journal: { ...stale.journal, inode: journal.ino, offset: journal.size } }))
      const listed = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.flatMap((other) => other.list))
      expect(listed.map((s) => s.sessionId).sort()).toEqual(["alive", "appended", "new"])
    }).pipe(Effect.provide(NodeContext.layer)))
})
