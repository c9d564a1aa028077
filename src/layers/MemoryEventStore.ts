/**
 * An event store in memory: for tests, and for embedding when the log need not outlive the process.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as Session from "../domain/Session.js"
import { byRecentActivity, EventStore, sequenceConflict } from "../services/EventStore.js"

type Sessions = HashMap.HashMap<string, Chunk.Chunk<AgentEvent>>

/** Builds a memory store. */
export const make: Effect.Effect<EventStore.Service> = Effect.gen(function*() {
  const sessions = yield* Ref.make<Sessions>(HashMap.empty())

  const append = (event: AgentEvent) =>
    Ref.modify(sessions, (map): [Either.Either<void, EventStoreFailure>, Sessions] => {
      const events = Option.getOrElse(HashMap.get(map, event.sessionId), () => Chunk.empty<AgentEvent>())
      const last = Option.match(Chunk.last(events), { onNone: () => 0, onSome: (e) => e.sequence })
      return event.sequence === last + 1
        ? [Either.void, HashMap.set(map, event.sessionId, Chunk.append(events, event))]
        : [Either.left(sequenceConflict(event, last)), map]
    }).pipe(Effect.flatMap((result) => result))

  const read: EventStore.Service["read"] = (sessionId, options) =>
    Stream.unwrap(Ref.get(sessions).pipe(Effect.map((map) => {
      const events = Option.getOrElse(HashMap.get(map, sessionId), () => Chunk.empty<AgentEvent>())
      const from = options?.fromSequence ?? 1
      return Stream.fromChunk(from <= 1 ? events : Chunk.filter(events, (e) => e.sequence >= from))
    })))

  const list = Ref.get(sessions).pipe(Effect.map((map) =>
    Array.from(HashMap.values(map)).flatMap((events) => {
      const summary = Chunk.reduce(events, undefined as Session.SessionSummary | undefined, Session.summarize)
      return summary === undefined ? [] : [summary]
    }).sort(byRecentActivity)
  ))

  return EventStore.of({ append, read, list })
})

/** A fresh, empty memory store per layer build. */
export const layer: Layer.Layer<EventStore> = Layer.effect(EventStore, make)
