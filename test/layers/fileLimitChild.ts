/**
 * One store under a file-size limit, for fileLimit.integration.test.ts:
 * `fileLimitChild.ts <jsonl|sqlite> <data dir> <what>`. The parent runs it under `ulimit -S -f`
 * with SIGXFSZ ignored, so a write past the limit fails `EFBIG`. It appends a session's first event
 * (well under the limit), then `what`:
 * - `batch`: one `appendAll` whose first event alone (16 MiB; JSONL 4 MiB) is more than SQLite's page cache holds,
 *   so its pages spill to the WAL inside the INSERT (not at the COMMIT) and meet the limit there;
 * - `single`: one `append` of the same event.
 * Prints how the append ended, `{"ok":true}` or `{"tag":…,"reason":…}`, then whether an append of a
 * small event works after it in the same process (the limit still stands).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"

const [kind, dataDir, what] = process.argv.slice(2) as ["jsonl" | "sqlite", string, "batch" | "single"]
const sessionId = "ses_limit"
const at = "2026-01-01T00:00:00.000Z"
const created: AgentEvent.AgentEvent = { id: "evt_1", sessionId, sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "test" } }
const delta = (sequence: number, text: string): AgentEvent.AgentEvent => ({ id: `evt_${sequence}`, sessionId, turnId: "turn_1", sequence, timestamp: at, type: "model.delta", payload: { text } })

const outcome = <A, R>(effect: Effect.Effect<A, { readonly _tag: string; readonly reason?: string }, R>) =>
  effect.pipe(Effect.match({ onFailure: (error) => ({ tag: error._tag, reason: error.reason, detail: "detail" in error ? error.detail : undefined }), onSuccess: () => ({ ok: true }) }))

const layer = kind === "sqlite" ? SqliteEventStore.layer({ filename: `${dataDir}/events.sqlite` }) : JsonlEventStore.layer({ dataDir })

const program = Effect.gen(function*() {
  const store = yield* Effect.map(Layer.build(layer), Context.get(EventStore))
  yield* store.append(created)
  // SQLite: more than its page cache holds (see above); JSONL: under its longest line, over the limit.
  const big = delta(2, "x".repeat((kind === "sqlite" ? 16 : 4) * 1024 * 1024))
  const first = yield* outcome(what === "batch" ? store.appendAll([big, delta(3, "after")]) : store.append(big))
  const after = yield* outcome(store.append(delta(2, "small")))
  process.stdout.write(JSON.stringify({ first, after }) + "\n")
}).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
