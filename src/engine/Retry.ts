/**
 * The retry policy for model requests: a `Schedule` over provider failures, stepped by hand so the
 * engine can store `model.retry {attempt, delayMs, errorCode}` before it waits, and so a vendor's
 * `retry-after` can lengthen the wait.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import type { ProviderFailure } from "../domain/Errors.js"
import * as MonotonicTime from "../domain/MonotonicTime.js"

/** A retry policy: its input is the failure, so a policy may look at the reason. */
export type Policy = Schedule.Schedule<unknown, ProviderFailure>

/** Exponential backoff from 1 s, doubling, with jitter, each wait at most 30 s, at most 4 retries. */
export const defaultPolicy: Policy = Schedule.exponential("1 second", 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay((_, delay) => Duration.min(delay, Duration.seconds(30))),
  Schedule.intersect(Schedule.recurs(4))
)

/** The longest `retry-after` honoured; a server asking for longer ends the turn instead. */
export const maxRetryAfter = Duration.minutes(2)

/**
 * A wait as whole milliseconds, or `None` when it is no wait at all (not a finite number). A
 * jittered schedule gives fractions (1166.2) and `model.retry` stores `delayMs` as an integer, so the
 * wait is rounded here, where it is computed, and the engine sleeps exactly what it stored.
 */
export const wholeMillis = (millis: number): Option.Option<number> =>
  Number.isFinite(millis) ? Option.some(Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(millis)))) : Option.none()

/** A policy in use for one model request: each failure gives the next wait, or none when it is spent. */
export interface Attempts {
  readonly next: (failure: ProviderFailure) => Effect.Effect<Option.Option<number>>
}

/**
 * Starts a policy. The wait is the schedule's delay, or the failure's `retry-after` when that is
 * longer. A failure replayed from a recording (`retryDelayMs`, see `Cassette`) is retried after
 * exactly the recorded wait, whatever the policy says: the replay makes the recording's requests.
 */
export const start = (policy: Policy): Effect.Effect<Attempts> =>
  Effect.sync(() => {
    let state = policy.initial
    return {
      next: (failure) =>
        Effect.gen(function*() {
          if (failure.retryDelayMs !== undefined) return wholeMillis(failure.retryDelayMs)
          if (!failure.retryable) return Option.none()
          if (failure.retryAfterMs !== undefined && failure.retryAfterMs > Duration.toMillis(maxRetryAfter)) return Option.none()
          // Monotonic: a policy bounded by time (`upTo`, `during`) measures time passed, which a
          // step of the wall clock would stretch by an hour or cut to nothing.
          const now = yield* MonotonicTime.millis
          const [next, , decision] = yield* policy.step(now, failure, state)
          state = next
          if (ScheduleDecision.isDone(decision)) return Option.none()
          const delay = Math.max(0, ScheduleIntervals.start(decision.intervals) - now)
          // A server's wait that is not a number is no wait: the schedule's delay stands.
          const asked = failure.retryAfterMs !== undefined && Number.isFinite(failure.retryAfterMs) ? failure.retryAfterMs : 0
          return wholeMillis(Math.max(delay, asked))
        })
    }
  })

/**
 * Runs `attempt` (numbered from 1) until it needs no retry or the policy is spent: `failureOf` says
 * which provider failure an outcome asks a retry for (none: the outcome stands), `beforeWait` runs
 * before each wait (the turn stores `model.retry` there), and the wait goes through `Clock`. The last
 * outcome is returned as it is.
 */
export const loop = <A, E, R, E2 = never, R2 = never>(
  policy: Policy,
  attempt: (attempt: number) => Effect.Effect<A, E, R>,
  failureOf: (outcome: A) => ProviderFailure | undefined,
  beforeWait: (failure: ProviderFailure, attempt: number, delayMs: number) => Effect.Effect<void, E2, R2> = () => Effect.void as never
): Effect.Effect<A, E | E2, R | R2> =>
  // The first attempt alone, the policy started only once one needs a retry: a model request that
  // succeeds (nearly every one: a turn of tool calls makes one a step) starts no policy and runs no generator.
  Effect.flatMap(attempt(1), (first) => {
    const firstFailure = failureOf(first)
    return firstFailure === undefined ? Effect.succeed(first) : Effect.gen(function*() {
      const attempts = yield* start(policy)
      let outcome = first
      let failure: ProviderFailure | undefined = firstFailure
      for (let n = 1; failure !== undefined; n++) {
        const wait = yield* attempts.next(failure)
        if (Option.isNone(wait)) return outcome
        yield* beforeWait(failure, n, wait.value)
        yield* Effect.sleep(Duration.millis(wait.value))
        outcome = yield* attempt(n + 1)
        failure = failureOf(outcome)
      }
      return outcome
    })
  })
