/**
 * One turn as the engine runs it: what it runs (its work item), the services, the live session, its
 * cancel state, the messages and answers sent into it, and `commit` — the one way its events are
 * written. A session's driver makes a turn for each work item (see `SessionDriver`); the turn's
 * driver and each step's parts take it as their only argument (see `TurnDriver`).
 *
 * @since 0.5.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"
import type { AgentEvent, TurnEventDraft } from "../domain/AgentEvent.js"
import type { EventStoreFailure } from "../domain/Errors.js"
import * as Image from "../domain/Image.js"
import type { ImageRef } from "../domain/Image.js"
import type * as SessionState from "../domain/SessionState.js"
import type * as Task from "../domain/Task.js"
import * as LiveSession from "./LiveSession.js"
import type { Services } from "./Services.js"
import type { TurnSink } from "./TurnSink.js"

/**
 * What a turn runs: a new user message (`runTurn`), a queued follow-up (`followUp`), or the turn the
 * log holds paused on the user's answer (`resumeTurn`).
 */
export type Work =
  | { readonly _tag: "New"; readonly userMessage: string; readonly images?: ReadonlyArray<ImageRef>; readonly budget?: Task.Budget | undefined }
  | { readonly _tag: "Queued"; readonly queueId: string; readonly content: string }
  | { readonly _tag: "Resume" }

/** The user's answer to a paused call. */
export interface UserDecision {
  readonly decision: "allow" | "deny"
  readonly remember: boolean
  /** Stored with the answer: the same answer delivered again is then answered from the log. */
  readonly idempotencyKey?: string | undefined
}

/** A message sent into the running turn (`steer`), waiting for its next step boundary. */
export interface Steer {
  readonly content: string
  /** Stored with the message (`turn.steered`): the same message delivered again is then answered from the log. */
  readonly idempotencyKey?: string | undefined
}

/**
 * Where a turn stands with cancellation:
 * - `running`: nobody asked to cancel it, and it has not decided how it ends; it takes steers.
 * - `requested`: a cancel asked for it before its steps ran (they are interrupted as they start), or
 *   after they had ended (nothing is left to interrupt).
 * - `delivered`: its steps were interrupted by a cancel.
 * - `closed`: it decided how it ends without a cancel (a final answer, a limit, an error, a shutdown):
 *   a cancel finds nothing more to stop, and steers are refused.
 *
 * From `requested` on, no model output is stored (the post-cancel guard).
 */
export type CancelState = "running" | "requested" | "delivered" | "closed"

/**
 * Who a cancel's interruption comes from, whoever asked for it: the run's fiber, which runs the
 * steps, takes back exactly this interruption once they have ended (see {@link Cancel.detach}) and
 * keeps any other — a shutdown's stops the run between turns.
 */
const cancelledBy: FiberId.FiberId = FiberId.make(-1, 0)

/** `cause`'s interruptions but the cancel's. */
const withoutCancel = (cause: Cause.Cause<never>): Cause.Cause<never> => {
  let kept: Cause.Cause<never> = Cause.empty
  for (const id of Cause.interruptors(cause)) {
    if (!Equal.equals(id, cancelledBy)) kept = Cause.sequential(kept, Cause.interrupt(id))
  }
  return kept
}

/**
 * A turn's cancellation: the one state a cancel, the guard, a steer and the turn's end all read. A
 * turn's steps run in its run's own fiber, interruptible, between {@link attach} and {@link detach}: a
 * cancel interrupts that fiber while they run, or as soon as they start when asked for before.
 */
export class Cancel {
  private current: CancelState = "running"
  private steps: Fiber.RuntimeFiber<unknown, unknown> | undefined = undefined

  /** The state now. */
  get state(): CancelState {
    return this.current
  }

  /** Whether a cancel was asked for (requested or delivered): no model output is stored any more. */
  get requested(): boolean {
    return this.current === "requested" || this.current === "delivered"
  }

  /** Asks to cancel the turn: its steps are interrupted now, or as soon as they start. Nothing happens once asked or closed. */
  readonly request: Effect.Effect<void> = Effect.suspend(() => {
    if (this.current !== "running") return Effect.void
    this.current = "requested"
    return this.deliver()
  })

  /** The turn's steps are about to run in `fiber` (the run's): a cancel asked for before is delivered at once. */
  readonly attach = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Effect.Effect<void> =>
    Effect.suspend(() => {
      this.steps = fiber
      return this.current === "requested" ? this.deliver() : Effect.void
    })

  /**
   * The turn's steps have ended: a later cancel finds nothing to interrupt, and the run's fiber takes
   * back the interruption a cancel sent it (every message sent to a fiber is taken before its next
   * step, so none can come after this one), keeping a shutdown's. Run by that fiber, uninterruptible.
   */
  readonly detach: Effect.Effect<void> = Effect.suspend(() => {
    this.steps = undefined
    return this.current === "delivered" ? FiberRef.update(FiberRef.interruptedCause, withoutCancel) : Effect.void
  })

  /** The turn has decided how it ends (no cancel asked for): a later cancel finds nothing to stop. */
  close(): void {
    if (this.current === "running") this.current = "closed"
  }

  private deliver(): Effect.Effect<void> {
    if (this.steps === undefined) return Effect.void
    this.current = "delivered"
    return Fiber.interruptAsFork(this.steps, cancelledBy)
  }
}

/** Commits a turn's drafts as one batch (see `LiveSession.commit`); returns the events committed. */
export type Commit = (drafts: ReadonlyArray<TurnEventDraft>, guard?: LiveSession.Guard) => Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure>

/** One turn. */
export interface Turn {
  readonly services: Services
  readonly session: LiveSession.LiveSession
  readonly turnId: string
  readonly work: Work
  readonly cancel: Cancel
  /** Messages sent into the turn (`steer`) and not yet stored: stored at its next step boundary, in arrival order. */
  readonly steers: Array<Steer>
  /** The calls waiting for the user, by tool call id: completing one hands the turn the user's answer. */
  readonly approvals: Map<string, Deferred.Deferred<UserDecision>>
  /**
   * The messages with an idempotency key handed to the turn and not stored yet (a steer before its
   * step boundary, an answer handed to a waiting call), by key: the same message delivered again
   * meanwhile is answered from here, as once stored it is answered from the log
   * (`SessionState.applied`). Gone with the turn: a message it never stored is new when sent again.
   */
  readonly accepted: Map<string, SessionState.AppliedMessage>
  /** What the images its tools return may still decode to (`Image.maxDecodedBytesPerTurn`). */
  readonly toolImages: Image.DecodedAllowance
  /** Where its events go once stored: the consumer of its stream (`runTurn`, `resumeTurn`); none for a follow-up's turn. */
  readonly sink: TurnSink | undefined
  /** Done once the turn has ended and its end has been dealt with (its stream ended, the run moved on). */
  readonly ended: Deferred.Deferred<void>
  /** The span of the caller who asked for the turn, parent of the turn's own; none for a follow-up's turn. */
  readonly parentSpan: Tracer.AnySpan | undefined
  /** Commits the turn's drafts: stored, folded, handed to watchers, then to the sink. */
  readonly commit: Commit
}

/** A turn of `session`; for a caller, its events go to `sink` once stored. */
export const make = (
  services: Services,
  session: LiveSession.LiveSession,
  turnId: string,
  work: Work,
  caller?: { readonly sink: TurnSink; readonly span: Tracer.AnySpan | undefined }
): Turn => ({
  // A session may have tools of its own (MCP servers its client named): its turns use them.
  services: services.tools?.forSession === undefined ? services : { ...services, tools: services.tools.forSession(session.sessionId) },
  session,
  turnId,
  work,
  cancel: new Cancel(),
  steers: [],
  approvals: new Map(),
  accepted: new Map(),
  toolImages: new Image.DecodedAllowance(),
  sink: caller?.sink,
  ended: Deferred.unsafeMake(FiberId.none),
  parentSpan: caller?.span,
  commit: commitTo(services, session, turnId, caller?.sink)
})

/**
 * Commits `drafts` that store messages the turn accepted with these idempotency keys: stored or not,
 * they leave `accepted` — from then on the log answers them, or, if the store failed, the turn ends
 * without them and a message sent again is new.
 */
export const storeAccepted = (
  turn: Turn,
  keys: ReadonlyArray<string | undefined>,
  drafts: ReadonlyArray<TurnEventDraft>
): Effect.Effect<ReadonlyArray<AgentEvent>, EventStoreFailure> =>
  Effect.ensuring(
    turn.commit(drafts),
    Effect.sync(() => keys.forEach((key) => key !== undefined && turn.accepted.delete(key)))
  )

/**
 * How drafts of one turn are committed: stored under the session's lock, folded, handed to the
 * watchers, then to `sink` when the turn has a consumer. Also how the driver writes to a turn it does
 * not run (closing a dangling turn, storing an answer to a paused one).
 */
export const commitTo = (
  services: Services,
  session: LiveSession.LiveSession,
  turnId: string,
  sink?: TurnSink
): Commit =>
(drafts, guard) =>
  // Stored and handed to the consumer as one step: a cancel between the two would lose an event from its stream.
  LiveSession.commit(services, session, turnId, drafts, guard, sink)
