/**
 * The log of a fork (CONTRACT.md §8): `session.created {cwd, client, forkedFrom}`, a copy of the
 * source's events 2..atSequence re-stamped with the new session id and fresh event ids (turn ids,
 * sequences, timestamps and payloads as they were), then `session.forked`. The copy is the fork's
 * whole history, so the new log stands alone: its transcript, remembered permissions and queued
 * follow-ups are the source's at the fork point.
 *
 * Both steps read the source as a stream and hold none of it beyond a batch: the fork point is found
 * by a fold of the session's state ({@link PointSearch}), then {@link write} copies the log up to it
 * in batches, folding the fork's state and transcript as it goes (what hydration holds). A session of
 * any length forks in the memory its hydration takes (docs/benchmarks.md, row 22).
 *
 * @since 0.3.0
 * @internal
 */
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { type EventStoreFailure, InvalidInput } from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type { EventStore } from "../services/EventStore.js"
import type { IdGenerator } from "../services/IdGenerator.js"
import * as LiveSession from "./LiveSession.js"
import { LiveTranscript } from "./LiveTranscript.js"
import * as Pulled from "./Pulled.js"

/**
 * Where a fork may start: a sequence after which no turn and no compaction is open (the end of a
 * closed turn, or a session-level event between turns). Without `atSequence`, the last such point:
 * the session as it is now — every session-level event after its last turn kept (a title, a rewind,
 * whose rewound turns must stay out of the fork's conversation, a manual compaction done or failed,
 * follow-ups queued or dropped, a source fork's own `session.forked`) — and only an open turn or
 * compaction (running, waiting for the user, or left by a crash) and what follows it left out; 1
 * when there is none. A point inside a turn or compaction (the error names the nearest
 * point before it), before 1 or past the end is `InvalidInput`; so is a log that cannot be folded up to where it was read.
 *
 * A fold: `add` the source's events in order while it answers `true`, then read `result`. It keeps
 * the state of the session and two sequences, never the events. With a point asked for, it answers
 * `false` once that point is folded (nothing after it changes the answer); without one it reads the
 * whole log. A caller that needs the rest of the log checked too (a rewind) may keep adding.
 */
export class PointSearch {
  private state: SessionState.SessionState | undefined = undefined
  /** The last point where no turn or compaction was open: the default. */
  private lastBetween = 1
  /** The last point before the one asked for where no turn or compaction was open: named when the point is refused. */
  private closedBefore = 1
  /** Whether the point asked for is one where no turn or compaction is open (1 always is). */
  private atClosed: boolean
  private unreadable: InvalidInput | undefined = undefined
  /** The point asked for when a log can have it: reading stops there. */
  private readonly stopAt: number | undefined
  /** Events added, folded or not. */
  events = 0

  constructor(readonly atSequence: number | undefined) {
    this.atClosed = atSequence === 1
    this.stopAt = atSequence !== undefined && Number.isSafeInteger(atSequence) && atSequence >= 1 ? atSequence : undefined
  }

  /** Folds the next event; `false` once the answer is known. */
  add(event: AgentEvent): boolean {
    this.events++
    if (this.unreadable !== undefined) return false
    const next = this.state === undefined ? SessionState.start(event) : SessionState.reduce(this.state, event)
    if (Either.isLeft(next)) {
      this.unreadable = new InvalidInput({ field: "sessionId", detail: `the session's log cannot be read: ${next.left.message}` })
      return false
    }
    const state = next.right
    this.state = state
    const between = state.openTurn === undefined && state.compaction === undefined
    if (event.sequence === this.atSequence && between) this.atClosed = true
    if (between && this.atSequence !== undefined && event.sequence < this.atSequence) this.closedBefore = event.sequence
    if (between) this.lastBetween = event.sequence
    return this.stopAt === undefined || event.sequence < this.stopAt
  }

  /** Whether an event could not follow the ones before it. */
  get failed(): boolean {
    return this.unreadable !== undefined
  }

  /** The fork point, from what was added. */
  get result(): Either.Either<number, InvalidInput> {
    if (this.unreadable !== undefined) return Either.left(this.unreadable)
    const atSequence = this.atSequence
    if (atSequence === undefined) return Either.right(this.lastBetween)
    const last = this.state?.lastSequence ?? 0
    if (!Number.isSafeInteger(atSequence) || atSequence < 1 || atSequence > last) {
      return Either.left(new InvalidInput({ field: "atSequence", detail: `must be a sequence of the session, 1..${last}` }))
    }
    if (!this.atClosed) {
      // The nearest point before it, so that the user has one to pass (the sequences are in `replay --json`).
      return Either.left(new InvalidInput({ field: "atSequence", detail: `sequence ${atSequence} is inside a turn or compaction: fork at the end of a closed turn (the nearest before it: ${this.closedBefore})` }))
    }
    return Either.right(atSequence)
  }
}

/** Folds a chunk into a search; whether to read on. */
const searching = (search: PointSearch) => (chunk: Chunk.Chunk<AgentEvent>): Effect.Effect<boolean> => {
  for (const event of chunk) if (!search.add(event)) return stop
  return readOn
}
const readOn = Effect.succeed(true)
const stop = Effect.succeed(false)

/** The search over a stored session's log, read up to the answer; `events` is 0 when there is no such session. */
export const search = (store: EventStore.Service, sessionId: string, atSequence: number | undefined): Effect.Effect<PointSearch, EventStoreFailure> =>
  Effect.suspend(() => {
    const found = new PointSearch(atSequence)
    // Pulled in this fiber, as hydration reads (see `Pulled`).
    return Effect.as(Pulled.forEachChunk(store.read(sessionId), searching(found)), found)
  })

/**
 * How many copied events a fork appends at once. Each batch is one append (one write, one
 * transaction), so a long log costs a few thousand appends, while a batch holds a few hundred
 * events whatever the log's length.
 */
export const batchSize = 512

/**
 * Writes the fork of `source` at `atSequence` (a point {@link PointSearch} accepted) as `sessionId`,
 * reading the source up to that point and no further, and returns it as a live session: its state
 * and transcript folded from the events as they are stored.
 *
 * The order of the appends is what a failure midway leaves (the store has no delete, and its
 * atomicity is one append): `session.created` alone (nothing of the fork exists if it fails), then
 * the copy in batches of {@link batchSize} — a failure keeps the batches before it: the fork's
 * history cut at a batch's end, perhaps inside a turn, which the session's next use closes as a crash
 * would have left it — and `session.forked` last and alone, so a fork that has it was copied whole.
 * The failure is the caller's: the engine does not hold a fork that failed.
 */
export const write = (
  store: EventStore.Service,
  ids: IdGenerator.Service,
  source: string,
  atSequence: number,
  sessionId: string,
  timestamp: string
): Effect.Effect<LiveSession.LiveSession, EventStoreFailure> =>
  Effect.suspend(() => {
    let state: SessionState.SessionState | undefined
    const transcript = new LiveTranscript()
    let fromSessionId: string | undefined
    let pending: Array<AgentEvent> = []
    let reached = false

    /** Folds events just stored into the fork's state and transcript. */
    const fold = (events: ReadonlyArray<AgentEvent>): Effect.Effect<void> => {
      for (const event of events) {
        const next = state === undefined ? SessionState.start(event) : SessionState.reduce(state, event)
        if (Either.isLeft(next)) return Effect.die(new Error("a fork's log must replay"))
        state = next.right
        transcript.add(event)
      }
      return Effect.void
    }
    const append = (events: ReadonlyArray<AgentEvent>) => Effect.zipRight(store.appendAll(events), fold(events))

    const created = (event: AgentEvent): Effect.Effect<void, EventStoreFailure> => {
      if (event.type !== "session.created") return Effect.die(new Error("a log begins with session.created"))
      fromSessionId = event.sessionId
      const { client, cwd } = event.payload
      return Effect.flatMap(LiveSession.idsFor(ids, 1), ([id]) =>
        append([{ id: id!, sessionId, sequence: 1, timestamp, type: "session.created", payload: { cwd, client, forkedFrom: { sessionId: event.sessionId, sequence: atSequence } } }]))
    }
    const copy = (events: ReadonlyArray<AgentEvent>): Effect.Effect<void, EventStoreFailure> =>
      events.length === 0 ? Effect.void : Effect.flatMap(LiveSession.idsFor(ids, events.length), (eventIds) =>
        append(events.map((event, i): AgentEvent => ({ ...event, id: eventIds[i]!, sessionId }))))
    const forked = Effect.suspend(() =>
      Effect.flatMap(LiveSession.idsFor(ids, 1), ([id]) =>
        append([{ id: id!, sessionId, sequence: atSequence + 1, timestamp, type: "session.forked", payload: { fromSessionId: fromSessionId!, atSequence } }])))

    // Each chunk read becomes its appends, run in order before the next chunk is read.
    const chunkOf = (chunk: Chunk.Chunk<AgentEvent>): Effect.Effect<boolean, EventStoreFailure> => {
      const steps: Array<Effect.Effect<void, EventStoreFailure>> = []
      for (const event of chunk) {
        if (event.sequence === 1) steps.push(created(event))
        else {
          pending.push(event)
          if (pending.length === batchSize) {
            steps.push(copy(pending))
            pending = []
          }
        }
        if (event.sequence >= atSequence) {
          reached = true
          break
        }
      }
      if (reached) {
        steps.push(copy(pending), forked)
        pending = []
      }
      return Effect.as(Effect.all(steps, { discard: true }), !reached)
    }

    return Pulled.forEachChunk(store.read(source), chunkOf).pipe(
      Effect.zipRight(Effect.suspend(() =>
        reached && state !== undefined
          ? Effect.succeed(LiveSession.make(state, transcript))
          : Effect.die(new Error("the source's log ended before the fork point"))
      ))
    )
  })
