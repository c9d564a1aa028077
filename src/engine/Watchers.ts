/**
 * Watching sessions (CONTRACT.md §8 "Watching"): the stored events of a session from a sequence,
 * then its live ones across turns, with no gap and no duplicate, until the watcher is interrupted.
 *
 * Live events reach watchers through one bounded, sliding queue per watcher, fed synchronously by
 * the engine right after each event (or batch) is stored. A watcher that falls further behind than
 * the queue holds (a stalled SSE client) loses the oldest queued events, never the newest: the next
 * event it takes then skips sequences, and the gap is read from the store (see {@link watch}) — so
 * a slow watcher costs bounded memory and still sees every event once. A watcher subscribes BEFORE it reads the
 * store: an event stored before the subscription is in the store read, one stored after it is in
 * the queue, one in between may be in both — and is dropped from the queue by its sequence.
 *
 * The hub is keyed by session id, not held by a live session: a session reloaded (after a lock is
 * taken, or an eviction) keeps its watchers.
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"

/** The engine's watcher hub. */
export interface Watchers {
  /** Hands stored events of one session, in sequence order, to its watchers. Synchronous and cheap when none watch. */
  readonly publish: (sessionId: string, events: ReadonlyArray<AgentEvent>) => void
  /** A queue receiving the session's live events from now on, removed when the scope closes. */
  readonly subscribe: (sessionId: string) => Effect.Effect<Queue.Dequeue<AgentEvent>, never, Scope.Scope>
}

/** How many live events a watcher's queue holds before the oldest make way (read again from the store). */
export const defaultCapacity = 4096

/** A new, empty hub. */
export const make = (capacity: number = defaultCapacity): Watchers => {
  const bySession = new Map<string, Set<Queue.Queue<AgentEvent>>>()
  return {
    publish: (sessionId, events) => {
      const queues = bySession.get(sessionId)
      if (queues === undefined) return
      for (const queue of queues) {
        for (const event of events) {
          // `unsafeOffer` never slides: on a full queue, the sliding offer (synchronous) drops the oldest.
          if (!queue.unsafeOffer(event)) Effect.runSync(Queue.offer(queue, event))
        }
      }
    },
    subscribe: (sessionId) =>
      Effect.acquireRelease(
        Effect.flatMap(Queue.sliding<AgentEvent>(capacity), (queue) =>
          Effect.sync(() => {
            const queues = bySession.get(sessionId) ?? new Set()
            queues.add(queue)
            bySession.set(sessionId, queues)
            return queue
          })),
        (queue) =>
          Effect.suspend(() => {
            const queues = bySession.get(sessionId)
            queues?.delete(queue)
            if (queues?.size === 0) bySession.delete(sessionId)
            return Queue.shutdown(queue)
          })
      )
  }
}

/** How a watcher reads the store beyond its first read: to fill a gap, and to follow another process's writes. */
export interface Follow<E> {
  /** The stored events from a sequence on. */
  readonly read: (fromSequence: number) => Stream.Stream<AgentEvent, E>
  /** Ticks at which the store is read for events no live queue carries. */
  readonly ticks: Stream.Stream<unknown>
  /** Whether to read the store at a tick: only when this engine does not write the session itself. */
  readonly polling: () => boolean
}

/**
 * The watch stream: `stored` (the store's events from the start sequence) then the live queue,
 * each live event kept only when its sequence is past the last one emitted. The store is read at
 * each tick while another process may write the session, and an event that skips sequences
 * (written after another process's, or after the ones a full queue let go) first brings the ones
 * in between from the store: still no gap and no duplicate.
 */
export const watch = <E>(
  live: Queue.Dequeue<AgentEvent>,
  stored: Stream.Stream<AgentEvent, E>,
  fromSequence: number,
  follow: Follow<E>
): Stream.Stream<AgentEvent, E> =>
  Stream.suspend(() => {
    let last = fromSequence - 1
    const fresh = (event: AgentEvent) => {
      if (event.sequence !== last + 1) return false
      last = event.sequence
      return true
    }
    const after = (event: AgentEvent) => {
      if (event.sequence <= last) return false
      last = event.sequence
      return true
    }
    /** One event of the live phase: dropped when seen, else after whatever the store has before it. */
    const deliver = (event: AgentEvent): Stream.Stream<AgentEvent, E> =>
      Stream.suspend(() => {
        if (event.sequence <= last) return Stream.empty
        if (event.sequence === last + 1) return fresh(event) ? Stream.make(event) : Stream.empty
        return Stream.concat(
          follow.read(last + 1).pipe(Stream.takeWhile((e) => e.sequence < event.sequence), Stream.filter(fresh)),
          Stream.suspend(() => (fresh(event) ? Stream.make(event) : Stream.empty))
        )
      })
    const polled = follow.ticks.pipe(
      Stream.flatMap(() => (follow.polling() ? Stream.suspend(() => follow.read(last + 1)) : Stream.empty))
    )
    return Stream.concat(
      Stream.filter(stored, after),
      Stream.merge(Stream.fromQueue(live), polled).pipe(Stream.flatMap(deliver))
    )
  })
