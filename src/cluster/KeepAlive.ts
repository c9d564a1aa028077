/**
 * Keeping a session's entity on its runner while the session works, and only then.
 *
 * `@effect/cluster` lets an entity go once it has handled no message for its `maxIdleTime`: its
 * scope closes, which here closes the session's engine and releases its writer lease, so a runner
 * holds in memory only the sessions that work or were used lately — whatever number it has driven
 * since it started. But a turn started detached (`StartTurn`, a follow-up the engine starts
 * itself) runs with no message open: left alone, the reaper would cancel it. So while the session
 * works, the entity asks the cluster to keep it (`Entity.keepAlive`), and it lets go once the
 * session is idle again.
 *
 * What counts as work is read from the engine's fold of the log, the one truth about the session:
 * a turn of this entity's engine that runs, a compaction, follow-ups waiting to start. A turn
 * waiting for the user's answer is kept for at most `approvalHold`: after that the entity may go,
 * the turn stays paused in the log, and the answer, whenever it comes, resumes it on whichever
 * runner owns the session then. A turn the log held open when the entity started (left by a runner
 * that died, or paused in the log) is no work of this engine until the session is driven here.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { MonotonicTime, type SessionEngine, SessionState } from "../index.js"

/** What a session is doing, as far as keeping its entity goes. */
export type Activity = "idle" | "working" | "waiting"

/** What a keeper knows besides the log: the turn open when the entity started, and whether it was driven since. */
export interface Origin {
  /** The turn the log held open when the entity started; no engine here runs it until the session is driven. */
  readonly inheritedTurnId: string | undefined
  /** Whether a message that drives the session (a turn, a resume, a follow-up) reached this entity. */
  readonly driven: boolean
}

/** What a session is doing (a pure function of its state and the entity's origin). */
export const activityOf = (state: SessionState.SessionState, origin: Origin): Activity => {
  if (state.compaction !== undefined) return "working"
  const open = state.openTurn
  // Queued follow-ups start only once something drives the session here.
  if (open === undefined) return state.followUps.length > 0 && origin.driven ? "working" : "idle"
  if (open.turnId === origin.inheritedTurnId) return "idle"
  return SessionState.isPaused(state) ? "waiting" : "working"
}

/** How a keeper reads and keeps its session. */
export interface Options {
  readonly engine: SessionEngine.SessionEngine.Service
  readonly sessionId: string
  /** Asks the cluster to keep the entity (`true`) or lets it go (`false`). */
  readonly keepAlive: (enabled: boolean) => Effect.Effect<void>
  /** How long a turn waiting for the user keeps the entity (default 1 hour). */
  readonly approvalHold?: Duration.DurationInput
  /** How often a working session's state is read again (default 1 second: an in-memory read). */
  readonly every?: Duration.DurationInput
}

/** The default {@link Options.approvalHold}. */
export const defaultApprovalHold = Duration.hours(1)

/** A session's keeper. */
export interface Keeper {
  /** Marks the session driven here (a turn, a resume, a follow-up); `resumes` when it may close or resume the inherited turn. */
  readonly drove: (resumes: boolean) => void
  /** Looks at the session after a message: starts keeping the entity when it works. Never fails. */
  readonly check: Effect.Effect<void>
}

/**
 * A keeper for the entity of the scope: it reads the session once (what the log held open at the
 * start), lets go of any keep-alive a previous owner left, and follows the session while it works.
 */
export const make = (options: Options): Effect.Effect<Keeper, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { engine, sessionId } = options
    // The entity's scope: following ends with the entity.
    const scope = yield* Effect.scope
    const holdMs = Duration.toMillis(options.approvalHold ?? defaultApprovalHold)
    const every = options.every ?? Duration.seconds(1)
    const initial = yield* Effect.option(engine.sessionState({ sessionId }))
    let origin: Origin = { inheritedTurnId: initial._tag === "Some" ? initial.value.openTurn?.turnId : undefined, driven: false }
    // A runner that died while keeping this entity left its keep-alive in the cluster's storage: released here.
    yield* options.keepAlive(false)
    let following = false

    const activity = engine.sessionState({ sessionId }).pipe(
      Effect.map((state) => activityOf(state, origin)),
      Effect.orElseSucceed((): Activity => "idle")
    )

    /** Follows the session until it is idle, keeping the entity meanwhile (a waiting turn for `approvalHold` at most). */
    const follow = (first: Activity) =>
      Effect.gen(function*() {
        let kept = false
        let waitingSince: number | undefined
        let now = first
        while (now !== "idle") {
          // Monotonic: a wall clock stepped back would hold a waiting entity longer, one stepped forward let it go at once.
          const at = yield* MonotonicTime.millis
          waitingSince = now === "waiting" ? waitingSince ?? at : undefined
          const keep = waitingSince === undefined || at - waitingSince < holdMs
          if (keep !== kept) {
            yield* options.keepAlive(keep)
            kept = keep
          }
          yield* Effect.sleep(every)
          now = yield* activity
        }
        following = false
        if (kept) yield* options.keepAlive(false)
      })

    const check = Effect.suspend(() => {
      if (following) return Effect.void
      following = true
      return Effect.flatMap(activity, (now) => {
        if (now === "idle") {
          following = false
          return Effect.void
        }
        // Interruptible: `check` runs where a message's handler ends (an `ensuring`, uninterruptible),
        // and a fiber forked there would inherit that — the entity could then never close.
        return Effect.asVoid(Effect.forkIn(Effect.interruptible(follow(now)), scope))
      })
    })

    return {
      drove: (resumes) => {
        origin = { inheritedTurnId: resumes ? undefined : origin.inheritedTurnId, driven: true }
      },
      check
    }
  })
