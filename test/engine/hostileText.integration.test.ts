/**
 * Text JSON carries but JavaScript strings handle apart: a surrogate pair split across two deltas,
 * a lone surrogate never completed, NUL, U+2028. Each store keeps a delta as the model sent it, byte
 * for byte, through a reopened store's replay — the session stays readable.
 */
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import type { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

type StoreLayer = Layer.Layer<EventStore, unknown, never>

const withDir = Effect.acquireRelease(
  Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-hostile-text-"))),
  (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
)

/** Each store, made twice on the same place: the second reads what the first wrote. */
const stores: ReadonlyArray<readonly [string, (dir: string) => Effect.Effect<() => StoreLayer>]> = [
  ["JSONL", (dir) => Effect.succeed(() => JsonlEventStore.layer({ dataDir: NodePath.join(dir, "data") }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer)],
  ["SQLite", (dir) => Effect.succeed(() => SqliteEventStore.layer({ filename: NodePath.join(dir, "store.db") }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer)],
  ["PostgreSQL", () => Effect.map(freshSchemaUrl("hostile_text"), (url) => () => PostgresEventStore.layer({ url: Redacted.make(url) }) as StoreLayer)]
]

const deltas = ["smile \ud83d", "\ude00 ok", " lone \ud83d", " and \udc00 low", " nul \u0000 ls \u2028 ps \u2029 end"]

for (const [name, makeStore] of stores) {
  describe(`hostile text on ${name}`, () => {
    it.scoped("every delta is stored and replayed as the model sent it, by the store that wrote it and by one reopened", () =>
      Effect.gen(function*() {
        const dir = yield* withDir
        const store = yield* makeStore(dir)
        const textOf = (log: ReadonlyArray<{ readonly type: string; readonly payload: unknown }>) =>
          log.flatMap((e) => (e.type === "model.delta" ? [(e.payload as { text: string }).text] : []))
        const sessionId = yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hi \ud83d" }))
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
          expect(textOf(events).join("")).toBe(deltas.join(""))
          expect(textOf(yield* collect(engine.replaySession({ sessionId }))).join("")).toBe(deltas.join(""))
          return sessionId
        }).pipe(Effect.provide(engineLayer(store(), { responses: [{ chunks: deltas }] })))
        yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const log = yield* collect(engine.replaySession({ sessionId }))
          expectWellFormedLog(log)
          expect(textOf(log).join("")).toBe(deltas.join(""))
          expect(log.find((e) => e.type === "user.message")!.payload).toMatchObject({ content: "hi \ud83d" })
          // The session goes on.
          const next = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
          expect(next.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        }).pipe(Effect.provide(engineLayer(store(), { responses: [{ chunks: ["ok"] }] })))
      }))
  })
}
