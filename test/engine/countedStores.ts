/**
 * The four stores, each fresh, for tests of several engines on one store — and a wrapper counting
 * what a store's reads hand over, for tests that count events read rather than time them.
 */
import type * as NodeContext from "@effect/platform-node/NodeContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { tempDir } from "../helpers.js"
import { freshSchemaUrl } from "../postgres.js"

/** Each store by name, made fresh (PostgreSQL: a schema of its own, named after `label`). */
export const storesOf = (label: string): ReadonlyArray<[string, Effect.Effect<EventStore.Service, unknown, Scope.Scope | NodeContext.NodeContext>]> => [
  ["memory", MemoryEventStore.make],
  ["jsonl", Effect.flatMap(tempDir, (dataDir) => JsonlEventStore.make({ dataDir }))],
  ["sqlite", Effect.flatMap(tempDir, (dir) => Effect.map(Layer.build(SqliteEventStore.layer({ filename: `${dir}/db/events.sqlite` })), Context.get(EventStore)))],
  ["postgres", Effect.flatMap(freshSchemaUrl(label), (url) => Effect.map(Layer.build(PostgresEventStore.layer({ url: Redacted.make(url) })), Context.get(EventStore)))]
]

/** The store, counting its reads (`reads`), the events they hand over (`read`) and the last sequences asked for (`tails`). */
export const counting = (store: EventStore.Service) => {
  let read = 0
  let reads = 0
  let tails = 0
  const lastSequence = store.lastSequence
  const service: EventStore.Service = {
    ...store,
    read: (sessionId, options) => {
      reads++
      return Stream.mapChunks(store.read(sessionId, options), (chunk) => ((read += chunk.length), chunk))
    },
    ...(lastSequence === undefined ? {} : {
      lastSequence: (sessionId: string) => Effect.suspend(() => (tails++, lastSequence(sessionId)))
    })
  }
  return { service, read: () => read, reads: () => reads, tails: () => tails, reset: () => void (read = reads = tails = 0) }
}
