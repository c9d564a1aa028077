/**
 * Watching sessions (CONTRACT.md §8 "Watching"): the stored events of a session from a sequence,
 * then its live ones across turns, with no gap and no duplicate, until the watcher is interrupted.
 *
 * Live events reach watchers through one feed per watched session: the engine appends each stored
 * batch to it once (synchronously, right after the batch is stored), whatever the number of
 * watchers, and wakes the watchers waiting for it. Each watcher keeps its own position in the feed
 * and takes everything past it at once — a watcher that was busy takes one big chunk, not many
 * small ones. The feed keeps the events some watcher has not taken yet, at most the last
 * `capacity` to 2 × `capacity` of them (none once all have taken them); a watcher that falls
 * further behind (a stalled SSE client) finds the oldest gone: the next chunk it takes then skips
 * sequences, and the gap is read from the store (see {@link watch}) — so a slow watcher costs no
 * memory of its own and still sees every event once. A watcher subscribes BEFORE it reads the
 * store: an event stored before the subscription is in the store read, one stored after it is in
 * the feed, one in between may be in both — and is dropped from the feed by its sequence.
 *
 * The hub is keyed by session id, not held by a live session: a session reloaded (after a lock is
 * taken, or an eviction) keeps its watchers.
 *
 * @since 0.2.0
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"

/** A watcher's place in its session's feed. */
export interface Subscription {
  /**
   * Every event published since the last take, at once (waits while there is none). After a
   * stall longer than the feed keeps, the oldest of them are missing: their sequences are skipped.
   */
  readonly take: Effect.Effect<Chunk.Chunk<AgentEvent>>
}

/** The engine's watcher hub. */
export interface Watchers {
  /** Hands stored events of one session, in sequence order, to its watchers. Synchronous and cheap when none watch. */
  readonly publish: (sessionId: string, events: ReadonlyArray<AgentEvent>) => void
  /** A place in the session's feed, from now on, given up when the scope closes. */
  readonly subscribe: (sessionId: string) => Effect.Effect<Subscription, never, Scope.Scope>
  /** How many live events the hub keeps for a session: those its slowest watcher has not taken, bounded. */
  readonly kept: (sessionId: string) => number
}

/** How many live events a session's feed keeps at least before the oldest make way (read again from the store). */
export const defaultCapacity = 4096

/** The recent events of one watched session, and who waits for the next ones. */
interface Feed {
  /** The kept events; `events[0]` is the `dropped`-th event ever published to this feed. */
  events: Array<AgentEvent>
  dropped: number
  watchers: number
  /** How many watchers have not taken every kept event: at 0 the feed lets them all go. */
  behind: number
  /** Wakes the watchers waiting for the next publish. */
  readonly waiting: Set<() => void>
}

/** A new, empty hub. */
export const make = (capacity: number = defaultCapacity): Watchers => {
  const keep = Number.isSafeInteger(capacity) && capacity >= 1 ? capacity : defaultCapacity
  const feeds = new Map<string, Feed>()
  /** Once every watcher has taken every event, the feed holds none (an idle session costs nothing). */
  const caughtUp = (feed: Feed) => {
    if (--feed.behind > 0) return
    feed.dropped += feed.events.length
    feed.events = []
  }
  return {
    publish: (sessionId, events) => {
      const feed = feeds.get(sessionId)
      if (feed === undefined || events.length === 0) return
      for (const event of events) feed.events.push(event)
      // Every watcher now has something to take.
      feed.behind = feed.watchers
      // Trimmed to `keep` once it holds twice that: the copy is paid once per `keep` events.
      if (feed.events.length > 2 * keep) {
        const excess = feed.events.length - keep
        feed.events = feed.events.slice(excess)
        feed.dropped += excess
      }
      if (feed.waiting.size === 0) return
      const waiting = Array.from(feed.waiting)
      feed.waiting.clear()
      for (const wake of waiting) wake()
    },
    kept: (sessionId) => feeds.get(sessionId)?.events.length ?? 0,
    subscribe: (sessionId) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let feed = feeds.get(sessionId)
          if (feed === undefined) {
            feed = { events: [], dropped: 0, watchers: 0, behind: 0, waiting: new Set() }
            feeds.set(sessionId, feed)
          }
          feed.watchers++
          const joined = feed
          const end = () => joined.dropped + joined.events.length
          // Absolute position in the feed of the next event this watcher takes.
          let position = end()
          const takeNow = (): Chunk.Chunk<AgentEvent> => {
            if (position >= end()) return Chunk.empty()
            const taken = joined.events.slice(Math.max(position, joined.dropped) - joined.dropped)
            position = end()
            caughtUp(joined)
            return Chunk.unsafeFromArray(taken)
          }
          const take: Effect.Effect<Chunk.Chunk<AgentEvent>> = Effect.suspend(() =>
            position < end()
              ? Effect.sync(takeNow)
              : Effect.async<Chunk.Chunk<AgentEvent>>((resume) => {
                const wake = () => resume(Effect.sync(takeNow))
                joined.waiting.add(wake)
                // Interrupted while waiting: no wake-up.
                return Effect.sync(() => joined.waiting.delete(wake))
              })
          )
          const leave = () => {
            joined.watchers--
            if (position < end()) caughtUp(joined)
            if (joined.watchers === 0 && feeds.get(sessionId) === joined) feeds.delete(sessionId)
          }
          return { leave, subscription: { take } satisfies Subscription }
        }),
        ({ leave }) => Effect.sync(leave)
      ).pipe(Effect.map(({ subscription }) => subscription))
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
 * The watch stream: `stored` (the store's events from the start sequence) then the live feed, each
 * live event kept only when its sequence is past the last one emitted. The store is read at each
 * tick while another process may write the session, and an event that skips sequences (written
 * after another process's, or after the ones a stalled watcher's feed let go) first brings the ones
 * in between from the store: still no gap and no duplicate. The feed is handled a chunk at a time:
 * an event costs a comparison, and only a chunk with a gap builds a stream (the store read).
 */
export const watch = <E>(
  live: Subscription,
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
    /** The events of a live chunk not seen yet, each after whatever the store has before it. */
    const deliver = (chunk: Chunk.Chunk<AgentEvent>): Stream.Stream<AgentEvent, E> => {
      const events = Chunk.toReadonlyArray(chunk)
      const kept: Array<AgentEvent> = []
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!
        if (event.sequence <= last) continue
        if (event.sequence === last + 1) {
          last = event.sequence
          kept.push(event)
          continue
        }
        // A gap: what is kept so far, the store's events before this one, this one if the store
        // filled the gap (else it is left for a later read), then the rest of the chunk.
        const rest = Chunk.unsafeFromArray(events.slice(i + 1))
        return Stream.concat(
          Stream.fromChunk(Chunk.unsafeFromArray(kept)),
          Stream.concat(
            Stream.suspend(() => follow.read(last + 1)).pipe(Stream.takeWhile((e) => e.sequence < event.sequence), Stream.filter(fresh)),
            Stream.suspend(() => Stream.concat(fresh(event) ? Stream.make(event) : Stream.empty, deliver(rest)))
          )
        )
      }
      return Stream.fromChunk(Chunk.unsafeFromArray(kept))
    }
    const feed = Stream.repeatEffectChunk(live.take)
    const polled = follow.ticks.pipe(
      Stream.flatMap(() => (follow.polling() ? Stream.suspend(() => follow.read(last + 1)) : Stream.empty))
    )
    return Stream.concat(
      Stream.filter(stored, after),
      Stream.merge(feed, polled).pipe(Stream.chunks, Stream.flatMap(deliver))
    )
  })
