/**
 * A time limit on a tool's file system work when that work is one promise: past the limit the
 * promise's signal aborts it and the effect fails with what `onTimeout` gives. The promise is waited
 * for in the calling fiber, and the limit is one fiber sleeping on `Clock` (so a `TestClock` governs
 * it) — one fiber per call where `Effect.timeoutFail` forks two (it races the effect's fiber against
 * the sleep's).
 *
 * @since 0.11.0
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"

/** `run`'s promise, its rejection mapped by `onError`, failing with `onTimeout()` once `limit` has passed. */
export const promiseWithin = <A, E, T>(
  limit: Duration.DurationInput,
  onTimeout: () => T,
  onError: (error: unknown) => E,
  run: (signal: AbortSignal) => PromiseLike<A>
): Effect.Effect<A, E | T> =>
  Effect.suspend(() => {
    const controller = new AbortController()
    // Set once the promise is waited for; whichever of the promise and the timer comes first settles it.
    let settle: ((outcome: Effect.Effect<A, E | T>) => void) | undefined
    let expired = false
    const timer = Effect.zipRight(Effect.sleep(limit), Effect.sync(() => {
      expired = true
      controller.abort()
      settle?.(Effect.fail(onTimeout()))
    }))
    return Effect.flatMap(Effect.fork(timer), (timerFiber) =>
      Effect.ensuring(
        Effect.async<A, E | T>((resume) => {
          let settled = false
          // The work is aborted only when it is cut short (the limit, a cancel): a settled promise has
          // nothing left to stop, and an abort builds a `DOMException` and dispatches an event.
          settle = (outcome) => {
            if (settled) return
            settled = true
            resume(outcome)
          }
          if (expired) return settle(Effect.fail(onTimeout()))
          run(controller.signal).then((value) => settle!(Effect.succeed(value)), (error) => settle!(Effect.fail(onError(error))))
          // Interrupted (a cancel): the work is aborted.
          return Effect.sync(() => controller.abort())
        }),
        // Stops the timer without waiting for it (nor forking a fiber to, as `Fiber.interruptFork` would).
        Effect.fiberIdWith((self) => Fiber.interruptAsFork(timerFiber, self))
      ))
  })
