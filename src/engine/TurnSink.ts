/**
 * Where a turn's events go once stored, for its caller's stream (`runTurn`, `resumeTurn`): what
 * `Mailbox` gave the engine before — unbounded, offered to without an effect, ended or failed once,
 * read as a channel of the chunks handed over since the last read, everything offered before the end
 * read before it — with one reader and nothing more.
 *
 * Effect's `Mailbox` wakes a waiting reader through a task of the scheduler, scheduled by each offer
 * (and the woken fiber is then scheduled itself): two rounds of the scheduler a hand-over, and a task
 * scheduled while nobody waited wakes the next reader with nothing to read — which is every turn once
 * its run starts at once and hands its first events over before its caller reads (`StartedNow`; bench
 * row 21: 1,000 turns in flight, each round of the scheduler a round across all of them). Here an
 * offer resumes the waiting reader itself.
 *
 * @since 0.6.0
 * @internal
 */
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Cause from "effect/Cause"
import type { AgentEvent } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"

/** A turn's events on their way to its caller. */
export class TurnSink {
  private pending: Array<AgentEvent> = []
  private exit: Exit.Exit<void, EventStoreFailure> | undefined = undefined
  private reader: ((resume: Effect.Effect<void>) => void) | undefined = undefined

  /**
   * Whether it has ended (or failed): the driver ends a turn's sink as it deals with the turn's end,
   * in the same step, so a reader going away after this has nothing to abandon.
   */
  get ended(): boolean {
    return this.exit !== undefined
  }

  /** Hands `events` over (dropped once the sink has ended), resuming the reader if it waits. */
  offerAll(events: ReadonlyArray<AgentEvent>): void {
    if (this.exit !== undefined) return
    const pending = this.pending
    for (let i = 0; i < events.length; i++) pending.push(events[i]!)
    this.wake()
  }

  /** Ends the stream once what was handed over has been read. */
  readonly end: Effect.Effect<void> = Effect.sync(() => this.done(Exit.void))

  /** Ends the stream (`Exit.void`) or fails it once what was handed over has been read, by a plain call: {@link end} and {@link failCause} in a step that is one already. */
  endWith(exit: Exit.Exit<void, EventStoreFailure>): void {
    this.done(exit)
  }

  /** Fails the stream with `cause` once what was handed over has been read. */
  failCause(cause: Cause.Cause<EventStoreFailure>): Effect.Effect<void> {
    return Effect.sync(() => this.done(Exit.failCause(cause)))
  }

  /** The events as a channel: each read takes everything handed over since the last, waiting for some. */
  readonly channel: Channel.Channel<Chunk.Chunk<AgentEvent>, unknown, EventStoreFailure, unknown, void, unknown> = Channel.suspend(() => this.loop)

  /**
   * The events of the sink `asked` answers, as one channel: its first step asks and takes what was
   * handed over meanwhile, and the events handed over with the end are written as its last — a
   * channel step fewer at each end than {@link channel} after the ask (each step of a caller's
   * `Stream.run*` is ~7 Effect operations of effect's channel executor).
   */
  static channelAfter<E>(asked: Effect.Effect<TurnSink, E>): Channel.Channel<Chunk.Chunk<AgentEvent>, unknown, E | EventStoreFailure, unknown, void, unknown> {
    return Channel.flatMap(Channel.fromEffect(Effect.flatMap(asked, (sink) => sink.take)), ([events, done, sink]) => sink.next(events, done))
  }

  private readonly loop: Channel.Channel<Chunk.Chunk<AgentEvent>, unknown, EventStoreFailure, unknown, void, unknown> = Channel.flatMap(
    Channel.fromEffect(Effect.suspend(() => this.take)),
    ([events, done]) => this.next(events, done)
  )

  private next(events: Chunk.Chunk<AgentEvent>, done: boolean): Channel.Channel<Chunk.Chunk<AgentEvent>, unknown, EventStoreFailure, unknown, void, unknown> {
    if (!done) return Channel.zipRight(Channel.write(events), this.loop)
    return events.length === 0 ? Channel.void : Channel.write(events)
  }

  private done(exit: Exit.Exit<void, EventStoreFailure>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    this.wake()
  }

  private wake(): void {
    const reader = this.reader
    if (reader === undefined) return
    this.reader = undefined
    reader(Effect.void)
  }

  /**
   * Everything handed over since the last take (waiting for some), and whether the stream ends after
   * it: the events handed over before a successful end are taken with it; before a failure, without
   * it (the failure is the next take's).
   */
  private readonly take: Effect.Effect<readonly [Chunk.Chunk<AgentEvent>, boolean, TurnSink], EventStoreFailure> = Effect.suspend(() => {
    const exit = this.exit
    if (this.pending.length > 0) {
      const events = Chunk.unsafeFromArray(this.pending)
      this.pending = []
      return Effect.succeed([events, exit !== undefined && Exit.isSuccess(exit), this] as const)
    }
    if (exit === undefined) return Effect.zipRight(this.wait, this.take)
    return Exit.isSuccess(exit) ? Effect.succeed([Chunk.empty<AgentEvent>(), true, this] as const) : Effect.failCause(exit.cause)
  })

  private readonly wait: Effect.Effect<void> = Effect.async<void>((resume) => {
    // Checked again here, where nothing can come between the check and the wait: the reader's fiber
    // may be cut between `take`'s check and this (the server's scheduler yields a fiber whenever its
    // time slice is used), and what was handed over — or the end — meanwhile woke nobody.
    if (this.pending.length > 0 || this.exit !== undefined) return resume(Effect.void)
    this.reader = resume
    // A reader that goes away (its stream interrupted) is not resumed.
    return Effect.sync(() => {
      if (this.reader === resume) this.reader = undefined
    })
  })
}
