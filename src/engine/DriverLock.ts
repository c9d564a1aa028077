/**
 * The lock a session's driver holds to start a run and for each write made with no run
 * (`SessionDriver`'s `holding` and `wake`): one holder at a time, taken at once when free, waited
 * for (interruptibly) when held. It was an effect `Semaphore` of one permit until December 2026:
 * every held session made one (its waiter set and eight bound closures, about 0.8 KB), and each turn
 * paid for its take — an `asyncInterrupt` even when free, a resumption, a release through
 * `withFiberRuntime` — about 20 Effect operations for a lock nobody else wanted (bench row 21: 1,000
 * sessions, one turn each). Here a free lock is taken and let go by plain calls, without an effect.
 *
 * A waiter is woken as a semaphore wakes it: when the lock is let go, every waiter looks again and
 * one takes it, the others wait on. A waiter interrupted before it looks again has taken nothing, and
 * the others were woken too: no hand-over is lost.
 *
 * @since 0.6.0
 * @internal
 */
import * as Effect from "effect/Effect"

export class DriverLock {
  private held = false
  /** The waiters' wake-ups; made at the first wait (most sessions never wait). */
  private waiting: Set<() => void> | undefined = undefined

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
   * {@link tryTake} with no effect at all). Interruptible while it waits; an interrupted wait takes nothing.
   */
  take(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      // Looked at here, where nothing comes between the look and the wait.
      if (this.tryTake()) return resume(Effect.void)
      const wake = () => resume(this.take())
      ;(this.waiting ??= new Set()).add(wake)
      return Effect.sync(() => {
        this.waiting?.delete(wake)
      })
    })
  }

  /** Lets the lock go: every waiter looks again (one takes it). */
  release(): void {
    this.held = false
    const waiting = this.waiting
    if (waiting === undefined || waiting.size === 0) return
    const woken = [...waiting]
    waiting.clear()
    for (const wake of woken) wake()
  }
}
