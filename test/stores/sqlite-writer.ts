/**
 * A separate process appending to one SQLite session, for the two-process conflict test:
 * `sqlite-writer.ts <db file> <session id> <tag> <count>`. It waits for a line on stdin (so both
 * processes start together), appends `count` events, each at the next free sequence — retrying
 * after a sequence_conflict — and prints `{"appended":n,"conflicts":n}`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"

const [filename, sessionId, tag, count] = process.argv.slice(2) as [string, string, string, string]

const program = Effect.gen(function*() {
  const store = yield* EventStore
  process.stdout.write("ready\n")
  yield* Effect.async<void>((resume) => {
    process.stdin.once("data", () => resume(Effect.void))
  })
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
})

Effect.runPromise(program.pipe(Effect.provide(SqliteEventStore.layer({ filename })), Effect.provide(NodeContext.layer))).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(String(error) + "\n")
    process.exit(1)
  }
)
