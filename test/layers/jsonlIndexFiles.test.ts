/**
 * The listing index's own files in a data dir that came with a repository (review 46): whatever the
 * repository put under their names, a listing never writes through them and never fails on them.
 *
 * - The index was saved through `index.json.<pid>.<n>.tmp`, opened following links and then
 *   `chmod`ded by name: a link planted under each such name (pid_max of them) made a read-only
 *   `sessions` truncate the file it named (`~/.bashrc`), write the index into it and make it 0600.
 * - `index.journal` was read whole, into one buffer then one string: a journal of gigabytes (a
 *   sparse file costs no disk) failed every listing (`ERR_OUT_OF_RANGE`, `ERR_STRING_TOO_LONG`).
 */
import { appendFileSync, chmodSync, existsSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SessionIndex from "../../src/layers/jsonl/SessionIndex.js"
import { tempDir } from "../helpers.js"

const event = (sessionId: string, sequence: number, type: string, payload: object) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(), type, payload, ...(sequence === 1 ? {} : { turnId: "turn_1" }) }) as AgentEvent

/** A data dir with session `a` (two events), its index not yet written. */
const dataDirWithSession = Effect.gen(function*() {
  const dataDir = yield* tempDir
  const store = yield* JsonlEventStore.make({ dataDir })
  yield* store.appendAll([event("a", 1, "session.created", { cwd: "/work/a", client: "test" }), event("a", 2, "turn.started", { promptPreview: "p" })])
  return dataDir
})

const listedIds = (dataDir: string) =>
  Effect.gen(function*() {
    const store = yield* JsonlEventStore.make({ dataDir, readOnly: true })
    const { damaged, sessions } = yield* store.listing
    expect(damaged).toEqual([])
    return sessions.map((s) => s.sessionId)
  })

describe("the listing index's files, as a repository may ship them", () => {
  it.scoped("links under the names of the index's temporary files are never written through", () =>
    Effect.gen(function*() {
      const dataDir = yield* dataDirWithSession
      const victim = join(dataDir, "..", `${dataDir.split("/").at(-1)}-bashrc`)
      writeFileSync(victim, "export PATH=/usr/bin\n")
      chmodSync(victim, 0o644)
      // Every name this process's saves took (`.<pid>.<n>.tmp`) and then some.
      for (let n = 0; n <= 64; n++) symlinkSync(victim, join(dataDir, `index.json.${process.pid}.${n}.tmp`))
      expect(yield* listedIds(dataDir)).toEqual(["a"])
      expect(yield* listedIds(dataDir)).toEqual(["a"])
      expect(readFileSync(victim, "utf8")).toBe("export PATH=/usr/bin\n")
      expect(statSync(victim).mode & 0o777).toBe(0o644)
      // The index was saved all the same, owner only, and no temporary file of ours is left.
      expect(JSON.parse(readFileSync(join(dataDir, "index.json"), "utf8"))).toMatchObject({ format: "effect-agent/index" })
      expect(statSync(join(dataDir, "index.json")).mode & 0o777).toBe(0o600)
      expect(readdirSync(dataDir).filter((name) => name.endsWith(".tmp"))).toHaveLength(65)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a journal of gigabytes is not read: the listing checks every log instead", () =>
    Effect.gen(function*() {
      for (const [size, newline] of [[3 * 1024 ** 3, false], [600 * 1024 ** 2, true]] as const) {
        const dataDir = yield* dataDirWithSession
        const journal = join(dataDir, "index.journal")
        // Sparse: no disk, and no line this version wrote.
        truncateSync(journal, size)
        if (newline) appendFileSync(journal, "\n")
        expect(yield* listedIds(dataDir)).toEqual(["a"])
        // Read to its end by a full check, with no writer holding a lock: removed (compacted).
        expect(existsSync(journal)).toBe(false)
        expect(yield* listedIds(dataDir)).toEqual(["a"])
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a long journal is removed once read; the listings after stay current", () =>
    Effect.gen(function*() {
      const dataDir = yield* dataDirWithSession
      const journal = join(dataDir, "index.journal")
      const store = yield* JsonlEventStore.make({ dataDir })
      const lastSequence = Effect.map(store.list, (sessions) => sessions.map((s) => [s.sessionId, s.lastSequence]))
      expect(yield* lastSequence).toEqual([["a", 2]])
      // Lines as the writers append them, past the length at which the journal is compacted.
      appendFileSync(journal, ". a\n".repeat(Math.ceil(SessionIndex.compactJournalAt / 4)))
      yield* store.append(event("a", 3, "user.message", { content: "m" }))
      expect(yield* lastSequence).toEqual([["a", 3]])
      expect(existsSync(journal)).toBe(false)
      // The next write makes a new journal, which the next listing reads.
      yield* store.append(event("a", 4, "user.message", { content: "n" }))
      expect(existsSync(journal)).toBe(true)
      expect(yield* lastSequence).toEqual([["a", 4]])
      yield* store.append(event("a", 5, "user.message", { content: "o" }))
      expect(yield* lastSequence).toEqual([["a", 5]])
    }).pipe(Effect.provide(NodeContext.layer)))
})
