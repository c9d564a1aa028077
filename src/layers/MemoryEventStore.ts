/**
 * An event store in memory: for tests, and for embedding when the log need not outlive the process.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { SessionBusy } from "../domain/Errors.js"
import * as Session from "../domain/Session.js"
import type { BlobStore } from "../services/BlobStore.js"
import { batchConflict, byRecentActivity, EventStore, sequenceConflict } from "../services/EventStore.js"
import * as MemoryBlobStore from "./blobs/MemoryBlobStore.js"
import * as PlainRelease from "./PlainRelease.js"

/** Builds a memory store. */
export const make: Effect.Effect<EventStore.Service> = Effect.sync(() => {
  // Appends are synchronous, so checking the sequence and pushing the event happen as one step.
  const sessions = new Map<string, Array<AgentEvent>>()

  const append = (event: AgentEvent) =>
    Effect.suspend(() => {
      const events = sessions.get(event.sessionId) ?? []
      const last = events.at(-1)?.sequence ?? 0
      if (event.sequence !== last + 1) return Effect.fail(sequenceConflict(event, last))
      events.push(event)
      sessions.set(event.sessionId, events)
      return Effect.void
    })

  const appendAll = (batch: ReadonlyArray<AgentEvent>) =>
    Effect.suspend(() => {
      if (batch.length === 0) return Effect.void
      const conflict = batchConflict(batch)
      if (conflict !== undefined) return Effect.fail(conflict)
      const first = batch[0]!
      const events = sessions.get(first.sessionId) ?? []
      const last = events.at(-1)?.sequence ?? 0
      if (first.sequence !== last + 1) return Effect.fail(sequenceConflict(first, last))
      for (const event of batch) events.push(event)
      sessions.set(first.sessionId, events)
      return Effect.void
    })

  const read: EventStore.Service["read"] = (sessionId, options) =>
    Stream.suspend(() => {
      const events = sessions.get(sessionId) ?? []
      const from = options?.fromSequence ?? 1
      // A snapshot: events appended while the stream is read are not part of it.
      return Stream.fromIterable(from <= 1 ? events.slice() : events.slice(Math.max(0, from - 1)))
    })

  const list = Effect.sync(() =>
    Array.from(sessions.values()).flatMap((events) => {
      const summary = events.reduce(Session.summarize, undefined as Session.SessionSummary | undefined)
      return summary === undefined ? [] : [summary]
    }).sort(byRecentActivity)
  )

  const listing = Effect.map(list, (sessions) => ({ sessions, damaged: [] }))

  // The store lives in one process: its writer lock is a set of held sessions, one holder (engine) each.
  const writers = new Set<string>()
  // Released by a plain finalizer of the scope (`PlainRelease`): `Effect.acquireRelease` would keep the
  // acquiring fiber's refs (its context, its span) for as long as the lock is held — a session's life
  // in the engine's cache — to restore them around a release that needs none of them.
  const acquireWriter = (sessionId: string) =>
    PlainRelease.acquireRelease(
      Effect.suspend(() => {
        if (writers.has(sessionId)) return Effect.fail(new SessionBusy({ sessionId, holder: "another engine of this process" }))
        writers.add(sessionId)
        return Effect.void
      }),
      () => Effect.sync(() => void writers.delete(sessionId))
    )

  return EventStore.of({ append, appendAll, read, list, listing, acquireWriter })
})

/** A fresh, empty memory store per layer build, with its blob area. */
export const layer: Layer.Layer<EventStore | BlobStore> = Layer.merge(Layer.effect(EventStore, make), MemoryBlobStore.layer)
