/**
 * The JSONL listing index kept current by the writers (issue 24, item 5): a warm listing reads the
 * index, the folder's names and the journal's new lines, not every log (see jsonl/SessionIndex.ts
 * for the rule). Proven with a second process writing — under writer locks and without — while this
 * one lists, and with logs this version did not write: a new one is found at once; an edit in place
 * of a log the index covers waits for the next full check (an index of an older version, a journal
 * that is not the one read, or no index).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import { afterAll } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SessionIndex from "../../src/layers/jsonl/SessionIndex.js"
import type { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { ownedByTest } from "../processes.js"

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const writerScript = resolve(import.meta.dirname, "jsonlIndexWriter.ts")

const event = (sessionId: string, sequence: number, type: string, payload: object) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(), type, payload, ...(sequence === 1 ? {} : { turnId: "turn_1" }) }) as AgentEvent

/** Every session's summary folded from its whole log: what a listing must say. */
const fromLogs = (store: EventStore.Service) =>
  Effect.gen(function*() {
    const { sessions } = yield* store.listing
    return yield* Effect.forEach(sessions, (s) => Stream.runFold(store.read(s.sessionId), undefined as Session.SessionSummary | undefined, Session.summarize))
  })

const byId = (sessions: ReadonlyArray<Session.SessionSummary | undefined>) => Object.fromEntries(sessions.map((s) => [s!.sessionId, s]))

describe("the JSONL listing index, kept current by the writers", () => {
  it.scoped("a second process writing while this one lists: every listing is whole and current, the last one exact", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const child = ownedByTest(spawn(process.execPath, ["--import", tsx, writerScript, dataDir, "6", "15"], { stdio: ["pipe", "pipe", "pipe"] }))
      children.push(child)
      let out = ""
      let err = ""
      const ready = new Promise<void>((ok) => child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c) && out.includes("ready") && ok()))
      child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c))
      let exited = false
      const done = new Promise<number | null>((ok) => child.on("close", (code) => ok(code))).then((code) => {
        exited = true
        return code
      })
      yield* Effect.promise(() => ready)
      const store = yield* JsonlEventStore.make({ dataDir })
      // The locks of w0, w2, w4 are held now: their first turns are listed all the same.
      const first = yield* store.listing
      expect(first.damaged).toEqual([])
      expect(first.sessions.map((s) => [s.sessionId, s.lastSequence, s.turnCount]).sort()).toEqual(
        ["w0", "w1", "w2", "w3", "w4", "w5"].map((id) => [id, 5, 1])
      )
      child.stdin.write("go\n")
      const seen = new Map<string, number>()
      let listings = 0
      while (!exited) {
        // A turn of the event loop between listings: a warm listing with nothing new is synchronous
        // (one `stat` per log), and a loop of them alone would never let the child's exit be seen.
        yield* Effect.promise(() => new Promise<void>((ok) => setImmediate(ok)))
        const { damaged, sessions } = yield* store.listing
        listings++
        expect(damaged).toEqual([])
        expect(sessions).toHaveLength(6)
        for (const s of sessions) {
          // Never backwards, never past the end.
          expect(s.lastSequence).toBeGreaterThanOrEqual(seen.get(s.sessionId) ?? 0)
          expect(s.lastSequence).toBeLessThanOrEqual(62)
          seen.set(s.sessionId, s.lastSequence)
        }
      }
      expect(yield* Effect.promise(() => done), err).toBe(0)
      expect(listings).toBeGreaterThan(0)
      const last = yield* store.listing
      expect(byId(last.sessions)).toEqual(byId(yield* fromLogs(store)))
      expect(last.sessions.map((s) => [s.sessionId, s.lastSequence, s.turnCount, s.awaitingApproval]).sort()).toEqual(
        ["w0", "w1", "w2", "w3", "w4", "w5"].map((id) => [id, 62, 15, ["call_last"]])
      )
      // Another store opened on the data dir, as the next CLI run would (the index warm), says the same.
      const other = yield* JsonlEventStore.make({ dataDir, readOnly: true })
      expect(byId((yield* other.listing).sessions)).toEqual(byId(last.sessions))
    }).pipe(Effect.provide(NodeContext.layer)), { timeout: 120_000 })

  it.scoped("logs this version did not write: a new one is found at once, one edited in place by the rotation or the next full check", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      for (const id of ["a", "b"]) yield* store.appendAll([event(id, 1, "session.created", { cwd: `/work/${id}`, client: "test" }), event(id, 2, "turn.started", { promptPreview: "p" })])
      const index = join(dataDir, "index.json")
      const log = (id: string) => join(dataDir, "sessions", `${id}.jsonl`)
      const sequences = Effect.map(store.list, (sessions) => Object.fromEntries(sessions.map((s) => [s.sessionId, s.lastSequence])))
      expect(yield* sequences).toEqual({ a: 2, b: 2 })
      expect(JSON.parse(readFileSync(index, "utf8"))).toMatchObject({ version: 5, writing: [] })

      // A copy under a new name (an older version, a restore): found by the next warm listing.
      writeFileSync(log("c"), readFileSync(log("a"), "utf8").replaceAll("\"a", "\"c"))
      expect(yield* sequences).toEqual({ a: 2, b: 2, c: 2 })
      // Gone from the folder: gone from the listing.
      rmSync(log("c"))
      expect(yield* sequences).toEqual({ a: 2, b: 2 })

      // A line appended in place by a writer that keeps no journal (an older version, a hand edit).
      const byHand = (id: string, sequence: number) => appendFileSync(log(id), JSON.stringify(event(id, sequence, "turn.started", { promptPreview: "by hand" })) + "\n")
      // Up to 256 sessions, every listing checks every log.
      byHand("a", 3)
      expect(yield* sequences).toEqual({ a: 3, b: 2 })
      // Beyond, a log outside this listing's rotation is checked by a later one (here: the next).
      const copies = Array.from({ length: 298 }, (_, i) => `s${String(i).padStart(3, "0")}`)
      for (const id of copies) writeFileSync(log(id), readFileSync(log("b"), "utf8").replaceAll("\"b", `"${id}`))
      expect(Object.keys(yield* sequences)).toHaveLength(300)
      const ids = ["a", "b", ...copies].sort()
      const cursor = Number(readFileSync(join(dataDir, "index.rotation"), "utf8"))
      const outside = ids[(cursor + SessionIndex.verifiedPerListing) % ids.length]!
      byHand(outside, 3)
      expect((yield* sequences)[outside]).toBe(2)
      expect((yield* sequences)[outside]).toBe(3)

      // An index written by an older version (2: no journal) brings a full check at once.
      byHand("b", 3)
      const current = JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<{ summary: { sessionId: string } }> }
      const keyed = Object.fromEntries(current.sessions.map((entry) => [entry.summary.sessionId, entry]))
      writeFileSync(index, JSON.stringify({ format: "effect-agent/index", version: 2, sessions: keyed }))
      expect((yield* sequences).b).toBe(3)
      expect(JSON.parse(readFileSync(index, "utf8"))).toMatchObject({ version: 5 })
      // So does a journal that is not the one the index read (removed, replaced, truncated)…
      byHand("b", 4)
      yield* store.append(event("a", 4, "turn.started", { promptPreview: "p" }))
      rmSync(join(dataDir, "index.journal"))
      expect(yield* sequences).toMatchObject({ a: 4, b: 4 })
      // …and no index at all.
      byHand("b", 5)
      rmSync(index)
      expect(yield* sequences).toMatchObject({ a: 4, b: 5 })
      // Appends through the store are announced in the journal: seen by the next warm listing.
      yield* store.append(event("s297", 3, "turn.started", { promptPreview: "p" }))
      expect((yield* sequences).s297).toBe(3)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the index keeps the listing's order: ties go by id in code-unit order (no host locale), cold or warm, whatever order the index was saved in", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      // Ids that differ in case, `_`, `-` and digits (some of them keys an object would reorder), all
      // last active at the same time; and one active later, listed first.
      const ties = ["b", "B", "a_1", "a-1", "a1", "A1", "a10", "a9", "a_", "a-", "Z", "z", "_a", "-a", "0", "9", "10", "sess_Ab", "sess_aB", "sess-ab"]
      for (const id of ties) yield* store.append(event(id, 1, "session.created", { cwd: "/work", client: "test" }))
      yield* store.appendAll([event("late", 1, "session.created", { cwd: "/work", client: "test" }), event("late", 2, "turn.started", { promptPreview: "p" })])
      const expected = ["late", ...[...ties].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))]
      const listed = Effect.map(store.list, (sessions) => sessions.map((s) => s.sessionId))
      const index = join(dataDir, "index.json")
      const saved = () => (JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<{ summary: { sessionId: string } }> }).sessions.map((entry) => entry.summary.sessionId)
      expect(yield* listed).toEqual(expected)
      expect(saved()).toEqual(expected)
      expect(yield* listed).toEqual(expected)
      // Saved in another order (by hand, or under another locale's collation): listed in order all the same, and saved back so.
      const file = JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<unknown> }
      writeFileSync(index, JSON.stringify({ ...file, sessions: [...file.sessions].reverse() }))
      expect(yield* listed).toEqual(expected)
      expect(saved()).toEqual(expected)
      // An entry that is not one is rebuilt from its log alone; the others are kept.
      const again = JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<unknown> }
      writeFileSync(index, JSON.stringify({ ...again, sessions: again.sessions.map((entry, i) => (i === 3 ? { junk: true } : i === 4 ? null : entry)) }))
      expect(yield* listed).toEqual(expected)
      expect(saved()).toEqual(expected)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("listings at once in one process each save the index whole: no save takes another's temporary file", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      const ids = Array.from({ length: 100 }, (_, i) => `s${i}`)
      for (const id of ids) yield* store.append(event(id, 1, "session.created", { cwd: "/work", client: "test" }))
      const warnings: Array<string> = []
      const collecting = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(String(message))
      })
      const index = join(dataDir, "index.json")
      // Each round starts cold (no index), so every listing of it saves one; all run at once.
      for (let round = 0; round < 2; round++) {
        rmSync(index, { force: true })
        const listings = yield* Effect.all(Array.from({ length: 20 }, () => store.list), { concurrency: "unbounded" }).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, collecting))
        )
        for (const sessions of listings) expect(sessions).toHaveLength(ids.length)
        const saved = JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<unknown> }
        expect(saved.sessions).toHaveLength(ids.length)
      }
      expect(warnings).toEqual([])
      expect(readdirSync(dataDir).filter((name) => name.endsWith(".tmp"))).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an index of version 4 (entries keyed by id) is kept as it stands: no log read again, saved as version 5 in listing order", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      for (const id of ["a", "b", "c"]) yield* store.append(event(id, 1, "session.created", { cwd: `/work/${id}`, client: "test" }))
      yield* store.append(event("b", 2, "turn.started", { promptPreview: "p" }))
      expect((yield* store.list).map((s) => s.sessionId)).toEqual(["b", "a", "c"])
      const index = join(dataDir, "index.json")
      const current = JSON.parse(readFileSync(index, "utf8")) as { sessions: Array<{ summary: { sessionId: string; title?: string } }> }
      // What version 4 wrote: the same entries keyed by id. A title no log holds shows that the entry was kept, not rebuilt.
      const keyed = Object.fromEntries(current.sessions.map((entry) => [entry.summary.sessionId, { ...entry, summary: { ...entry.summary, title: `kept ${entry.summary.sessionId}` } }]))
      writeFileSync(index, JSON.stringify({ ...current, version: 4, sessions: keyed }))
      const reopened = yield* JsonlEventStore.make({ dataDir, readOnly: true })
      expect((yield* reopened.list).map((s) => [s.sessionId, s.title])).toEqual([["b", "kept b"], ["a", "kept a"], ["c", "kept c"]])
      const saved = JSON.parse(readFileSync(index, "utf8")) as { version: number; sessions: Array<{ summary: { sessionId: string } }> }
      expect(saved.version).toBe(5)
      expect(saved.sessions.map((entry) => entry.summary.sessionId)).toEqual(["b", "a", "c"])
    }).pipe(Effect.provide(NodeContext.layer)))
})
