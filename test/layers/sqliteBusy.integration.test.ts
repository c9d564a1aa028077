/**
 * mend56 (review56 F2): another connection holding SQLite's write lock (another process's
 * transaction, a checkpoint) made better-sqlite3 wait for it synchronously — its default busy
 * timeout, 5 s, on the main thread: every fiber, timer and request of the process stalled, and the
 * append then failed `unavailable` (SQLITE_BUSY). Now SQLite waits a few milliseconds at most and
 * the store retries on the Effect scheduler: the event loop keeps turning while the lock is held,
 * and the operation succeeds once it is released. Failed on main: the loop did not turn until the
 * append had failed SQLITE_BUSY.
 */
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, tempDir } from "../helpers.js"

const at = "2026-01-01T00:00:00.000Z"
const created: AgentEvent = { id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }

/**
 * Runs `operation` while another connection holds the database's write lock: once the event loop
 * has turned `ticks` times with the operation started, the operation must still be waiting (not
 * failed); then the lock is released and the operation's result returned.
 */
const whileLocked = <A, E>(filename: string, operation: Effect.Effect<A, E>, ticks = 5) =>
  Effect.gen(function*() {
    const other = new Database(filename)
    other.exec("BEGIN IMMEDIATE")
    const turned = yield* Deferred.make<void>()
    let count = 0
    const timer = setInterval(() => {
      if (++count >= ticks) Deferred.unsafeDone(turned, Exit.void)
    }, 1)
    try {
      const fiber = yield* Effect.fork(operation)
      yield* Deferred.await(turned)
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      other.exec("COMMIT")
      return yield* Fiber.join(fiber)
    } finally {
      clearInterval(timer)
      other.close()
    }
  })

describe("SQLite store, another connection holding the write lock", () => {
  it.live("an append and taking a writer wait without blocking the event loop, and succeed once the lock is released", () =>
    Effect.gen(function*() {
      const filename = join(yield* tempDir, "events.sqlite")
      const context = yield* Layer.build(SqliteEventStore.layer({ filename }))
      const store = Context.get(context, EventStore)
      yield* whileLocked(filename, store.append(created))
      yield* whileLocked(filename, Effect.scoped(store.acquireWriter("s")))
      expect((yield* collect(store.read("s"))).map((e) => e.sequence)).toEqual([1])
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
})
