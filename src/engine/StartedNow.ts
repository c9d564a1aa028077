/**
 * A fiber forked into a scope, as `Effect.forkIn` forks one, but started at once: it runs in the
 * caller's step, up to its first wait, instead of on the scheduler's next turn. A session's run
 * starts so (see `SessionDriver`): the turn a caller asks for has stored what it could store without
 * waiting — its start, and a response read whole (a scripted or cached one) — before the caller
 * takes its first events, so neither the run's first step nor the caller's first take is a round of
 * the scheduler across every session in flight (bench row 21: 1,000 turns at once).
 *
 * @since 0.6.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Fiber from "effect/Fiber"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"

/**
 * Starts `effect` in a fiber of its own at once, owned by `scope` as `Effect.forkIn` owns one: closing
 * the scope interrupts it and waits for its end, and its end takes it out of the scope (a long-lived
 * scope does not keep a finalizer for each fiber it ever owned). The fiber has the caller's fiber refs,
 * forked, and its runtime flags as they are here (started from an uninterruptible region, it starts
 * uninterruptible). A scope already closed (or closing) gets `Effect.forkIn`'s fiber, interrupted
 * before it starts, as before.
 */
export const forkIn = <A, E>(effect: Effect.Effect<A, E>, scope: Scope.Scope): Effect.Effect<void> =>
  Effect.flatMap(Scope.fork(scope, ExecutionStrategy.sequential), (own) => {
    let fiber: Fiber.RuntimeFiber<A, E> | undefined
    let closed = false
    // Run by whoever closes `own`: the scope's owner (a shutdown) interrupts the fiber; the fiber
    // itself, ending, closes it to leave the scope; made before the fiber, it finds the scope closed.
    const stop = Effect.fiberIdWith((id) => {
      if (fiber === undefined) {
        closed = true
        return Effect.void
      }
      return Equal.equals(id, fiber.id()) ? Effect.void : Fiber.interrupt(fiber)
    })
    return Effect.flatMap(Scope.addFinalizer(own, stop), () =>
      closed
        ? Effect.asVoid(Effect.forkIn(effect, scope))
        : Effect.flatMap(Effect.runtime<never>(), (runtime) =>
          Effect.sync(() => {
            // Its refs forked from the starter's, as `Effect.fork` makes them: an interruption the starter has received is not the new fiber's.
            fiber = Runtime.runFork(runtime, Effect.onExit(effect, (exit) => Scope.close(own, exit)), { updateRefs: FiberRefs.forkAs })
          })))
  })

