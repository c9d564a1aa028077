/**
 * Whether a held writer lock keeps the fiber that took it alive: its context (a service provided
 * around the acquire) and its span. Each store's `acquireWriter` is run in a scope that stays open,
 * from a fiber with a service and a span of its own; once that fiber is done and a full GC has run,
 * a `WeakRef` to each must be empty (the SQL stores' lease: its renewer and its `DELETE` too). Deterministic (no timing); exits non-zero when one is kept:
 *
 *   node --expose-gc --import tsx bench/heldRefs.ts
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { EventStore, JsonlEventStore, MemoryEventStore } from "../src/index.js"
import * as SqliteEventStore from "../src/layers/SqliteEventStore.js"
import * as StartedSessions from "../src/layers/StartedSessions.js"

if (global.gc === undefined) throw new Error("run with node --expose-gc")
const gc = global.gc

class Acquirer extends Context.Tag("bench/heldRefs/Acquirer")<Acquirer, { readonly payload: Array<number> }>() {}

/** Takes the lock of `sessionId` into `held` from a fiber with a service and a span; answers weak references to both. */
const takeFromAFiber = (store: EventStore.EventStore.Service, sessionId: string, held: Scope.Scope) =>
  Effect.gen(function*() {
    const service = { payload: [1, 2, 3] }
    const span = yield* Effect.gen(function*() {
      yield* Scope.extend(store.acquireWriter(sessionId), held)
      return yield* Effect.currentSpan
    }).pipe(Effect.withSpan("acquirer"), Effect.provideService(Acquirer, service))
    return { service: new WeakRef(service), span: new WeakRef(span) }
  })

const sessionId = "s-heldrefs-0001"

/** Whether the lock of a session (created first) held from a finished fiber still keeps its service and span. */
const kept = async (name: string, layer: Layer.Layer<EventStore.EventStore, unknown>) => {
  const layerScope = Effect.runSync(Scope.make())
  const held = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(Effect.map(Layer.buildWithScope(layer, layerScope), Context.get(EventStore.EventStore)))
  await Effect.runPromise(store.append({ id: "evt_1", sessionId, sequence: 1, timestamp: "2026-01-01T00:00:00.000Z", type: "session.created", payload: { cwd: "/work", client: "test" } }))
  const refs = await Effect.runPromise(Effect.flatten(Effect.flatMap(Effect.forkDaemon(takeFromAFiber(store, sessionId, held)), (fiber) => fiber.await)))
  // The acquiring fiber has ended: only what the held lock keeps can keep its service and span.
  await new Promise((resolve) => setImmediate(resolve))
  gc()
  gc()
  const result = { store: name, service: refs.service.deref() !== undefined, span: refs.span.deref() !== undefined }
  await Effect.runPromise(Effect.zipRight(Scope.close(held, Exit.void), Scope.close(layerScope, Exit.void)))
  return result
}

const root = mkdtempSync(join(tmpdir(), "heldrefs-"))
const jsonl = (dir: string) => JsonlEventStore.layer({ dataDir: join(root, dir) }).pipe(Layer.provide(NodeContext.layer))
const guarded = (store: Layer.Layer<EventStore.EventStore>, dir: string) =>
  store.pipe(StartedSessions.layer({ dir: join(root, dir) }), Layer.provide(NodeContext.layer))
try {
  const results = [
    await kept("memory", MemoryEventStore.layer),
    await kept("jsonl", jsonl("jsonl")),
    await kept("memory + StartedSessions", guarded(MemoryEventStore.layer, "config-memory")),
    await kept("jsonl + StartedSessions", guarded(jsonl("jsonl-guarded"), "config-jsonl")),
    // The SQL stores share the lease (writer/Lease.ts): SQLite stands for both.
    await kept("sqlite", SqliteEventStore.layer({ filename: join(root, "heldrefs.sqlite") }).pipe(Layer.provide(NodeContext.layer)))
  ]
  for (const r of results) console.log(`${r.store}: acquirer's service ${r.service ? "KEPT" : "freed"}, span ${r.span ? "KEPT" : "freed"}`)
  if (results.some((r) => r.service || r.span)) process.exitCode = 1
} finally {
  rmSync(root, { recursive: true, force: true })
}
