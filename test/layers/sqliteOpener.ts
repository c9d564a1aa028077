/**
 * A process that opens the SQLite store at `argv[2]` (creating and migrating it) and takes and
 * releases one session's writer lease, for storeProcesses.integration.test.ts; prints `opened` or
 * the failure.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"

const program = Effect.flatMap(EventStore, (store) => Effect.scoped(Effect.either(store.acquireWriter("opened"))))

Effect.runPromise(program.pipe(Effect.provide(SqliteEventStore.layer({ filename: process.argv[2]! })), Effect.provide(NodeContext.layer))).then(
  () => {
    process.stdout.write("opened\n")
    process.exit(0)
  },
  (error) => {
    process.stdout.write(`${String(error)}\n`)
    process.exit(1)
  }
)
