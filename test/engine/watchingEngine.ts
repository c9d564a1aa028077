/**
 * An engine of its own on the JSONL store in a data dir (as another process would have), for the
 * watch tests: it notes its store's reads (the sequence each starts from) and its looks at a log's
 * last sequence (an idle poll only looks).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { engineLayer } from "../helpers.js"

export interface Noted {
  readonly read?: (fromSequence: number) => void
  readonly look?: () => void
}

export const engineOn = (dataDir: string, responses: number, noted: Noted, watchPollInterval: number) => {
  const counting = Layer.effect(
    EventStore,
    Effect.map(EventStore, (store) =>
      EventStore.of({
        ...store,
        read: (sessionId, options) => {
          noted.read?.(options?.fromSequence ?? 1)
          return store.read(sessionId, options)
        },
        lastSequence: (sessionId) => Effect.suspend(() => (noted.look?.(), store.lastSequence!(sessionId)))
      }))
  ).pipe(Layer.provide(JsonlEventStore.layer({ dataDir })))
  return Effect.map(
    Layer.build(engineLayer(counting, { responses: Array.from({ length: responses }, (_, i) => ({ chunks: [`answer ${i}`, "."] })) }, {
      watchPollInterval: `${watchPollInterval} millis`
    })),
    (context) => context.unsafeMap.get(SessionEngine.key) as SessionEngine["Type"]
  )
}
