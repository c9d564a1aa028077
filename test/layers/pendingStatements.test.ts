/**
 * `pending`'s listing on the SQL stores (`awaitingListing`, shared by SQLite and PostgreSQL through
 * sql/EventTables.ts): with no call waiting it sends one statement, the calls' — no session's row or
 * usage is read (perf63sql; main sent three, whatever the table held). With calls waiting, the
 * sessions they name are read and listed as the whole listing lists them. Counted as `@effect/sql`'s
 * `sql.execute` spans, one a statement.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import { join } from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sessionId: string, sequence: number, type: string, payload: object, turnId: string | undefined = "turn_1") =>
  ({ id: `${sessionId}-${sequence}`, sessionId, sequence, timestamp: at(sequence), type, payload, ...(turnId === undefined ? {} : { turnId }) }) as AgentEvent

/** A session with a finished turn; with `waiting`, its turn stays open on a call that asks. */
const session = (id: string, waiting: boolean): ReadonlyArray<AgentEvent> => [
  event(id, 1, "session.created", { cwd: `/work/${id}`, client: "test" }, undefined),
  event(id, 2, "turn.started", { promptPreview: "p" }),
  waiting
    ? event(id, 3, "permission.resolved", { toolCallId: "call_1", decision: "ask", actor: "policy" })
    : event(id, 3, "turn.completed", { stopReason: "final" })
]

/** The statements `effect` sends, by their `sql.execute` spans. */
const statementsOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const base = yield* Effect.tracer
    let statements = 0
    const tracer = Tracer.make({
      span: (...args) => {
        if (args[0] === "sql.execute") statements++
        return base.span(...args)
      },
      context: base.context
    })
    const result = yield* Effect.withTracer(effect, tracer)
    return { result, statements }
  })

describe("pending on a SQL store", () => {
  it.scoped("sends one statement when no call waits, and lists the waiting sessions as the listing does", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = Context.get(yield* Layer.build(SqliteEventStore.layer({ filename: join(dir, "events.sqlite") })), EventStore)
      yield* store.appendAll(session("done_1", false))
      yield* store.appendAll(session("done_2", false))

      const none = yield* statementsOf(store.awaitingListing!)
      expect(none.result.sessions).toEqual([])
      expect(none.statements).toBe(1)

      yield* store.appendAll(session("waiting", true))
      const some = yield* statementsOf(store.awaitingListing!)
      const listed = (yield* store.list).filter((s) => s.awaitingApproval !== undefined)
      expect(some.result.sessions.map((s) => [s.sessionId, s.awaitingApproval])).toEqual([["waiting", ["call_1"]]])
      expect(some.result.sessions).toEqual(listed)
      expect(some.statements).toBe(3)
    }).pipe(Effect.provide(NodeContext.layer)))
})
