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
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"

/** A watcher's place in its session's feed. */
export interface Subscription<E = never> {
  /**
   * Every event published since the last take, at once (waits while there is none). After a
   * stall longer than the feed keeps, the oldest of them are missing: their sequences are skipped.
   * Fails once the session's poll of the store has failed and every event before it is taken.
   */
  readonly take: Effect.Effect<Chunk.Chunk<AgentEvent>, E>
  /**
   * Tells the feed the watcher has seen the session up to `sequence` (it read the store itself when
   * it joined): once every watcher has, the poll reads on from there.
   */
  readonly seen: (sequence: number) => void
}

/**
 * How a session's feed follows writes no live publish carries (another process driving the
 * session): one poll of the store per watched session, not one per watcher.
 */
export interface Poll<E> {
  /** How long between two reads. */
  readonly interval: Duration.DurationInput
  /** The stored events from a sequence on. */
  readonly read: (fromSequence: number) => Stream.Stream<AgentEvent, E>
  /** Whether to read the store now: only when this engine does not write the session itself. */
  readonly polling: () => boolean
  /**
   * The session's last stored sequence, when the store tells it without reading the log (JSONL: from
   * its last line): a poll with nothing past what the feed has then reads nothing.
   */
  readonly lastSequence?: Effect.Effect<Option.Option<number>>
}

/** The engine's watcher hub; `E`: how its sessions' polls of the store fail (the store's `EventStoreFailure` for an engine). */
export interface Watchers<E = never> {
  /** Hands stored events of one session, in sequence order, to its watchers. Synchronous and cheap when none watch. */
  readonly publish: (sessionId: string, events: ReadonlyArray<AgentEvent>) => void
  /**
   * A place in the session's feed, from now on, given up when the scope closes. With `poll`, the
   * session's first watcher starts the feed's poll of the store (its last watcher stops it).
   */
  readonly subscribe: (sessionId: string, poll?: Poll<E>) => Effect.Effect<Subscription<E>, never, Scope.Scope>
  /** How many live events the hub keeps for a session: those its slowest watcher has not taken, bounded. */
  readonly kept: (sessionId: string) => number
  /**
   * Ends every feed, as the engine's scope closes: each watcher's stream is interrupted (a watch runs
   * on its caller's fiber, outside that scope: it would wait for events forever), each poll stops, and
   * a watcher that subscribes later is interrupted at once.
   */
  readonly close: Effect.Effect<void>
}

/** How many live events a session's feed keeps at least before the oldest make way (read again from the store). */
export const defaultCapacity = 4096

/** One watcher of a feed: the last sequence it has seen, `undefined` until it has read the store. */
interface Member {
  seen: number | undefined
}

/** The recent events of one watched session, and who waits for the next ones. */
interface Feed<E> {
  /** The kept events; `events[0]` is the `dropped`-th event ever published to this feed. */
  events: Array<AgentEvent>
  dropped: number
  /** Each watcher, by the last sequence it has seen (see `readFrom`). */
  readonly members: Set<Member>
  /** How many watchers have not taken every kept event: at 0 the feed lets them all go. */
  behind: number
  /** Wakes the watchers waiting for the next publish. */
  readonly waiting: Set<() => void>
  /** The highest sequence published to the feed (by the engine or the poll). */
  appended: number
  /** Why the poll of the store stopped, once it has failed: each watcher fails after taking what is kept. */
  failure: Cause.Cause<E> | undefined
  /** The poll's fiber, while the feed has watchers. */
  poller: Fiber.RuntimeFiber<void> | undefined
  /**
   * The last batch appended, as one chunk, and its position in the feed: a watcher whose take is
   * exactly that batch (one keeping up) takes this chunk, shared with every other such watcher,
   * rather than a copy of its own. Let go with the kept events.
   */
  latest: { readonly start: number; readonly chunk: Chunk.Chunk<AgentEvent> } | undefined
}

/** A new, empty hub. */
export const make = <E = never>(capacity: number = defaultCapacity): Watchers<E> => {
  const keep = Number.isSafeInteger(capacity) && capacity >= 1 ? capacity : defaultCapacity
  const feeds = new Map<string, Feed<E>>()
  let closed = false
  /** Once every watcher has taken every event, the feed holds none (an idle session costs nothing). */
  const caughtUp = (feed: Feed<E>) => {
    if (--feed.behind > 0) return
    feed.dropped += feed.events.length
    feed.events = []
    feed.latest = undefined
  }
  const wakeAll = (feed: Feed<E>) => {
    if (feed.waiting.size === 0) return
    const waiting = Array.from(feed.waiting)
    feed.waiting.clear()
    for (const wake of waiting) wake()
  }
  const append = (feed: Feed<E>, events: ReadonlyArray<AgentEvent>) => {
    if (events.length === 0) return
    // A batch is never changed once stored and handed on: its array can be shared as it is.
    feed.latest = { start: feed.dropped + feed.events.length, chunk: Chunk.unsafeFromArray(events) }
    for (const event of events) {
      feed.events.push(event)
      if (event.sequence > feed.appended) feed.appended = event.sequence
    }
      // Every watcher now has something to take.
      feed.behind = feed.members.size
      // Trimmed to `keep` once it holds twice that: the copy is paid once per `keep` events.
      if (feed.events.length > 2 * keep) {
        const excess = feed.events.length - keep
        feed.events = feed.events.slice(excess)
        feed.dropped += excess
      }
    wakeAll(feed)
  }
  /**
   * Where the poll reads on from: past what the feed holds, and past what every watcher has seen
   * already — never past what one of them lacks. A watcher that joins reads the store itself and may
   * read events the poll has not read yet; the watchers that were there before it get those from the
   * poll alone (reading on from the newcomer's sequence, as this did once, kept a session's last
   * events from them until the next write). Worked out afresh at each poll, so a watcher still
   * reading the store need not hold the others back (a client that never reads must not stall them):
   * once it has read, its sequence counts; what the poll appended meanwhile is in its feed, and what
   * was skipped before the appended events is a gap it reads from the store. Nothing is read before
   * some watcher has read the store (it would read the whole log).
   */
  const readFrom = (feed: Feed<E>): number | undefined => {
    let lowest = Infinity
    for (const member of feed.members) {
      if (member.seen !== undefined && member.seen < lowest) lowest = member.seen
    }
    const from = Math.max(feed.appended, lowest === Infinity ? 0 : lowest)
    return from === 0 ? undefined : from + 1
  }
  /**
   * The feed's poll: every interval, while this engine does not write the session, the events stored
   * past what the feed and its watchers have (see `readFrom`) are appended to it, for every watcher at
   * once — where each watcher used to read the store on a tick of its own.
   */
  const pollOf = (sessionId: string, feed: Feed<E>, poll: Poll<E>): Effect.Effect<void> => {
    const once = Effect.suspend(() => {
      const from = poll.polling() ? readFrom(feed) : undefined
      if (from === undefined) return Effect.void
      const read = Effect.suspend(() =>
        Stream.runForEachChunk(poll.read(from), (chunk) => {
          append(feed, Chunk.toReadonlyArray(chunk))
          return Effect.void
        })
      )
      return poll.lastSequence === undefined
        ? read
        : Effect.flatMap(poll.lastSequence, (last) => Option.isSome(last) && last.value < from ? Effect.void : read)
    })
    return Effect.sleep(poll.interval).pipe(
      Effect.zipRight(once),
      Effect.forever,
      // A failed read, or a defect: every watcher ends with it (a poll that died silently would
      // leave them waiting for writes they would never see). The feed leaves the hub at once: a
      // watcher that subscribes while the failed ones are still open starts a fresh poll rather
      // than inheriting the failure.
      Effect.catchAllCause((cause) =>
        Effect.sync(() => {
          feed.failure = cause
          if (feeds.get(sessionId) === feed) feeds.delete(sessionId)
          wakeAll(feed)
        })
      )
    )
  }
  return {
    publish: (sessionId, events) => {
      const feed = feeds.get(sessionId)
      if (feed === undefined) return
      append(feed, events)
    },
    kept: (sessionId) => feeds.get(sessionId)?.events.length ?? 0,
    close: Effect.sync(() => {
      closed = true
      for (const feed of feeds.values()) {
        feed.failure = Cause.interrupt(FiberId.none)
        feed.poller?.unsafeInterruptAsFork(FiberId.none)
        wakeAll(feed)
      }
      feeds.clear()
    }),
    subscribe: (sessionId, poll) =>
      Effect.acquireRelease(
        Effect.gen(function*() {
          let feed = feeds.get(sessionId)
          if (feed === undefined) {
            feed = { events: [], dropped: 0, members: new Set(), behind: 0, waiting: new Set(), appended: 0, failure: closed ? Cause.interrupt(FiberId.none) : undefined, poller: undefined, latest: undefined }
            if (!closed) feeds.set(sessionId, feed)
            // Forked as a daemon, not in the first watcher's scope: the feed outlives that watcher
            // while others watch; the last one to leave stops it. Interruptible, though forked from
            // this uninterruptible acquire: else that stop would never land, and the poll's timer
            // would keep the process alive after its last watcher.
            if (poll !== undefined && !closed) feed.poller = yield* Effect.forkDaemon(Effect.interruptible(pollOf(sessionId, feed, poll)))
          }
          const member: Member = { seen: undefined }
          feed.members.add(member)
          const joined = feed
          const end = () => joined.dropped + joined.events.length
          // Absolute position in the feed of the next event this watcher takes.
          let position = end()
          const takeNow = (): Chunk.Chunk<AgentEvent> => {
            if (position >= end()) return Chunk.empty()
            const latest = joined.latest
            // Keeping up: the last batch is all there is to take, the same chunk for every such watcher
            // (a hundred SSE clients of a turn cost no copy of its batches each).
            const taken = latest !== undefined && latest.start === position && position >= joined.dropped && latest.start + latest.chunk.length === end()
              ? latest.chunk
              : Chunk.unsafeFromArray(joined.events.slice(Math.max(position, joined.dropped) - joined.dropped))
            position = end()
            caughtUp(joined)
            return taken
          }
          /** What is kept first; then the poll's failure, if it failed. */
          const next = (): Effect.Effect<Chunk.Chunk<AgentEvent>, E> | undefined =>
            position < end() ? Effect.sync(takeNow) : joined.failure === undefined ? undefined : Effect.failCause(joined.failure)
          const take: Effect.Effect<Chunk.Chunk<AgentEvent>, E> = Effect.suspend(() =>
            next() ??
              Effect.async<Chunk.Chunk<AgentEvent>, E>((resume) => {
                // Looked at again here, where nothing can come between the look and the wait: the
                // watcher's fiber may be cut after the look above (the server's scheduler yields a
                // fiber whenever its time slice is used), and a publish meanwhile woke only the others.
                const now = next()
                if (now !== undefined) return resume(now)
                // Woken by a publish or by the poll's failure: either gives `next` something.
                const wake = () => resume(next() ?? Effect.sync(takeNow))
                joined.waiting.add(wake)
                // Interrupted while waiting: no wake-up.
                return Effect.sync(() => joined.waiting.delete(wake))
              })
          )
          const seen = (sequence: number) => {
            if (member.seen === undefined || sequence > member.seen) member.seen = sequence
          }
          const leave = () => {
            joined.members.delete(member)
            if (position < end()) caughtUp(joined)
            if (joined.members.size > 0) return Effect.void
            if (feeds.get(sessionId) === joined) feeds.delete(sessionId)
            return joined.poller === undefined ? Effect.void : Fiber.interruptFork(joined.poller)
          }
          return { leave, subscription: { take, seen } satisfies Subscription<E> }
        }),
        ({ leave }) => Effect.suspend(leave)
      ).pipe(Effect.map(({ subscription }) => subscription))
  }
}

/**
 * The watch stream: `stored` (the store's events from the start sequence) then the live feed, each
 * live event kept only when its sequence is past the last one emitted. An event that skips
 * sequences (written after another process's, or after the ones a stalled watcher's feed let go)
 * first brings the ones in between from the store (`read`): still no gap and no duplicate. The
 * feed is handled a chunk at a time: an event costs a comparison, and only a chunk with a gap
 * builds a stream (the store read). Writes of another process reach the feed by its poll (see
 * {@link Watchers.subscribe}), which reads on from what every watcher has seen.
 */
export const watch = <E>(
  live: Subscription<E>,
  stored: Stream.Stream<AgentEvent, E>,
  fromSequence: number,
  read: (fromSequence: number) => Stream.Stream<AgentEvent, E>
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
      // The usual case, every event the next one: the chunk as it is (the feed's, shared by the
      // watchers keeping up), no copy.
      let next = 0
      while (next < events.length && events[next]!.sequence === last + 1 + next) next++
      if (next === events.length) {
        if (next > 0) last = events[next - 1]!.sequence
        return Stream.fromChunk(chunk)
      }
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
            Stream.suspend(() => read(last + 1)).pipe(Stream.takeWhile((e) => e.sequence < event.sequence), Stream.filter(fresh)),
            Stream.suspend(() => Stream.concat(fresh(event) ? Stream.make(event) : Stream.empty, deliver(rest)))
          )
        )
      }
      return Stream.fromChunk(Chunk.unsafeFromArray(kept))
    }
    /** A live chunk that is not simply the next events (a gap, or events already seen): the next segment starts with it. */
    let irregular: Chunk.Chunk<AgentEvent> | undefined
    /**
     * The feed's chunks as they are, for as long as each holds just the next events: one take and
     * one comparison per event per chunk, no stream of its own (a stream per chunk — a `flatMap` —
     * cost a channel executor per chunk per watcher: with hundreds of SSE clients, most of the
     * server's work in a turn). It ends at the first other chunk, left in `irregular`.
     */
    const regular = Stream.repeatEffectChunkOption(Effect.suspend(() => {
      // What this watcher has: the feed's poll (if any) reads on from there.
      live.seen(last)
      return Effect.flatMap(Effect.mapError(live.take, Option.some), (chunk) => {
        const events = Chunk.toReadonlyArray(chunk)
        let next = 0
        while (next < events.length && events[next]!.sequence === last + 1 + next) next++
        if (next < events.length) {
          irregular = chunk
          return Effect.fail(Option.none())
        }
        // The usual case: the chunk as it is (the feed's, shared by the watchers keeping up), no copy.
        if (next > 0) last = events[next - 1]!.sequence
        return Effect.succeed(chunk)
      })
    }))
    /** A segment of the live part: the chunk the last one ended at (its gap read from the store), then regular chunks. */
    const segment = Stream.suspend(() => {
      const first = irregular
      irregular = undefined
      return first === undefined ? regular : Stream.concat(deliver(first), regular)
    })
    return Stream.concat(
      Stream.filter(stored, after),
      // The store read done; a new segment only after a chunk that was not simply the next events.
      Stream.flatMap(Stream.repeatValue(undefined), () => segment)
    )
  })
