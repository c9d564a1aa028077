/**
 * The lock a session's driver holds to start a run and for each write made with no run
 * (`SessionDriver`'s `holding` and `wake`): one holder at a time, taken at once when free, waited
 * for (interruptibly) when held. It was an effect `Semaphore` of one permit until December 2026:
 * every held session made one (its waiter set and eight bound closures, about 0.8 KB), and each turn
 * paid for its take — an `asyncInterrupt` even when free, a resumption, a release through
 * `withFiberRuntime` — about 20 Effect operations for a lock nobody else wanted (bench row 21: 1,000
 * sessions, one turn each). Here a free lock is taken and let go by plain calls, without an effect.
 *
 * Waiters are served first come first served: the lock let go while someone waits is handed to the
 * first waiter (still held: no `tryTake` comes between), and only that one is woken. (It once woke
 * every waiter to look again, as an effect semaphore does, and all but one went back to waiting: 500
 * waiters made 125,249 takes.) A waiter handed the lock but interrupted before it runs again lets it
 * go at once, to the next waiter: no hand-over is lost.
 *
 * @since 0.6.0
 * @internal
 */
import * as Effect from "effect/Effect"

export class DriverLock {
  private held = false
  /** The waiters, in the order they came (a set keeps it); made at the first wait (most sessions never wait). */
  private waiting: Set<Waiter> | undefined = undefined

  /** Whether someone holds it now. */
  get isHeld(): boolean {
    return this.held
  }

  /** Takes the lock if it is free: whether it was. */
  tryTake(): boolean {
    if (this.held) return false
    this.held = true
    return true
  }

  /**
   * Waits until the lock is free, then takes it (made when asked for: a free lock is taken by
   * {@link tryTake} with no effect at all). Interruptible while it waits; an interrupted wait takes
   * nothing (handed the lock as it was interrupted, it lets it go to the next waiter).
   */
  take(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      // Looked at here, where nothing comes between the look and the wait.
      if (this.tryTake()) return resume(Effect.void)
      const waiter: Waiter = { resume, handed: false }
      ;(this.waiting ??= new Set()).add(waiter)
      return Effect.sync(() => {
        if (waiter.handed) this.release()
        else this.waiting?.delete(waiter)
      })
    })
  }

  /** Lets the lock go: to the first waiter, if any (it holds it as it wakes). */
  release(): void {
    const waiting = this.waiting
    if (waiting !== undefined && waiting.size > 0) {
      const first: Waiter = waiting.values().next().value!
      waiting.delete(first)
      first.handed = true
      first.resume(Effect.void)
      return
    }
    this.held = false
  }
}

/** A waiter: how to wake it, and whether it was handed the lock (its canceller then passes it on). */
interface Waiter {
  readonly resume: (effect: Effect.Effect<void>) => void
  handed: boolean
}
