/**
 * Cutting a torn last line before an append (stores43): the store opened the log (no link followed),
 * read its end, then cut the torn tail by name (`truncate(path)`). A link swapped in for the log
 * between the open and the cut had the file it named cut to the log's length. The tail is now cut
 * through the descriptor that was checked. The swap is made through the store's `AppendIo`, at its
 * read of the log's end: no sleeps.
 */
import { appendFileSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { tempDir } from "../helpers.js"

const at = "2026-01-01T00:00:00.000Z"
const event = (sequence: number): AgentEvent.AgentEvent =>
  sequence === 1
    ? { id: "evt_1", sessionId: "s", sequence, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }
    : { id: `evt_${sequence}`, sessionId: "s", turnId: "turn_1", sequence, timestamp: at, type: "model.delta", payload: { text: "t" } }

describe("a torn tail is cut through the descriptor that was checked", () => {
  it.scoped("a link swapped in for the log before the cut leaves the file it names whole", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Effect.flatMap(JsonlEventStore.make({ dataDir }), (writer) => writer.appendAll([event(1), event(2)]))
      const file = join(dataDir, "sessions", "s.jsonl")
      appendFileSync(file, '{"torn":')
      const victim = join(dataDir, "victim.txt")
      const original = "the user's own file, longer than the log ".repeat(40)
      writeFileSync(victim, original)
      let swapped = false
      const io: AppendIo.Io = {
        ...AppendIo.node,
        readAt: (fd, offset, length) => {
          if (!swapped) {
            swapped = true
            renameSync(file, `${file}.moved`)
            symlinkSync(victim, file)
          }
          return AppendIo.node.readAt(fd, offset, length)
        }
      }
      const store = yield* JsonlEventStore.make({ dataDir }).pipe(Effect.provideService(AppendIo.AppendIo, io))
      const appended = yield* Effect.either(store.append(event(3)))
      expect(swapped).toBe(true)
      expect(readFileSync(victim, "utf8")).toBe(original)
      // The log it checked was cut; the link is refused as a log.
      expect(readFileSync(`${file}.moved`, "utf8")).not.toContain("torn")
      expect(Either.isLeft(appended)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))
})
