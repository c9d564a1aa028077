/**
 * A session log planted as a link (a repository's shipped `.effect-agent/sessions/<id>.jsonl`
 * pointing at a log of another project of the user's, or at any file of theirs): the store makes
 * logs itself, never as links, so a link is not a log. Reading, listing and appending refuse it, and
 * the file it points at is neither read as this data dir's session nor written.
 */
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { tempDir } from "../helpers.js"

const event = (sessionId: string, sequence: number, type: string, payload: object) =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(), type, payload, ...(sequence === 1 ? {} : { turnId: "turn_1" }) }) as AgentEvent

describe("a JSONL session log that is a link", () => {
  it.scoped("is refused by reads, listings and appends; the file it points at is left as it was", () =>
    Effect.gen(function*() {
      // The user's own project, with a real session.
      const own = yield* tempDir
      const ownStore = yield* JsonlEventStore.make({ dataDir: own })
      yield* ownStore.appendAll([event("s1", 1, "session.created", { cwd: "/work/own", client: "test" }), event("s1", 2, "turn.started", { promptPreview: "p" })])
      const target = join(own, "sessions", "s1.jsonl")
      const before = readFileSync(target, "utf8")

      // A cloned repository's data dir, whose log of the same session is a link to it.
      const planted = yield* tempDir
      yield* (yield* JsonlEventStore.make({ dataDir: planted })).appendAll([event("s0", 1, "session.created", { cwd: "/work/repo", client: "test" })])
      symlinkSync(target, join(planted, "sessions", "s1.jsonl"))
      const store = yield* JsonlEventStore.make({ dataDir: planted })

      const read = yield* Stream.runCollect(store.read("s1")).pipe(Effect.flip)
      expect(read._tag).toBe("EventStoreFailure")
      expect([read.reason, read.detail]).toEqual(["corrupt", "a link, not a log"])

      const { damaged, sessions } = yield* store.listing
      expect(sessions.map((s) => s.sessionId)).toEqual(["s0"])
      expect(damaged.map((d) => [d.sessionId, d.failure.detail])).toEqual([["s1", "a link, not a log"]])

      const appended = yield* store.append(event("s1", 3, "user.message", { content: "written through the link" })).pipe(Effect.flip)
      expect([appended.reason, appended.detail]).toEqual(["corrupt", "a link, not a log"])
      expect(readFileSync(target, "utf8")).toBe(before)
    }).pipe(Effect.provide(NodeContext.layer)))
})
