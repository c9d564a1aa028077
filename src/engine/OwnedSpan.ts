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
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

/**
 * Runs `self` in a new span (its children's parent), ended with `self`'s exit, as `Effect.withSpan`
 * does: the span is ended and the fiber given its context back in one step, however `self` ends.
 */
export const within = (name: string, options: Tracer.SpanOptions) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  // Uninterruptible until `self` runs under its match: the context is never left holding the span.
  // The match is `onExit`'s without its own uninterruptible region (this one is already there).
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.makeSpan(name, options), (span) =>
      Effect.flatMap(enter(span), (previous) =>
        Effect.matchCauseEffect(restore(self), {
          onFailure: (cause) => leave(span, previous, Exit.failCause(cause)),
          onSuccess: (value) => leave(span, previous, Exit.succeed(value))
        }))))

/** Makes `span` the fiber's current span; answers the context it replaced. */
const enter = (span: Tracer.Span): Effect.Effect<Context.Context<never>> =>
  FiberRef.getAndUpdate(FiberRef.currentContext, (context) => Context.add(context, Tracer.ParentSpan, span))

/**
 * Gives the fiber its context back and ends the span as `Effect.withSpan` does — at the clock's
 * time, or at 0 when timing is off; once — in one step; then ends as `exit` says.
 */
const leave = <A, E>(span: Tracer.Span, previous: Context.Context<never>, exit: Exit.Exit<A, E>): Effect.Effect<A, E> =>
  Effect.zipRight(
    FiberRef.set(FiberRef.currentContext, previous),
    Effect.withFiberRuntime<A, E>((fiber) => {
      if (span.status._tag !== "Ended") {
        const timing = fiber.getFiberRef(FiberRef.currentTracerTimingEnabled)
        span.end(timing ? Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos() : BigInt(0), exit)
      }
      return exit
    })
  )

/**
 * Runs `self` in a new span (its children's parent), ended with `self`'s value. Only for an effect
 * that cannot fail and that nothing interrupts (it runs uninterruptible here; an interruptible
 * region inside must recover from an interruption, as `TurnDriver.run`'s wait for its steps does):
 * were it to stop half-way, the span would stay open and the fiber keep it as its parent.
 */
export const around = <A, R>(name: string, options: Tracer.SpanOptions, self: Effect.Effect<A, never, R>): Effect.Effect<A, never, R> =>
  Effect.uninterruptible(Effect.flatMap(Effect.makeSpan(name, options), (span) =>
    Effect.flatMap(enter(span), (previous) => Effect.flatMap(self, (value) => leave(span, previous, Exit.succeed(value))))))
