/**
 * A log swapped for a named pipe between the JSONL listing's look at it and its read (a repository's
 * shipped `.effect-agent/`, or anyone who can write the data dir, racing the listing): the listing
 * must not block on the pipe. The store's `FileSystem` here swaps the log the moment it is asked
 * about it, which puts the swap exactly between a check by path and a use by path.
 */
import { execFileSync } from "node:child_process"
import { closeSync, constants, openSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { tempDir } from "../helpers.js"

const event = (sessionId: string, sequence: number, type: string, payload: object) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(), type, payload, ...(sequence === 1 ? {} : { turnId: "turn_1" }) }) as AgentEvent

/**
 * A FileSystem that, when a log in `victims` is about to be read by name, puts a named pipe in its
 * place: after any check the store made, before the read.
 */
const swapping = (victims: ReadonlyArray<string>) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs) => {
      const swapped = new Set<string>()
      const swap = (path: string) =>
        Effect.sync(() => {
          if (swapped.has(path) || !victims.includes(path)) return
          swapped.add(path)
          renameSync(path, `${path}.aside`)
          execFileSync("mkfifo", [path])
        })
      return {
        ...fs,
        readFile: (path: string) => Effect.zipRight(swap(path), fs.readFile(path)),
        stream: (path: string, options?: FileSystem.StreamOptions) => Stream.unwrap(Effect.as(swap(path), fs.stream(path, options)))
      }
    })
  ).pipe(Layer.provide(NodeContext.layer))

/** Lets a read blocked on the pipe go (a writer opens and closes it), so the test leaves no thread behind. */
const release = (fifo: string): boolean => {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    return true
  } catch {
    // No reader (ENXIO), or no pipe any more: nothing to release.
    return false
  }
}

describe("a JSONL log swapped for a named pipe while the listing reads it", () => {
  it.scopedLive("the listing ends, and lists the log as damaged (not a regular file)", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const writer = yield* JsonlEventStore.make({ dataDir })
      yield* writer.appendAll([event("a", 1, "session.created", { cwd: "/work/a", client: "test" }), event("a", 2, "turn.started", { promptPreview: "p" })])
      yield* writer.appendAll([event("c", 1, "session.created", { cwd: "/work/c", client: "test" }), event("c", 2, "turn.started", { promptPreview: "p" })])
      expect((yield* writer.listing).sessions).toHaveLength(2)
      // A log the index does not know yet (read whole), and one it knows that grew (its new lines read).
      const log = (id: string) => join(dataDir, "sessions", `${id}.jsonl`)
      writeFileSync(log("b"), readFileSync(log("a"), "utf8").replaceAll("\"a", "\"b"))
      yield* writer.append(event("c", 3, "user.message", { content: "more" }))
      const lister = yield* JsonlEventStore.make({ dataDir, readOnly: true }).pipe(Effect.provide(swapping([log("b"), log("c")])))
      // A read blocked on a pipe cannot be interrupted: after a while a writer opens and closes the
      // pipes, which ends such a read (at an empty end), and the test fails saying it had to.
      let released = false
      yield* Effect.forkScoped(Effect.delay(Effect.forever(Effect.delay(Effect.sync(() => {
        for (const id of ["b", "c"]) released = release(log(id)) || released
      }), "1 second")), "5 seconds"))
      const { damaged, sessions } = yield* lister.listing
      expect(released, "the listing hung on a pipe").toBe(false)
      expect(sessions.map((s) => s.sessionId).sort()).toEqual(["a", "b", "c"].filter((id) => !damaged.some((d) => d.sessionId === id)))
      // Whatever the listing read, it read the files it checked, or said a log is not one.
      for (const d of damaged) expect(d.failure.detail).toBe("not a regular file")
    }).pipe(Effect.provide(NodeContext.layer)), { timeout: 60_000 })
})
