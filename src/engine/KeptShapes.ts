/**
 * One live object of each short-lived shape effect's runtime makes on every fiber step of a turn's
 * teardown, held for as long as the process runs, so that V8 keeps those shapes' hidden classes (maps).
 *
 * Why: effect builds these objects by adding fields to a fresh instance (class fields, or
 * `Object.create` then assignments), and V8 reaches the maps that result only through its transition
 * tree, which it holds weakly. When no such object is alive at a major GC — every one of them dies
 * with the step that made it — the maps go, and every TurboFan code that embedded them is thrown away
 * ("marking dependent code … reason: weak objects" under `--trace-deopt`). The next turn then runs
 * effect's run loop unoptimized and compiles it again on V8's helper threads, which share the
 * machine's cores with the main thread: after a major GC, a cancel (bench row 7) took about twice the
 * CPU. One object of each keeps its map, and the code with it (docs/benchmarks.md, "cancel8").
 *
 * Nothing here changes what effect does: these are its own constructors, called once.
 *
 * @since 0.10.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberStatus from "effect/FiberStatus"
import * as RuntimeFlags from "effect/RuntimeFlags"

let kept: ReadonlyArray<unknown> | undefined

/**
 * Makes the objects once and keeps them. Called by the engine as it is made (a call, not a
 * module-level value, so that a bundler keeps it). Answers how many shapes are kept.
 */
export const hold = (): number => {
  if (kept === undefined) {
    const interrupted = Cause.interrupt(FiberId.none)
    kept = [
      // Every `withFiberRuntime` step makes one (`FiberStatus.running`): the most re-optimized code after a GC.
      FiberStatus.running(RuntimeFlags.none),
      // An interruption's cause, alone and combined, and the exit it ends a fiber with.
      interrupted,
      Cause.sequential(interrupted, interrupted),
      Exit.failCause(interrupted),
      // `yield*` of an effect in `Effect.gen`.
      Effect.void[Symbol.iterator]()
    ]
  }
  return kept.length
}
