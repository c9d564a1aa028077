/**
 * A fork on the real stores (a JSONL folder, a SQLite file, embedded PostgreSQL): the fork reads the
 * source while it appends the copy in batches, each store must hand both out in turn, and the log it
 * writes is the one the first implementation wrote (forkReference.ts) — for JSONL, the fork's file is
 * byte for byte the file that implementation's appends made (session.created alone, the rest as one
 * batch) in a folder of its own.
 */
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Fork from "../../src/engine/Fork.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"
import { referenceForkLog, referenceForkPoint } from "./forkReference.js"

type StoreLayer = Layer.Layer<EventStore, unknown, never>

const withDir = Effect.acquireRelease(
  Effect.promise(() => NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-fork-store-"))),
  (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
)

const jsonl = (dataDir: string): StoreLayer => JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer

const stores: ReadonlyArray<readonly [string, (dir: string) => Effect.Effect<StoreLayer>]> = [
  ["JSONL", (dir) => Effect.succeed(jsonl(NodePath.join(dir, "data")))],
  ["SQLite", (dir) => Effect.succeed(SqliteEventStore.layer({ filename: NodePath.join(dir, "store.db") }).pipe(Layer.provide(NodeContext.layer)) as StoreLayer)],
  ["PostgreSQL", () => Effect.map(freshSchemaUrl("fork"), (url) => PostgresEventStore.layer({ url: Redacted.make(url) }) as StoreLayer)]
]

/** A first turn of more events than three of the fork's batches, then two short turns. */
const longAnswer = Array.from({ length: Fork.batchSize * 3 + 10 }, (_, i) => `w${i} `)
const responses = [{ chunks: longAnswer }, { chunks: ["two"] }, { chunks: ["three"] }]

const lines = (log: ReadonlyArray<AgentEvent>) => log.map((event) => JSON.stringify(event))

for (const [name, makeStore] of stores) {
  describe(`fork on ${name}`, () => {
    it.scoped("the log written is the first implementation's, at the last turn's end and at the first's; the fork runs on", () =>
      Effect.gen(function*() {
        const dir = yield* withDir
        const store = yield* makeStore(dir)
        yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const replay = (sessionId: string) => collect(engine.replaySession({ sessionId }))
          const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
          for (const message of ["long", "two", "three"]) yield* collect(engine.runTurn({ sessionId, userMessage: message }))
          const source = yield* replay(sessionId)
          expect(source.length).toBeGreaterThan(Fork.batchSize * 3)
          const firstEnd = source.find((e) => e.type === "turn.completed")!.sequence
          for (const atSequence of [undefined, firstEnd]) {
            const point = referenceForkPoint(source, atSequence)
            if (point._tag === "Left") throw new Error(`not a fork point: ${atSequence}`)
            const fork = yield* engine.forkSession({ sessionId, ...(atSequence === undefined ? {} : { atSequence }) })
            const forked = yield* replay(fork.sessionId)
            const first = Number(forked[0]!.id.slice("evt_".length))
            const reference = referenceForkLog(source, point.right, fork.sessionId, Array.from({ length: point.right + 1 }, (_, i) => `evt_${first + i}`), forked[0]!.timestamp)
            expect(lines(forked)).toEqual(lines(reference))
            if (name === "JSONL") {
              // The same events appended as the first implementation did, in a folder of their own: the same file.
              const other = NodePath.join(dir, `reference-${fork.sessionId}`)
              yield* Effect.flatMap(EventStore, (events) => Effect.zipRight(events.append(reference[0]!), events.appendAll(reference.slice(1)))).pipe(
                Effect.provide(jsonl(other))
              )
              const file = (root: string) => NodeFs.readFile(NodePath.join(root, "sessions", `${fork.sessionId}.jsonl`))
              const [ours, theirs] = yield* Effect.promise(() => Promise.all([file(NodePath.join(dir, "data")), file(other)]))
              expect(ours.equals(theirs)).toBe(true)
            }
          }
          // The last fork goes on as a session of its own.
          const forks = (yield* engine.listSessions).filter((s) => s.sessionId !== sessionId)
          expect(forks.length).toBe(2)
          const next = yield* collect(engine.runTurn({ sessionId: forks[0]!.sessionId, userMessage: "on" }))
          expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
          expectWellFormedLog(yield* replay(forks[0]!.sessionId))
        }).pipe(Effect.provide(engineLayer(store, { responses })))
      }))
  })
}
