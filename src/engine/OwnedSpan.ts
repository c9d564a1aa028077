/**
 * A span around an effect that neither fails nor is interrupted, made without `Effect.withSpan`'s
 * two scoped regions (an `onExit` to end the span, a `locally` of the context to make it the parent).
 * Both stay on the fiber's stack for as long as the effect runs — about 4 KB for each turn in flight
 * (bench row 21) — where here the span is put in the fiber's context and taken out again by the
 * same fiber once the effect has ended.
 *
 * @since 0.5.0
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

/**
 * Runs `self` in a new span (its children's parent), ended with `self`'s value. Only for an effect
 * that cannot fail and that nothing interrupts (it runs uninterruptible here; an interruptible
 * region inside must recover from an interruption, as `TurnDriver.run`'s wait for its steps does):
 * were it to stop half-way, the span would stay open and the fiber keep it as its parent.
 */
export const around = <A, R>(name: string, options: Tracer.SpanOptions, self: Effect.Effect<A, never, R>): Effect.Effect<A, never, R> =>
  Effect.uninterruptible(Effect.flatMap(Effect.makeSpan(name, options), (span) =>
    Effect.flatMap(FiberRef.getAndUpdate(FiberRef.currentContext, (context) => Context.add(context, Tracer.ParentSpan, span)), (previous) =>
      Effect.flatMap(self, (value) =>
        Effect.zipRight(
          FiberRef.set(FiberRef.currentContext, previous),
          Effect.flatMap(FiberRef.get(FiberRef.currentTracerTimingEnabled), (timing) =>
            Effect.clockWith((clock) =>
              Effect.sync(() => {
                // As `Effect.withSpan` ends a span: at the clock's time, or at 0 when timing is off.
                if (span.status._tag !== "Ended") span.end(timing ? clock.unsafeCurrentTimeNanos() : BigInt(0), Exit.succeed(value))
                return value
              })
            ))
        )))))
