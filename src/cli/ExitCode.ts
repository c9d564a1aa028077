/**
 * The exit codes of `effect-agent`:
 *
 * - 0: the command did what it was asked; for `run`, `approve` and `deny`, the turn ended `final`.
 * - 1: the command could not run: a usage error, a bad settings file or flag, a session not found,
 *   a store that failed. One line on stderr says why.
 * - 3: the turn ran and ended with an error (`turn.completed` `stopReason: "error"`: authentication,
 *   network, rate limit, context overflow, max steps, internal …); its errorCode is on stderr.
 * - 130: the turn was cancelled (Ctrl+C), after the cancellation was stored.
 *
 * `serve` stopped by SIGTERM (a service manager's stop) exits 0 once its shutdown is done; a second
 * signal during the shutdown stops it at once, killed by SIGTERM (a shell shows 143).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** The codes, by name. */
export const codes = { ok: 0, failure: 1, turnError: 3, cancelled: 130 } as const

/** The turn the CLI drove ended with `stopReason: "error"`. Already shown by the renderer. */
export class TurnEndedWithError extends Schema.TaggedError<TurnEndedWithError>()("TurnEndedWithError", { errorCode: Schema.String }) {
  override get message(): string {
    return `the turn ended with an error: ${this.errorCode}`
  }
}

/** The turn the CLI drove ended `cancelled` (by another process or an approval timeout). Already shown. */
export class TurnCancelled extends Schema.TaggedError<TurnCancelled>()("TurnCancelled", {}) {
  override get message(): string {
    return "the turn was cancelled"
  }
}

/**
 * The command could not do what was asked and has said why in its own words (a list, the command to
 * run instead): exit 1 with nothing more printed — the one-line form would say it a second time.
 */
export class AlreadyReported extends Schema.TaggedError<AlreadyReported>()("AlreadyReported", { message: Schema.String }) {}

/** Whether a failure has already been shown (a turn's outcome by the renderer, or a command's own report): nothing more is printed. */
export const isShownOutcome = (error: unknown): boolean =>
  error instanceof TurnEndedWithError || error instanceof TurnCancelled || error instanceof AlreadyReported

/** Whether the running command ends cleanly when SIGTERM stops it (a server's normal way to stop). */
let sigtermIsCleanStop = false

/** Declares that the running command (a server) ends cleanly when SIGTERM stops it: it then exits 0 after its shutdown. */
export const sigtermStopsCleanly = Effect.sync(() => {
  sigtermIsCleanStop = true
})

/** The process exit code for how the CLI's program ended; `signal` is the signal that stopped it, if one did. */
export const of = (exit: Exit.Exit<unknown, unknown>, signal?: NodeJS.Signals): number => {
  if (Exit.isSuccess(exit)) return codes.ok
  if (Cause.isInterruptedOnly(exit.cause)) return signal === "SIGTERM" && sigtermIsCleanStop ? codes.ok : codes.cancelled
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof TurnEndedWithError) return codes.turnError
  if (Option.isSome(failure) && failure.value instanceof TurnCancelled) return codes.cancelled
  return codes.failure
}
