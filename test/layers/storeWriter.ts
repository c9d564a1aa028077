/**
 * A separate process on one SQL store, for the two-process tests (storeProcesses.integration.test.ts):
 * `storeWriter.ts <sqlite|postgres> <session id> <tag> <count|lock>`, the database in
 * `EFFECT_AGENT_TEST_DB` (a file, or a PostgreSQL URL). It prints `ready` once the store is open and
 * waits for a line on stdin, so that both processes start together; then
 * - with a count: appends `count` events, each at the next free sequence — retrying after a
 *   sequence_conflict — and prints `{"appended":n,"conflicts":n}`;
 * - with `lock`: takes the session's writer lease and prints `{"held":true}` (holding it until stdin
 *   closes) or `{"held":false,"busy":"<holder>"}`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { EventStoreFailure } from "../../src/domain/Errors.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"

const [kind, sessionId, tag, count] = process.argv.slice(2) as ["sqlite" | "postgres", string, string, string]
const database = process.env.EFFECT_AGENT_TEST_DB!

const nextLine = Effect.async<void>((resume) => {
  process.stdin.once("data", () => resume(Effect.void))
})

const program = Effect.gen(function*() {
  const store = yield* EventStore
  process.stdout.write("ready\n")
  yield* nextLine
  if (count === "lock") {
    const held = yield* Effect.either(store.acquireWriter(sessionId))
    if (held._tag === "Left" && held.left._tag === "EventStoreFailure") return yield* Effect.fail(held.left)
    process.stdout.write(JSON.stringify(held._tag === "Right" ? { held: true } : { held: false, busy: held.left.message }) + "\n")
    return yield* Effect.async<void>((resume) => {
      process.stdin.once("end", () => resume(Effect.void))
      process.stdin.resume()
    })
  }
  let appended = 0
  let conflicts = 0
  while (appended < Number(count)) {
    const last = yield* Stream.runFold(store.read(sessionId), 0, (_, e) => e.sequence)
    const result = yield* Effect.either(store.append({
      id: `${tag}-${appended}`,
      sessionId,
      turnId: "t",
      sequence: last + 1,
      timestamp: "2026-01-01T00:00:00.000Z",
      type: "model.delta",
      payload: { text: tag }
    }))
    if (result._tag === "Right") appended++
    else if (result.left.reason === "sequence_conflict") conflicts++
    else return yield* Effect.fail(result.left)
  }
  process.stdout.write(JSON.stringify({ appended, conflicts }) + "\n")
}).pipe(Effect.scoped)

const layer: Layer.Layer<EventStore, EventStoreFailure, NodeContext.NodeContext> = kind === "sqlite"
  ? SqliteEventStore.layer({ filename: database })
  : PostgresEventStore.layer({ url: Redacted.make(database) })

Effect.runPromise(program.pipe(Effect.provide(layer), Effect.provide(NodeContext.layer))).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(String(error) + "\n")
    process.exit(1)
  }
)
