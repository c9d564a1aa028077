/**
 * `repair` against an append that does not take the writer lock (stores43). Repair holds the lock,
 * and every writer that takes it first (the engine always does) is refused `SessionBusy` meanwhile.
 * But the port lets an append skip the lock (the sequence check is its fence), and such an append
 * between repair's last check of the log and the rename of the new log over it went into the
 * original — kept as `<file>.bak` — and was lost from the log, though its writer was told it was
 * stored. Both sides now look after the swap: repair checks that the original did not grow (else it
 * puts the original back and fails, nothing changed), and an append made without the lock checks
 * that the log's name still names the file it wrote (else it takes its lines back and fails).
 * Interleavings driven through `RepairSeam` and the store's `AppendIo`: no sleeps.
 */
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { IdGenerator } from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"

const at = (sequence: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString()
const created: AgentEvent.AgentEvent = { id: "e1", sessionId: "s", sequence: 1, timestamp: at(1), type: "session.created", payload: { cwd: "/w", client: "test" } }
const started: AgentEvent.AgentEvent = { id: "e2", sessionId: "s", turnId: "turn_1", sequence: 2, timestamp: at(2), type: "turn.started", payload: { promptPreview: "p" } }
const message = (sequence: number, id: string): AgentEvent.AgentEvent =>
  ({ id, sessionId: "s", turnId: "turn_1", sequence, timestamp: at(sequence), type: "user.message", payload: { content: "m" } }) as AgentEvent.AgentEvent
const line = (event: AgentEvent.AgentEvent) => JSON.stringify(event) + "\n"

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
  it.scoped("an append between repair's last check and its swap is not lost in the backup", () =>
    Effect.gen(function*() {
      const { dataDir, file, sessionsDir } = yield* damagedLog
      const other = yield* JsonlEventStore.make({ dataDir })
      const swap = { beforeSwap: Effect.orDie(other.append(message(3, "late"))) }
      const repaired = yield* Effect.either(
        JsonlEventStore.repair({ dataDir, sessionId: "s" }).pipe(Effect.provideService(IdGenerator, ids), Effect.provideService(JsonlEventStore.RepairSeam, swap))
      )
      // The append was told it was stored: the log holds it. (Before: the repaired log, without it; the line in s.jsonl.bak.)
      expect(readFileSync(file, "utf8")).toContain('"id":"late"')
      expect(Either.isLeft(repaired) && repaired.left.message).toContain("the log changed while repairing; nothing was changed")
      expect(readdirSync(sessionsDir).filter((name) => !name.endsWith(".lock")).sort()).toEqual(["s.jsonl"])
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
})
