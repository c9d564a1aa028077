/**
 * Time for durations inside one process: Effect's `Clock.currentTimeNanos`, which the live Clock
 * reads from `process.hrtime` (a monotonic clock, anchored to the wall clock once, at the start) and
 * `TestClock` moves with its instant. A step of the wall clock — NTP correcting it, a VM restored from
 * a snapshot, a user setting the date — moves it neither way, so a wait, an idle time or a lifetime
 * measured on it is as long as it says. It is not comparable across processes (each anchors its own)
 * and, like `CLOCK_MONOTONIC`, it does not count time the machine spent suspended.
 *
 * Event timestamps and anything compared across processes stay on the wall clock (`currentTimeMillis`)
 * or the database's. The wall-clock reads left in src/ are each compared with another wall-clock
 * time, not with an earlier read of this process: event and trust timestamps, ids' time prefixes,
 * a `Retry-After` date, a cache file's mtime (`CodeCache`), a holder's start (`Holder`), and a
 * lease's expiry read by other hosts (PostgreSQL's on the database's clock; SQLite's also carries
 * one on the host's `CLOCK_MONOTONIC`, which its processes share: `Lease.hostMonotonic`).
 *
 * @since 0.2.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

const nanosPerMilli = BigInt(1_000_000)

/** Monotonic milliseconds from a `Clock`, for code that holds the clock rather than running in a fiber. */
export const unsafeMillis = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos() / nanosPerMilli)

/** Monotonic milliseconds from the fiber's `Clock`. */
export const millis: Effect.Effect<number> = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos / nanosPerMilli))
