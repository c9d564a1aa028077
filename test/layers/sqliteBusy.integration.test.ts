/**
 * mend56 (review56 F2): another connection holding SQLite's write lock (another process's
 * transaction, a checkpoint) made better-sqlite3 wait for it synchronously — its default busy
 * timeout, 5 s, on the main thread: every fiber, timer and request of the process stalled, and the
 * append then failed `unavailable` (SQLITE_BUSY). Now SQLite waits a few milliseconds at most and
 * the store retries on the Effect scheduler: the event loop keeps turning while the lock is held,
 * and the operation succeeds once it is released. Failed on main: the loop did not turn until the
 * append had failed SQLITE_BUSY.
 *
 * stores45: a read-only open (`readOnly: true`: `sessions`, `replay`, `pending`, `watch`) still had
 * better-sqlite3's 5 s wait on its first read, so a writer holding the database locked stalled the
 * loop as long, and the open then read a copy of the file (taken under the writer's lock) instead of
 * waiting. Now it waits as every operation does. Failed on main: the open had finished (from a copy,
 * without the writer's event) before the loop turned five times.
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
import * as LogFormat from "../../src/domain/LogFormat.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, tempDir } from "../helpers.js"

const at = "2026-01-01T00:00:00.000Z"
const created: AgentEvent = { id: "e1", sessionId: "s", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }

/**
 * Runs `operation` while another connection holds the database's write lock (`lock` takes it):
 * once the event loop has turned `ticks` times with the operation started, the operation must still
 * be waiting (not failed); then the lock is released (`COMMIT`) and the operation's result returned.
 */
const whileLocked = <A, E, R>(
  filename: string,
  operation: Effect.Effect<A, E, R>,
  ticks = 5,
  lock: (other: Database.Database) => void = (other) => other.exec("BEGIN IMMEDIATE")
) =>
  Effect.gen(function*() {
    const other = new Database(filename)
    lock(other)
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

describe("SQLite store opened read-only, another connection holding the database locked", () => {
  it.live("the open waits without blocking the event loop and reads the database in place once it is released", () =>
    Effect.gen(function*() {
      const filename = join(yield* tempDir, "events.sqlite")
      yield* Effect.scoped(Layer.build(SqliteEventStore.layer({ filename })))
      // A rollback-journal database (an older tool's, or set so by hand) whose writer holds it
      // exclusively: readers are refused busy (in WAL mode they never are, bar a checkpoint's moment).
      const journal = new Database(filename)
      journal.pragma("journal_mode = DELETE")
      journal.close()
      const store = yield* whileLocked(
        filename,
        Effect.map(Layer.build(SqliteEventStore.layer({ filename, readOnly: true })), Context.get(EventStore)),
        5,
        (other) => {
          other.exec("BEGIN EXCLUSIVE")
          other.prepare("INSERT INTO events (session_id, sequence, type, timestamp, format_version, body) VALUES (?, ?, ?, ?, ?, ?)")
            .run("s", 1, created.type, created.timestamp, LogFormat.currentVersion, JSON.stringify(created))
        }
      )
      // Read in place, after the writer's commit: a copy taken while it held the lock lacks its event.
      expect((yield* collect(store.read("s"))).map((e) => e.sequence)).toEqual([1])
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
})
