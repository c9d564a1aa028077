/**
 * `repair` against an append that does not take the writer lock (stores43). Repair holds the lock,
 * and every writer that takes it first (the engine always does) is refused `SessionBusy` meanwhile.
 * But the port lets an append skip the lock (the sequence check is its fence), and such an append
 * between repair's last check of the log and the rename of the new log over it went into the
 * original — kept as `<file>.bak` — and was lost from the log, though its writer was told it was
 * stored. stores43 had both sides look after the swap (repair put the original back when it grew);
 * stores44 found that put-back lost an append told it was stored in the repaired log meanwhile (left
 * in `<file>.repair`), and a take-back cutting another appender's lines written after its own. Now
 * repair marks its rewrite in the lock folder before its last look and unmarks after the rename; an
 * append made without the lock checks, after its write, the mark and then that the log's name still
 * names its file, else takes its lines back — only while they are the file's last — and fails.
 * Interleavings driven through `RepairSeam` and the store's `AppendIo`: no sleeps.
 */
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"
import * as WriterLock from "../../src/layers/jsonl/WriterLock.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { IdGenerator } from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created: AgentEvent.AgentEvent = { id: "e1", sessionId: "s", sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }
const started: AgentEvent.AgentEvent = { id: "e2", sessionId: "s", turnId: "turn_1", sequence: 2, timestamp: at(2), type: "turn.started", payload: { promptPreview: "p" } }
const message = (sequence: number, id: string): AgentEvent.AgentEvent =>
  ({ id, sessionId: "s", turnId: "turn_1", sequence, timestamp: at(sequence), type: "user.message", payload: { content: "m" } }) as AgentEvent.AgentEvent
const line = (event: AgentEvent.AgentEvent) => JSON.stringify(event) + "\n"
const secondTurn = (sequence: number, id: string): AgentEvent.AgentEvent =>
  ({ id, sessionId: "s", turnId: "turn_2", sequence, timestamp: at(sequence), type: "turn.started", payload: { promptPreview: "q" } }) as AgentEvent.AgentEvent

/** A log with a duplicate sequence to drop (and a turn left open, which repair closes). */
const damagedLog = Effect.gen(function*() {
  const dataDir = yield* tempDir
  const sessionsDir = join(dataDir, "sessions")
  mkdirSync(sessionsDir, { recursive: true })
  const file = join(sessionsDir, "s.jsonl")
  writeFileSync(file, LogLines.header + "\n" + line(created) + line(started) + line(message(2, "e2-dup")))
  return { dataDir, sessionsDir, file }
})

const ids = IdGenerator.of({ next: () => Effect.succeed("evt_closing") })

describe("repair and an append made without the writer lock", () => {
  it.scoped("an append between repair's last check and its swap is refused, not lost in the backup", () =>
    Effect.gen(function*() {
      const { dataDir, file, sessionsDir } = yield* damagedLog
      const other = yield* JsonlEventStore.make({ dataDir })
      let late: Either.Either<void, unknown> | undefined
      const swap = { beforeSwap: Effect.map(Effect.either(other.append(message(3, "late"))), (result) => void (late = result)) }
      const repaired = yield* Effect.either(
        JsonlEventStore.repair({ dataDir, sessionId: "s" }).pipe(Effect.provideService(IdGenerator, ids), Effect.provideService(JsonlEventStore.RepairSeam, swap))
      )
      // stores43: the append was told it was stored while its line went into the original, now the
      // backup (then: repair put the original back and failed). stores44: the repair's mark refuses
      // the append — its line taken back — and the repair goes on.
      expect(late !== undefined && Either.isLeft(late) && late.left).toMatchObject({ _tag: "EventStoreFailure", reason: "unavailable" })
      expect(Either.isRight(repaired)).toBe(true)
      expect(readFileSync(file, "utf8")).not.toContain('"id":"late"')
      expect(readFileSync(`${file}.bak`, "utf8")).not.toContain('"id":"late"')
      expect(readdirSync(sessionsDir).filter((name) => !name.endsWith(".lock")).sort()).toEqual(["s.jsonl", "s.jsonl.bak"])
      // The mark is gone with the repair: an append made now is stored.
      const again = yield* Effect.either(other.append(secondTurn(4, "after")))
      expect(Either.isRight(again)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an append whose log is swapped between its check and its write takes its lines back and fails", () =>
    Effect.gen(function*() {
      const { dataDir, file } = yield* damagedLog
      const replacement = LogLines.header + "\n" + line(created) + line(started) + line(message(3, "e3"))
      let swapped = false
      const io: AppendIo.Io = {
        ...AppendIo.node,
        // A repair's swap, done at the worst moment: after the append's check of the log, before its write.
        write: (fd, data) => {
          if (!swapped) {
            swapped = true
            writeFileSync(`${file}.new`, replacement)
            linkSync(file, `${file}.bak`)
            renameSync(`${file}.new`, file)
          }
          return AppendIo.node.write(fd, data)
        }
      }
      const other = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io))
      const appended = yield* Effect.either(other.append(message(3, "late")))
      expect(swapped).toBe(true)
      expect(Either.isLeft(appended) && appended.left).toMatchObject({ _tag: "EventStoreFailure", operation: "append" })
      // Nothing of it in the original (now the backup) nor in the new log; appended again, it meets the new log.
      expect(readFileSync(`${file}.bak`, "utf8")).not.toContain('"id":"late"')
      expect(readFileSync(file, "utf8")).toBe(replacement)
      const again = yield* Effect.either(other.append(message(4, "later")))
      expect(Either.isRight(again)).toBe(true)
      expect((yield* collect(other.read("s"))).map((event) => event.id)).toEqual(["e1", "e2", "e3", "later"])
      expect(existsSync(`${file}.new`)).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an append acknowledged on the repaired log just after the swap is not lost (stores44; before: put back without it)", () =>
    Effect.gen(function*() {
      const { dataDir, file } = yield* damagedLog
      const x = yield* JsonlEventStore.make({ dataDir })
      const y = yield* JsonlEventStore.make({ dataDir })
      // x appends to the original before the swap; y, reading the log after it, to the repaired log
      // (sequence 4: after the turn repair closes at 3).
      const outcomes: Record<string, boolean> = {}
      const tryAppend = (store: typeof x, event: AgentEvent.AgentEvent) =>
        Effect.map(Effect.either(store.append(event)), (result) => {
          outcomes[event.id] = Either.isRight(result)
        })
      const seam = { beforeSwap: tryAppend(x, message(3, "x-late")), afterSwap: tryAppend(y, secondTurn(4, "y-late")) }
      yield* Effect.either(
        JsonlEventStore.repair({ dataDir, sessionId: "s" }).pipe(Effect.provideService(IdGenerator, ids), Effect.provideService(JsonlEventStore.RepairSeam, seam))
      )
      expect(Object.keys(outcomes).sort()).toEqual(["x-late", "y-late"])
      // Every append told it was stored is in the log. (Before: y-late only in s.jsonl.repair.)
      const log = readFileSync(file, "utf8")
      for (const [id, stored] of Object.entries(outcomes)) if (stored) expect(log).toContain(`"id":"${id}"`)
      const fresh = yield* JsonlEventStore.make({ dataDir })
      const sequences = (yield* collect(fresh.read("s"))).map((event) => event.sequence)
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an append taking its lines back never cuts another's acknowledged lines after them (stores44)", () =>
    Effect.gen(function*() {
      const { dataDir, file } = yield* damagedLog
      const replacement = LogLines.header + "\n" + line(created) + line(started) + line(message(3, "e3"))
      const second = yield* JsonlEventStore.make({ dataDir })
      let p2: Either.Either<void, unknown> | undefined
      const io: AppendIo.Io = {
        ...AppendIo.node,
        // p1 writes; p2 (another process, without the lock) appends after p1's line and is told it is
        // stored; then a repair's swap; then p1 checks, finds its log replaced and takes its lines back.
        write: (fd, data) => {
          const written = AppendIo.node.write(fd, data)
          if (p2 === undefined) {
            p2 = Effect.runSync(Effect.either(second.append(message(4, "p2"))))
            writeFileSync(`${file}.new`, replacement)
            linkSync(file, `${file}.bak`)
            renameSync(`${file}.new`, file)
          }
          return written
        }
      }
      const first = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io))
      const p1 = yield* Effect.either(first.append(message(3, "p1")))
      expect(p2 !== undefined && Either.isRight(p2)).toBe(true)
      expect(Either.isLeft(p1)).toBe(true)
      // p2's acknowledged line stays in the original, where whoever swapped it (a repair) looks.
      // (Before: p1's truncate cut the file back to before its own line, p2's with it.)
      expect(readFileSync(`${file}.bak`, "utf8")).toContain('"id":"p2"')
    }).pipe(Effect.provide(NodeContext.layer)))
})

/**
 * A `rewrite` mark planted in a data dir that came with a repository (review57a). The mark named
 * only a lock generation, and generations are predictable (1 for a fresh lock folder), while taking
 * the lock removed old generation files but not the mark: a clone's `rewrite` = "1" made every
 * append without the lock to that session fail while the next writer held it, and one planted as a
 * folder made every `repair` of it fail (`EEXIST`). Now the lock's winner removes any mark it finds,
 * a mark names the holder's nonce as well, and a repair removes whatever has the mark's name.
 */
describe("a rewrite mark planted in the lock folder", () => {
  const clone = Effect.gen(function*() {
    const log = yield* damagedLog
    mkdirSync(`${log.file}.lock`)
    return { ...log, mark: join(`${log.file}.lock`, "rewrite") }
  })

  it.scoped("naming the next writer's generation does not refuse appends made without the lock (failed on main)", () =>
    Effect.gen(function*() {
      const { dataDir, file, mark } = yield* clone
      writeFileSync(mark, "1")
      const writer = yield* JsonlEventStore.make({ dataDir })
      const other = yield* JsonlEventStore.make({ dataDir })
      yield* writer.acquireWriter("s")
      const appended = yield* Effect.either(other.append(message(3, "lockless")))
      expect(Either.isRight(appended)).toBe(true)
      expect(readFileSync(file, "utf8")).toContain('"id":"lockless"')
      expect(existsSync(mark)).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("as a folder does not make repair fail (failed on main: EEXIST)", () =>
    Effect.gen(function*() {
      const { dataDir, mark } = yield* clone
      mkdirSync(mark)
      writeFileSync(join(mark, "inside"), "x")
      const repaired = yield* Effect.either(JsonlEventStore.repair({ dataDir, sessionId: "s" }).pipe(Effect.provideService(IdGenerator, ids)))
      expect(Either.isRight(repaired)).toBe(true)
      expect(existsSync(mark)).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect("counts only when it names the holder's nonce; one planted while held is replaced, never followed (failed on main)", () =>
    Effect.gen(function*() {
      const { file, mark, dataDir } = yield* clone
      const scope = yield* Scope.make()
      const held = yield* Scope.extend(WriterLock.acquire("s", file), scope)
      // The live generation alone, as a clone or an older mark names it: not this holder's rewrite.
      writeFileSync(mark, String(held.generation))
      expect(WriterLock.rewriteUnderWay(file)).toBe(false)
      writeFileSync(mark, `${held.generation} not-the-nonce`)
      expect(WriterLock.rewriteUnderWay(file)).toBe(false)
      // A folder, then a link to a file elsewhere, under the mark's name: removed, the link not written through.
      const rmMark = yield* Scope.make()
      rmSync(mark)
      mkdirSync(mark)
      writeFileSync(join(mark, "inside"), "x")
      yield* Scope.extend(WriterLock.markRewrite(file, held), rmMark)
      expect(lstatSync(mark).isFile()).toBe(true)
      expect(WriterLock.rewriteUnderWay(file)).toBe(true)
      yield* Scope.close(rmMark, Exit.void)
      expect(WriterLock.rewriteUnderWay(file)).toBe(false)
      const elsewhere = join(dataDir, "elsewhere")
      writeFileSync(elsewhere, "kept")
      symlinkSync(elsewhere, mark)
      const again = yield* Scope.make()
      yield* Scope.extend(WriterLock.markRewrite(file, held), again)
      expect(readFileSync(elsewhere, "utf8")).toBe("kept")
      expect(lstatSync(mark).isFile()).toBe(true)
      expect(WriterLock.rewriteUnderWay(file)).toBe(true)
      yield* Scope.close(again, Exit.void)
      yield* Scope.close(scope, Exit.void)
      expect(existsSync(mark)).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
})
