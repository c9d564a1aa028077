/**
 * Spans made with fewer scoped regions than `Effect.withSpan`, which wraps an effect in two (an
 * `onExit` to end the span, a `locally` of the context to make it the parent): both stay on the
 * fiber's stack for as long as the effect runs — about 4 KB for each turn in flight, per span
 * (bench row 21). Here the span is put in the fiber's context directly, and taken out again by the
 * same fiber when the effect ends: with the span's end in one `onExit` ({@link within}), or with no
 * scoped region at all for an effect that cannot fail nor be interrupted ({@link around}).
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
 * Runs `self` in a new span (its children's parent), ended with `self`'s exit, as `Effect.withSpan`
 * does: one `onExit` ends the span and gives the fiber its context back, however `self` ends.
 */
export const within = (name: string, options: Tracer.SpanOptions) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  // Uninterruptible until the `onExit` is in place: the context is never left holding the span.
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.makeSpan(name, options), (span) =>
      Effect.flatMap(FiberRef.getAndUpdate(FiberRef.currentContext, (context) => Context.add(context, Tracer.ParentSpan, span)), (previous) =>
        Effect.onExit(restore(self), (exit) => Effect.zipRight(FiberRef.set(FiberRef.currentContext, previous), end(span, exit))))))

/** Ends a span as `Effect.withSpan` does: at the clock's time, or at 0 when timing is off; once. */
const end = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(FiberRef.currentTracerTimingEnabled), (timing) =>
    Effect.clockWith((clock) =>
      Effect.sync(() => {
        if (span.status._tag !== "Ended") span.end(timing ? clock.unsafeCurrentTimeNanos() : BigInt(0), exit)
      })
    ))

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
          Effect.as(end(span, Exit.succeed(value)), value)
        )))))
