/**
 * `serve`'s restores of sessions' MCP servers after a restart: the first request for a session
 * (a turn, a follow-up) starts again the servers its creation named, before the session's turn.
 *
 * @since 0.5.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"

/** A session about to run a turn. */
export interface Session {
  readonly sessionId: string
  readonly cwd: string
}

/**
 * A restore for each session, at most one running per session. A caller that finds one under way
 * waits for it (a `Deferred` per restore in flight, completed however it ends): returning at once
 * let a follow-up racing a turn start its own turn without the session's `mcp__*` tools.
 */
export const oncePerSession = (options: {
  /** Whether the session's servers run in this process already. */
  readonly has: (sessionId: string) => boolean
  /** Starts them again (never fails: a server that does not start is said, and the turn goes on without it). */
  readonly restore: (session: Session) => Effect.Effect<void>
}): (session: Session) => Effect.Effect<void> => {
  const inFlight = new Map<string, Deferred.Deferred<void>>()
  return (session) =>
    Effect.suspend(() => {
      if (options.has(session.sessionId)) return Effect.void
      const running = inFlight.get(session.sessionId)
      if (running !== undefined) return Deferred.await(running)
      const done = Deferred.unsafeMake<void>(FiberId.none)
      inFlight.set(session.sessionId, done)
      return options.restore(session).pipe(
        Effect.ensuring(Effect.suspend(() => {
          inFlight.delete(session.sessionId)
          return Deferred.succeed(done, undefined)
        }))
      )
    })
}
