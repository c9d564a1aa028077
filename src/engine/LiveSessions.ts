/**
 * The sessions an engine holds in memory, and the writer locks it holds: a bounded cache. A session
 * is loaded from the store on first use (callers arriving while it loads wait on the same load) and
 * let go when it has been idle for `idleTimeout`, or when more than `maxLiveSessions` are held (the
 * least recently used first). A session whose turn runs — or waits in memory for the user — is
 * never let go. Letting a session go releases its writer lock; its next use loads it again from
 * the store and takes the lock again.
 *
 * @since 0.2.0
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type { EventStoreFailure, SessionBusy } from "../domain/Errors.js"
import { SessionNotFound } from "../domain/Errors.js"
import * as MonotonicTime from "../domain/MonotonicTime.js"
import * as Session from "../domain/Session.js"
import type { EventStore } from "../services/EventStore.js"
import type * as LiveSession from "./LiveSession.js"
import * as LogFold from "./LogFold.js"
import * as Pulled from "./Pulled.js"
import * as SessionDriver from "./SessionDriver.js"

/** How many sessions an engine holds, and for how long. */
export interface CacheOptions {
  /**
   * Sessions held in memory at most (default 1,024); beyond, the least recently used idle ones are let
   * go. Sessions created in a burst are idle until their turns start, and a session let go before its
   * first turn is loaded again, with its writer lock, when the turn starts: the default holds a
   * thousand sessions started at once without reloading them (at 256, 744 of 1,000 were).
   */
  readonly maxLiveSessions: number
  /** A session unused this long is let go (default 10 minutes). */
  readonly idleTimeout: Duration.DurationInput
}

/** The defaults of {@link CacheOptions}. */
export const defaultCacheOptions: CacheOptions = { maxLiveSessions: 1024, idleTimeout: Duration.minutes(10) }

type LoadError = EventStoreFailure | SessionNotFound

/**
 * A session held. Its deferred and its semaphore are made when first needed: most sessions are
 * created here, never loaded nor caught up, and each held session kept both (about 1.1 KB: bench
 * row 21 holds a thousand).
 */
interface Entry {
  readonly sessionId: string
  /** A load under way (none for a session created here): done with its outcome. */
  readonly loading: Deferred.Deferred<LiveSession.LiveSession, LoadError> | undefined
  /** Set once loaded. */
  session: LiveSession.LiveSession | undefined
  /**
   * When it was last used, on monotonic time: on the wall clock, a clock stepped back an hour kept
   * idle sessions (and their writer locks, which other processes wait for) an hour longer, and one
   * stepped forward let sessions in use go at the next sweep.
   */
  lastUsed: number
  /** One catch-up at a time: two folding the same events into the session would fold them twice (see `catchUpLock`). */
  catchingUp: Effect.Semaphore | undefined
}

/** The entry's catch-up lock, made at its first catch-up. */
const catchUpLock = (entry: Entry): Effect.Semaphore => entry.catchingUp ??= Effect.unsafeMakeSemaphore(1)

interface Writer {
  /** Done once the lock is taken or refused; let go once held (a holder then waits for nothing). */
  taking: Deferred.Deferred<void, EventStoreFailure | SessionBusy> | undefined
  /** The lock's own scope (once made), closed when the session is let go. */
  scope: Scope.CloseableScope | undefined
  held: boolean
  /** Set while the lock is being released: a new holder waits for it. */
  releasing: Deferred.Deferred<void> | undefined
}

/** The engine's sessions in memory. */
export interface LiveSessions {
  /**
   * The session, loaded from the store if it is not held. One held without its writer lock is caught
   * up first (another process may have written since it was loaded): a read answers the log as it is
   * once the call has begun, not as it was at the load.
   */
  readonly get: (sessionId: string) => Effect.Effect<LiveSession.LiveSession, LoadError>
  /**
   * The session, loaded under its writer lock: what every write goes through. An unknown session
   * fails `SessionNotFound` before any lock is taken. A session not held yet is loaded once, after
   * the lock is taken; one loaded before is caught up with what was written meanwhile (see `holdWriter`).
   */
  readonly writable: (sessionId: string) => Effect.Effect<LiveSession.LiveSession, LoadError | SessionBusy>
  /**
   * Takes the session's writer lock unless it is held already. What was loaded before is caught up
   * once the lock is taken (another process may have written until it let go): the events after it
   * are read and folded in, or, where that cannot be done, it is forgotten and loaded again.
   */
  readonly holdWriter: (sessionId: string) => Effect.Effect<void, EventStoreFailure | SessionBusy>
  /** A session just created, held from now on. */
  readonly add: (session: LiveSession.LiveSession) => Effect.Effect<void>
  /** Forgets what is held of the session (it is stale): the next use loads it again. */
  readonly forget: (sessionId: string) => void
  /** Whether the session is held (or loading). */
  readonly has: (sessionId: string) => boolean
  /** The session if it is held and loaded, without loading it (nor marking it used). */
  readonly loaded: (sessionId: string) => LiveSession.LiveSession | undefined
  /** Whether this engine holds the session's writer lock (then no other process writes it). */
  readonly holdsWriter: (sessionId: string) => boolean
  /** Marks the session used now. */
  readonly touch: (sessionId: string) => void
  /** How many sessions are held. */
  readonly size: () => number
}

/**
 * The cache. `hydrate` loads a session from the store. The idle sweep runs in `scope` (the
 * engine's), and the writer locks are held in child scopes of one scope forked from it when the cache is made.
 */
export const make = (
  store: EventStore.Service,
  scope: Scope.Scope,
  options: CacheOptions,
  hydrate: (sessionId: string) => Effect.Effect<LiveSession.LiveSession, LoadError>
): Effect.Effect<LiveSessions> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const idleMs = Duration.toMillis(Duration.decode(options.idleTimeout))
    const max = Math.max(1, options.maxLiveSessions)
    // Insertion order is recency order: a used entry is moved to the end.
    const entries = new Map<string, Entry>()
    const writers = new Map<string, Writer>()
    // Once the engine's scope closes its locks are released: a call still running outside it (an
    // embedder's fiber) is interrupted rather than let write (or take a lock) after that.
    let closed = false
    yield* Scope.addFinalizer(scope, Effect.sync(() => {
      closed = true
      writers.clear()
    }))
    // The writer locks' scopes are forked from this one, made now: whatever the engine adds to its scope
    // later (the runs' owner, `StartedNow`) is closed before any lock is let go.
    const locks = yield* Scope.fork(scope, ExecutionStrategy.sequential)

    const touch = (sessionId: string) => {
      const entry = entries.get(sessionId)
      if (entry === undefined) return
      entries.delete(sessionId)
      entry.lastUsed = MonotonicTime.unsafeMillis(clock)
      entries.set(sessionId, entry)
    }

    /** A loaded session nothing drives nor writes to, whose lock (if any) is settled, may be let go. */
    const idle = (sessionId: string, entry: Entry) => {
      if (entry.session === undefined || !SessionDriver.isIdle(entry.session.driver)) return false
      const writer = writers.get(sessionId)
      return writer === undefined || (writer.held && writer.releasing === undefined)
    }

    /** Lets a session go: forgotten, then its writer lock released. */
    const release = (sessionId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        entries.delete(sessionId)
        const writer = writers.get(sessionId)
        if (writer?.scope === undefined) return Effect.void
        const releasing = Deferred.unsafeMake<void>(FiberId.none)
        writer.releasing = releasing
        return Scope.close(writer.scope, Exit.void).pipe(
          Effect.ensuring(Effect.sync(() => {
            writers.delete(sessionId)
            Deferred.unsafeDone(releasing, Exit.void)
          }))
        )
      }).pipe(Effect.uninterruptible)

    /** Lets the least recently used idle sessions go while more than `max` are held. */
    const bound: Effect.Effect<void> = Effect.suspend(() => {
      const victims: Array<string> = []
      let excess = entries.size - max
      // By value, not `[id, entry]` pairs: with many sessions busy, each call walks past all of them
      // (row 21: 1,000 turns at once), and a pair would be allocated for each.
      for (const entry of entries.values()) {
        if (excess <= 0) break
        if (!idle(entry.sessionId, entry)) continue
        victims.push(entry.sessionId)
        excess--
      }
      return Effect.forEach(victims, release, { discard: true })
    })

    const sweep: Effect.Effect<void> = Effect.suspend(() => {
      const now = MonotonicTime.unsafeMillis(clock)
      const victims = [...entries].filter(([sessionId, entry]) => now - entry.lastUsed >= idleMs && idle(sessionId, entry)).map(([id]) => id)
      return Effect.forEach(victims, release, { discard: true })
    })
    if (Number.isFinite(idleMs)) {
      yield* Effect.forkIn(Effect.repeat(sweep, Schedule.spaced(Duration.millis(Math.max(1000, idleMs / 2)))), scope)
    }

    const writerHeld = (sessionId: string) => !closed && writers.get(sessionId)?.held === true

    /**
     * A session held without its writer lock, brought up to the end of the log before it is answered:
     * only the events after it are read (`LogFold.catchUp`). With the lock held, no other process
     * writes, and this engine's writes reach the state as they are stored: nothing is read. One that
     * cannot be caught up is forgotten and loaded again from the whole log.
     */
    const current = (entry: Entry, session: LiveSession.LiveSession): Effect.Effect<LiveSession.LiveSession, LoadError> =>
      writerHeld(entry.sessionId) ? Effect.succeed(session) : catchUpLock(entry).withPermits(1)(
        // Checked again once its turn comes: a lock taken meanwhile has caught the session up, and this
        // engine's writes may have started.
        Effect.suspend(() => writerHeld(entry.sessionId) ? Effect.void : LogFold.catchUp(store, session))
      ).pipe(
        Effect.as(session),
        Effect.catchAll(() =>
          Effect.suspend(() => {
            if (entries.get(entry.sessionId) === entry) entries.delete(entry.sessionId)
            return get(entry.sessionId)
          })
        )
      )

    const newEntry = (sessionId: string, session: LiveSession.LiveSession | undefined): Entry => ({
      sessionId,
      loading: session === undefined ? Deferred.unsafeMake(FiberId.none) : undefined,
      session,
      lastUsed: MonotonicTime.unsafeMillis(clock),
      catchingUp: undefined
    })

    const get = (sessionId: string): Effect.Effect<LiveSession.LiveSession, LoadError> =>
      Effect.suspend(() => {
        if (!Session.isValidId(sessionId)) return Effect.fail(new SessionNotFound({ sessionId }))
        const existing = entries.get(sessionId)
        if (existing !== undefined) {
          touch(sessionId)
          // A load under way may have begun before this call: it is caught up too.
          return Effect.flatMap(existing.session !== undefined || existing.loading === undefined ? Effect.succeed(existing.session!) : Deferred.await(existing.loading), (session) =>
            current(existing, session))
        }
        const entry = newEntry(sessionId, undefined)
        entries.set(sessionId, entry)
        return hydrate(sessionId).pipe(
          // A failed load is not remembered: the session may be created, or the store recover.
          Effect.tapBoth({
            onFailure: () => Effect.sync(() => entries.get(sessionId) === entry && entries.delete(sessionId)),
            onSuccess: (session) => Effect.sync(() => void (entry.session = session))
          }),
          Effect.exit,
          Effect.tap((exit) => Deferred.done(entry.loading!, exit)),
          Effect.flatten,
          Effect.tap(() => bound),
          Effect.uninterruptible
        )
      })

    /**
     * What was loaded before the writer lock was taken is brought up to the end of the log (another
     * process may have written until it let go): only the events after it are read. A session still
     * loading, or one that cannot be caught up (see `LogFold.catchUp`), is forgotten instead: its
     * next use loads it from the whole log.
     */
    const caughtUp = (sessionId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const entry = entries.get(sessionId)
        if (entry === undefined) return Effect.void
        const forget = Effect.sync(() => void (entries.get(sessionId) === entry && entries.delete(sessionId)))
        return entry.session === undefined ? forget : Effect.catchAll(catchUpLock(entry).withPermits(1)(LogFold.catchUp(store, entry.session)), () => forget)
      })

    const holdWriter = (sessionId: string): Effect.Effect<void, EventStoreFailure | SessionBusy> =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const existing = writers.get(sessionId)
        if (existing?.releasing !== undefined) return Effect.zipRight(Deferred.await(existing.releasing), holdWriter(sessionId))
        if (existing !== undefined) return existing.taking === undefined ? Effect.void : Deferred.await(existing.taking)
        const taking = Deferred.unsafeMake<void, EventStoreFailure | SessionBusy>(FiberId.none)
        const writer: Writer = { taking, scope: undefined, held: false, releasing: undefined }
        writers.set(sessionId, writer)
        return Scope.fork(locks, ExecutionStrategy.sequential).pipe(
          Effect.flatMap((lockScope) => {
            writer.scope = lockScope
            return Scope.extend(store.acquireWriter(sessionId), lockScope)
          }),
          // Held only once caught up: a write asked for meanwhile waits for `taking`, not for a stale state.
          Effect.zipRight(caughtUp(sessionId)),
          Effect.zipRight(Effect.sync(() => void (writer.held = true))),
          // A refused lock is not remembered: the other process may end.
          Effect.tapError(() =>
            Effect.suspend(() => {
              writers.delete(sessionId)
              return writer.scope === undefined ? Effect.void : Scope.close(writer.scope, Exit.void)
            })
          ),
          Effect.exit,
          Effect.tap((exit) =>
            Effect.zipRight(
              Deferred.done(taking, exit),
              // Held: whoever comes next finds it held. Refused: the writer is gone from the map already.
              Effect.sync(() => void (writer.taking = undefined))
            )
          ),
          Effect.flatten,
          Effect.uninterruptible
        )
      })

    /** Whether the store holds the session: its first event is read, not its whole log. */
    const stored = (sessionId: string): Effect.Effect<void, LoadError> =>
      !Session.isValidId(sessionId)
        ? Effect.fail(new SessionNotFound({ sessionId }))
        : Effect.flatMap(Pulled.head(store.read(sessionId)), (first) => Option.isSome(first) ? Effect.void : Effect.fail(new SessionNotFound({ sessionId })))

    const writable = (sessionId: string): Effect.Effect<LiveSession.LiveSession, LoadError | SessionBusy> =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const writer = writers.get(sessionId)
        if (writer?.held === true && writer.releasing === undefined) return get(sessionId)
        if (entries.has(sessionId)) return Effect.zipRight(holdWriter(sessionId), get(sessionId))
        // A load lets the fibers ready to run go first: in a burst of sessions asked for at once, those
        // still held start their turns (and stop being idle) before this load's `bound` picks whom to let go.
        return Effect.zipRight(Effect.yieldNow(), Effect.zipRight(stored(sessionId), Effect.zipRight(holdWriter(sessionId), get(sessionId))))
      })

    const add = (session: LiveSession.LiveSession) =>
      Effect.suspend(() => {
        entries.set(session.sessionId, newEntry(session.sessionId, session))
        return bound
      })

    return {
      get,
      writable,
      holdWriter,
      add,
      forget: (sessionId) => void entries.delete(sessionId),
      has: (sessionId) => entries.has(sessionId),
      loaded: (sessionId) => entries.get(sessionId)?.session,
      holdsWriter: writerHeld,
      touch,
      size: () => entries.size
    }
  })
