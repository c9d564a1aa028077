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
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

/**
 * The runtime fiber's own setter, which `FiberRef.set`, `update` and `getAndUpdate` call inside their
 * one `withFiberRuntime` (effect's `core.fiberRefModify`), and which effect's `RuntimeFiber` type does
 * not declare. Calling it here is what those do, without their `succeed` and the `flatMap` after it.
 */
type SettableFiber = Fiber.RuntimeFiber<unknown, unknown> & {
  readonly setFiberRef: <X>(fiberRef: FiberRef.FiberRef<X>, value: X) => void
}

const setContext = (fiber: Fiber.RuntimeFiber<unknown, unknown>, context: Context.Context<never>): void =>
  (fiber as SettableFiber).setFiberRef(FiberRef.currentContext, context)

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
      enter(span, (previous) =>
        Effect.matchCauseEffect(restore(self), {
          onFailure: (cause) => leave(span, previous, Exit.failCause(cause)),
          onSuccess: (value) => leave(span, previous, Exit.succeed(value))
        }))))

/**
 * {@link within} for an effect run where nothing interrupts it: inside an uninterruptible region the
 * caller already holds (`LiveSession.commit`, once per batch). `within`'s own region would change
 * nothing there, yet cost 3 Effect operations (the mask and the `restore` around `self`) and two
 * frames on the stack; here the span is made, entered and left as `within` does, without them.
 */
export const withinUninterruptible = (name: string, options: Tracer.SpanOptions) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.makeSpan(name, options), (span) =>
    enter(span, (previous) =>
      Effect.matchCauseEffect(self, {
        onFailure: (cause) => leave(span, previous, Exit.failCause(cause)),
        onSuccess: (value) => leave(span, previous, Exit.succeed(value))
      })))

/**
 * Runs `self` with `span` as its children's parent, as `Effect.withParentSpan` does, without making a
 * span of its own: the span is put in the fiber's context and the context given back however `self`
 * ends, as {@link within} does. `Effect.withParentSpan` is `Effect.provideService`, whose `locally`
 * of the context is an acquire/use/release: 25 Effect operations, once per turn for the
 * caller's span (`SessionEngine`'s `runTurn`), against 9 here.
 */
export const under = (span: Tracer.AnySpan) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    enter(span, (previous) =>
      Effect.matchCauseEffect(restore(self), {
        onFailure: (cause) => giveBack(previous, Exit.failCause(cause)),
        onSuccess: (value) => giveBack(previous, Exit.succeed(value))
      })))

/** Gives the fiber the context `under` replaced, then ends as `exit` says. */
const giveBack = <A, E>(previous: Context.Context<never>, exit: Exit.Exit<A, E>): Effect.Effect<A, E> =>
  Effect.withFiberRuntime<A, E>((fiber) => {
    setContext(fiber, previous)
    return exit
  })

/**
 * Makes `span` the fiber's current span and goes on with the context it replaced, in one step: what
 * `FiberRef.getAndUpdate` does ({@link setContext}), without its `succeed` and the `flatMap` after it.
 */
const enter = <A, E, R>(span: Tracer.AnySpan, andThen: (previous: Context.Context<never>) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const previous = fiber.getFiberRef(FiberRef.currentContext)
    setContext(fiber, Context.add(previous, Tracer.ParentSpan, span))
    return andThen(previous)
  })

/**
 * Gives the fiber its context back and ends the span as `Effect.withSpan` does — at the clock's
 * time, or at 0 when timing is off; once — in one step; then ends as `exit` says. One
 * `withFiberRuntime` sets the context as `FiberRef.set` would ({@link setContext}), without the
 * `zipRight` and the second step: 3 Effect operations fewer a span.
 */
const leave = <A, E>(span: Tracer.Span, previous: Context.Context<never>, exit: Exit.Exit<A, E>): Effect.Effect<A, E> =>
  Effect.withFiberRuntime<A, E>((fiber) => {
    setContext(fiber, previous)
    if (span.status._tag !== "Ended") {
      const timing = fiber.getFiberRef(FiberRef.currentTracerTimingEnabled)
      span.end(timing ? Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos() : BigInt(0), exit)
    }
    return exit
  })

/**
 * Runs `self` in a new span (its children's parent), ended with `self`'s value. Only for an effect
 * that cannot fail and that nothing interrupts (it runs uninterruptible here; an interruptible
 * region inside must recover from an interruption, as `TurnDriver.run`'s wait for its steps does):
 * were it to stop half-way, the span would stay open and the fiber keep it as its parent.
 */
export const around = <A, R>(name: string, options: Tracer.SpanOptions, self: Effect.Effect<A, never, R>): Effect.Effect<A, never, R> =>
  Effect.uninterruptible(Effect.flatMap(Effect.makeSpan(name, options), (span) =>
    enter(span, (previous) => Effect.flatMap(self, (value) => leave(span, previous, Exit.succeed(value))))))
