/**
 * Rows 12–13's data, kept for measuring by hand: the 10,000 sessions `rows/listing.ts` lists,
 * written once into a JSONL data dir and a SQLite database under the folder given (default
 * `/tmp/listing-data`), as the row writes them; PostgreSQL's is `listing-pg.ts`. Then warm the
 * JSONL index with one `sessions`:
 *   node --import tsx bench/listing-data.ts /tmp/listing-data
 *   node dist/cli/bin.js sessions --data-dir /tmp/listing-data/jsonl > /dev/null
 *   node dist/cli/bin.js sessions --store sqlite --data-dir /tmp/listing-data/sqlite
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import { EventStore } from "../src/index.js"
import { SqliteEventStore } from "../src/sqlite.js"
import { config } from "./config.js"
import { sessionEvents, template, writeSession } from "./logs.js"

const root = process.argv[2] ?? "/tmp/listing-data"
const ids = Array.from({ length: config.listSessions }, (_, i) => `sess_list${String(i).padStart(6, "0")}`)
const t = await template(5, { inputTokens: 1_200, outputTokens: 80 })
mkdirSync(join(root, "sqlite"), { recursive: true })
ids.forEach((id, i) => writeSession(t, join(root, "jsonl"), id, 1, i * 1_000))
await Effect.runPromise(
  Effect.flatMap(EventStore.EventStore, (store) => Effect.forEach(ids, (id, i) => store.appendAll([...sessionEvents(t, id, 1, i * 1_000)]), { discard: true })).pipe(
    Effect.provide(SqliteEventStore.layer({ filename: join(root, "sqlite", "effect-agent.sqlite") }).pipe(Layer.provide(NodeContext.layer))),
    Effect.orDie
  )
)
console.log(`${config.listSessions} sessions in ${join(root, "jsonl")} and ${join(root, "sqlite")}`)
