/**
 * Fibers owned by a scope, as `Effect.forkIn` owns one, but started at once: each runs in the
 * caller's step, up to its first wait, instead of on the scheduler's next turn. A session's run
 * starts so (see `SessionDriver`): the turn a caller asks for has stored what it could store without
 * waiting — its start, and a response read whole (a scripted or cached one) — before the caller
 * takes its first events, so neither the run's first step nor the caller's first take is a round of
 * the scheduler across every session in flight (bench row 21: 1,000 turns at once).
 *
 * One {@link Owner} a scope (the engine's), with one finalizer in it for all of its fibers, made
 * with the owner. Until December 2026 each fiber had a scope of its own, forked from the engine's and
 * closed by the fiber as it ended: a scope, a finalizer and a close (about 30 Effect operations, and
 * the scope held for as long as the turn ran) once per turn.
 *
 * @since 0.6.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"

/** The fibers started at once in a scope, and that scope's one finalizer for them. */
export interface Owner {
  /**
   * Starts `effect` in a fiber of its own at once, owned as `Effect.forkIn` owns one: closing the
   * scope interrupts it and waits for its end (the fibers still running, the last started first, one
   * after the other), and its end lets it go (a long-lived scope keeps nothing for each fiber it ever
   * owned). The fiber has the caller's fiber refs, forked, and its runtime flags as they are here
   * (started from an uninterruptible region, it starts uninterruptible). Once the scope is closing or
   * closed, the fiber is `Effect.forkIn`'s, interrupted before it starts, as before.
   */
  readonly forkIn: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<void>
  /** How many of its fibers run now. */
  readonly size: () => number
}

/**
 * The owner of the fibers started at once in `scope`. What must still be there when they are
 * interrupted (a session's writer lock, which a cancelled turn's last commit needs) is released by
 * finalizers of `scope` added before this one, or in scopes forked from it before: a scope closes its
 * finalizers the last added first.
 */
export const owner = (scope: Scope.Scope): Effect.Effect<Owner> =>
  Effect.suspend(() => {
    const fibers = new Set<Fiber.RuntimeFiber<unknown, unknown>>()
    let closed = false
    const close = Effect.suspend(() => {
      closed = true
      const running = [...fibers].reverse()
      fibers.clear()
      return Effect.forEach(running, Fiber.interrupt, { discard: true })
    })
    const forkIn = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<void> =>
      Effect.suspend(() =>
        closed
          ? Effect.asVoid(Effect.forkIn(effect, scope))
          : Effect.flatMap(Effect.runtime<never>(), (runtime) =>
            Effect.sync(() => {
              // Its refs forked from the starter's, as `Effect.fork` makes them: an interruption the starter has received is not the new fiber's.
              const fiber: Fiber.RuntimeFiber<unknown, unknown> = Runtime.runFork(runtime, effect, { updateRefs: FiberRefs.forkAs })
              // Ended in its start (no wait on the way): nothing to own.
              if (fiber.unsafePoll() !== null) return
              fibers.add(fiber)
              fiber.addObserver(() => fibers.delete(fiber))
            }))
      )
    return Effect.as(Scope.addFinalizer(scope, close), { forkIn, size: () => fibers.size })
  })
