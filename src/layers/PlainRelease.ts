/**
 * `Effect.acquireRelease` for a release that reads nothing of the fiber it runs in. `Effect.acquireRelease`
 * records the acquiring fiber's refs (its context, its span, its log annotations) and runs the release
 * with them: a store's writer lock, held for a session's life in the engine's cache, kept the fiber that
 * took it alive all that time. Here the release is a plain finalizer of the scope, added in the same
 * uninterruptible step as the acquire, so it runs once on every exit of the scope and keeps only what
 * it closes over. (The memory store's lock, row21mem; `bench/heldRefs.ts` checks each store.)
 */
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"

export const acquireRelease = <A, E, R>(
  acquire: Effect.Effect<A, E, R>,
  release: (a: A) => Effect.Effect<void>
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => Effect.uninterruptible(Effect.tap(acquire, (a) => Scope.addFinalizer(scope, release(a)))))
