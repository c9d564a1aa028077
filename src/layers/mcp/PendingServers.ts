/**
 * A session's MCP servers started before the session is created: a server that cannot start refuses
 * the creation before anything is stored (the log is append-only). Once the session exists they are
 * bound to it; if it is not created, they are stopped. One shape for every adapter's embedder hook
 * (`ServerConfig`'s and `AcpAgent`'s `sessionServers`) and the CLI's servers.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** Servers started for a session that does not exist yet. */
export interface PendingServers {
  /** Makes them the servers of the session just created (or loaded), replacing and stopping any it had. */
  readonly bind: (sessionId: string) => Effect.Effect<void>
  /** Stops them: the session was not created after all. */
  readonly discard: Effect.Effect<void>
}

/** What an embedder's `sessionServers` must return, said when it returned something else (the earlier shape). */
export const expectedShape =
  "sessionServers returned no {bind, discard}: it is (cwd, servers) => Effect<{ bind: (sessionId) => Effect<void>, discard: Effect<void> }>, " +
  "called before the session is created (not the older (session, servers) => Effect<void>)"

/** Whether `value` is pending servers (an embedder's JavaScript, or `as any`, may return anything). */
export const isPendingServers = (value: unknown): value is PendingServers =>
  typeof value === "object" && value !== null &&
  typeof (value as { bind?: unknown }).bind === "function" &&
  Effect.isEffect((value as { discard?: unknown }).discard)

/**
 * Starts servers with `start` (interruptible, as the caller is: what it started it stops itself),
 * then hands them to `use` in the uninterruptible region (`restore` makes a part interruptible
 * again); servers of the wrong shape (`expectedShape`) fail with `wrongShape` instead.
 */
const started = <A, E, R, E2, R2, E3>(
  start: Effect.Effect<PendingServers, E, R>,
  wrongShape: () => E3,
  use: (pending: PendingServers, restore: <X, EX, RX>(effect: Effect.Effect<X, EX, RX>) => Effect.Effect<X, EX, RX>) => Effect.Effect<A, E2, R2>
): Effect.Effect<A, E | E2 | E3, R | R2> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(restore(start), (pending): Effect.Effect<A, E2 | E3, R2> => isPendingServers(pending) ? use(pending, restore) : Effect.fail(wrongShape()))
  )

/**
 * Starts a session's servers, then creates the session (or finds the loaded one) and binds them to
 * it. Only the start is interruptible (as the caller is): what it started it stops itself. From the
 * moment it returns the servers are held, so the rest runs to the end: an interrupt (a client gone, a
 * shutdown) there would leave them running unbound, or, once bound, stop the servers a stored session
 * uses. A session that is not created stops them; servers of the wrong shape (`expectedShape`) fail
 * with `wrongShape` before the session is created.
 */
export const startThenBind = <S extends { readonly sessionId: string }, E, R, E2, R2, E3>(
  start: Effect.Effect<PendingServers, E, R>,
  create: Effect.Effect<S, E2, R2>,
  wrongShape: () => E3
): Effect.Effect<S, E | E2 | E3, R | R2> =>
  started(start, wrongShape, (pending) =>
    create.pipe(
      Effect.tapErrorCause(() => pending.discard),
      Effect.tap((session) => pending.bind(session.sessionId))
    ))

/**
 * Starts the servers of an existing session, runs `load` (interruptible, as the caller is), and binds
 * them to the session only when it succeeds: a load that fails, is cancelled or interrupted stops
 * them and leaves the session with the servers it had (`session/load` cancelled mid-way). Servers of
 * the wrong shape fail with `wrongShape` before `load` runs.
 */
export const startThenBindOnSuccess = <A, E, R, E2, R2, E3>(
  start: Effect.Effect<PendingServers, E, R>,
  sessionId: string,
  load: Effect.Effect<A, E2, R2>,
  wrongShape: () => E3
): Effect.Effect<A, E | E2 | E3, R | R2> =>
  started(start, wrongShape, (pending, restore) =>
    restore(load).pipe(Effect.onExit((exit) => Exit.isSuccess(exit) ? pending.bind(sessionId) : pending.discard)))
