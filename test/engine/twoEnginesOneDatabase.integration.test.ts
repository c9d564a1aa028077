/**
 * Two engines on one database start a turn on one session at the same instant (timing4): each has a
 * store of its own on the same SQLite file, or the same PostgreSQL schema, as two processes would
 * (here in one process: the lease's holder is alive either way). Both turns are started together:
 * exactly one runs (asking for approval, answered), the other fails `SessionBusy`, nothing
 * interleaves, and the loser's turn runs once the winner's engine has closed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { collect, engineLayer, expectWellFormedLog, testTools } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

const asking = { chunks: ["Saving."], toolCalls: [{ tool: "save", args: { file: "a" } }] }
const engineOn = (database: string, kind: "sqlite" | "postgres") =>
  engineLayer(kind === "sqlite" ? SqliteEventStore.layer({ filename: database }) : PostgresEventStore.layer({ url: Redacted.make(database) }), {
    responses: [{ chunks: ["first"] }, asking, { chunks: ["Saved."] }, asking, { chunks: ["Saved."] }]
  }).pipe(
    Layer.provideMerge(testTools({ save: { risk: "write", run: () => Effect.succeed({ result: "saved" }) } })),
    Layer.provideMerge(PermissionPolicy.layer()),
    Layer.provideMerge(NodeContext.layer)
  )

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`two engines on one ${kind} database`, () => {
    it.scopedLive("a turn started on both at once: one runs, the other is refused SessionBusy, then runs", () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "effect-agent-two-engines-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const database = kind === "sqlite" ? join(dir, "events.sqlite") : yield* freshSchemaUrl("two_engines")
        // Each engine in a scope of its own, as each process is: closing it lets its sessions go.
        const scopes = [yield* Scope.make(), yield* Scope.make()] as const
        yield* Effect.addFinalizer(() => Effect.all(scopes.map((scope) => Scope.close(scope, Exit.void))))
        const [a, b] = [yield* Layer.buildWithScope(engineOn(database, kind), scopes[0]), yield* Layer.buildWithScope(engineOn(database, kind), scopes[1])]
        const on = <X, E>(context: typeof a, f: (engine: SessionEngine.Service) => Effect.Effect<X, E>) => Effect.provide(Effect.flatMap(SessionEngine, f), context)
        const sessionId = yield* on(a, (engine) => Effect.map(engine.createSession({ cwd: "/work", client: "test" }), (s) => s.sessionId))
        yield* on(a, (engine) => collect(engine.runTurn({ sessionId, userMessage: "hello" })))
        const before = yield* on(a, (engine) => collect(engine.replaySession({ sessionId })))

        // Each turn answers its own question. An engine holds a session it drove until its scope
        // closes, so the loser is refused however the two interleave.
        const turn = (context: typeof a, message: string) =>
          on(context, (engine) =>
            engine.runTurn({ sessionId, userMessage: message }).pipe(
              Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask"
                ? Effect.fork(engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow" }))
                : Effect.void),
              collect,
              Effect.either
            ))
        const [fromA, fromB] = yield* Effect.all([turn(a, "from a"), turn(b, "from b")], { concurrency: 2 })
        const outcomes = [fromA, fromB]
        expect(outcomes.filter(Either.isRight)).toHaveLength(1)
        const lost = outcomes.find(Either.isLeft)!
        expect(lost.left._tag).toBe("SessionBusy")
        const [winner, loser] = Either.isRight(fromA) ? [a, b] : [b, a]
        const winnerMessage = winner === a ? "from a" : "from b"
        const log = yield* on(winner, (engine) => collect(engine.replaySession({ sessionId })))
        expectWellFormedLog(log)
        expect(log.slice(0, before.length)).toEqual(before)
        expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["hello", winnerMessage])

        // The winner's process ends: an engine holds a session it drove until its scope closes.
        yield* Scope.close(scopes[winner === a ? 0 : 1], Exit.void)
        const again = yield* turn(loser, winner === a ? "from b" : "from a")
        expect(Either.isRight(again) && again.right.at(-1)?.payload).toEqual({ stopReason: "final" })
        const after = yield* on(loser, (engine) => collect(engine.replaySession({ sessionId })))
        expectWellFormedLog(after)
        expect(after.slice(0, log.length)).toEqual(log)
      }))
  })
}
