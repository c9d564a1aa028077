import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import * as OwnedSpan from "../../src/engine/OwnedSpan.js"
import { opsOf } from "./opsOf.js"

// Live clock: the spans' start and end times are read from it, and a test clock reads 0.
/**
 * `OwnedSpan` puts its spans in the fiber's context itself instead of through `Effect.withSpan`'s
 * scoped regions: what a tracer is handed, what the span's children and `Effect.currentSpan` see,
 * and how it ends must still be what `Effect.withSpan` gives, in every case the engine's spans meet.
 */
type Call = { readonly name: string; readonly parent: string | undefined; readonly links: number; readonly kind: string; readonly timed: boolean }

/** A tracer over the default one that records each call and span, by name rather than by id (ids differ between two runs). */
const recording = Effect.map(Effect.tracer, (base) => {
  const calls: Array<Call> = []
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = base.span(name, parent, context, links, startTime, kind, options)
      calls.push({
        name,
        parent: Option.match(parent, { onNone: () => undefined, onSome: (p) => (p._tag === "Span" ? p.name : `external ${p.spanId}`) }),
        links: links.length,
        kind,
        timed: startTime !== BigInt(0)
      })
      spans.push(span)
      return span
    },
    context: base.context
  })
  return { tracer, calls, spans }
})

const seen = (spans: ReadonlyArray<Tracer.Span>) =>
  spans.map((s) => ({
    name: s.name,
    attributes: Object.fromEntries(s.attributes),
    status: s.status._tag,
    exit: s.status._tag === "Ended" ? Exit.isSuccess(s.status.exit) ? "success" : Cause.isInterruptedOnly(s.status.exit.cause) ? "interrupted" : "failure" : undefined,
    ended: s.status._tag === "Ended" && s.status.endTime !== BigInt(0)
  }))

/** What `inner` sees inside the span: its current span's name, and the parent of a span made there. */
const inner = (fail: boolean) =>
  Effect.gen(function*() {
    const current = yield* Effect.orElseSucceed(Effect.currentSpan, () => ({ name: "none" }))
    yield* Effect.void.pipe(Effect.withSpan("child"))
    if (fail) return yield* Effect.fail("no")
    return current.name
  })

/** The same program around one span, made by `Effect.withSpan` or by `OwnedSpan`. */
const program = (wrap: (self: Effect.Effect<string, string>) => Effect.Effect<string, string>, fail: boolean) =>
  Effect.gen(function*() {
    const during = yield* Effect.exit(wrap(inner(fail)))
    // The context is given back: the current span after is the one before.
    const after = yield* Effect.option(Effect.currentSpan)
    return { during: Exit.isSuccess(during) ? during.value : "failed", after: Option.getOrUndefined(after)?.name }
  })

const cases: ReadonlyArray<readonly [string, (e: Effect.Effect<any, any>) => Effect.Effect<any, any>]> = [
  ["in a caller's span", (e) => e.pipe(Effect.withSpan("caller"))],
  ["with the fiber's span annotations and links", (e) =>
    e.pipe(
      Effect.annotateSpans({ who: "fiber", attempt: 0 }),
      Effect.linkSpans(Tracer.externalSpan({ spanId: "l1", traceId: "t1" }), { why: "test" }),
      Effect.withSpan("caller")
    )],
  ["under an external parent", (e) => e.pipe(Effect.withParentSpan(Tracer.externalSpan({ spanId: "x1", traceId: "t1" })))],
  ["with timing off", (e) => e.pipe(Effect.withTracerTiming(false), Effect.withSpan("caller"))],
  ["with the tracer off", (e) => e.pipe(Effect.withTracerEnabled(false), Effect.withSpan("caller"))],
  ["under a span that disables propagation", (e) =>
    e.pipe(Effect.withSpan("quiet", { context: Tracer.DisablePropagation.context(true) }), Effect.withSpan("caller"))]
]

type Wrap = (self: Effect.Effect<string, string>) => Effect.Effect<string, string>

/** `program` around a span made by `Effect.withSpan` (`expected`) and by `OwnedSpan` (`actual`): the same result, tracer calls and spans. */
const sameSpans = (expected: Wrap, actual: Wrap, fail: boolean, around: (e: Effect.Effect<any, any>) => Effect.Effect<any, any>) =>
  Effect.gen(function*() {
    const wanted = yield* recording
    const a = yield* program(expected, fail).pipe(around, Effect.withTracer(wanted.tracer))
    const made = yield* recording
    const b = yield* program(actual, fail).pipe(around, Effect.withTracer(made.tracer))
    expect(b).toEqual(a)
    expect(made.calls).toEqual(wanted.calls)
    expect(seen(made.spans)).toEqual(seen(wanted.spans))
  })

const options = (extra: Tracer.SpanOptions = {}): Tracer.SpanOptions => ({
  captureStackTrace: false,
  attributes: { sessionId: "s1", attempt: 1 },
  ...extra
})

describe("OwnedSpan", () => {
  for (const [label, around] of cases) {
    for (const fail of [false, true]) {
      for (const [variant, extra] of [["", {}], [" as a root", { root: true }], [" with a kind and links", { kind: "client" as const, links: [{ _tag: "SpanLink" as const, span: Tracer.externalSpan({ spanId: "l2", traceId: "t2" }), attributes: {} }] }]] as const) {
        it.live(`within: ${label}${variant}${fail ? ", failing" : ""}, the same spans as Effect.withSpan`, () =>
          sameSpans((self) => self.pipe(Effect.withSpan("span", options(extra))), OwnedSpan.within("span", options(extra)), fail, around))
      }
    }
  }

  // `LiveSession.commit` spans its append from inside its own uninterruptible region.
  for (const [label, around] of cases) {
    for (const fail of [false, true]) {
      it.live(`withinUninterruptible: ${label}${fail ? ", failing" : ""}, in an uninterruptible region, the same spans as Effect.withSpan`, () =>
        sameSpans(
          (self) => Effect.uninterruptible(self.pipe(Effect.withSpan("span", options()))),
          (self) => Effect.uninterruptible(self.pipe(OwnedSpan.withinUninterruptible("span", options()))),
          fail,
          around
        ))
    }
  }

  it.live("withinUninterruptible: an interruption inside its effect's own interruptible region ends its span interrupted", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recording
      const fiber = yield* Effect.uninterruptible(Effect.interruptible(Effect.never).pipe(OwnedSpan.withinUninterruptible("span", options()))).pipe(Effect.withTracer(tracer), Effect.fork)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      expect(seen(spans)).toEqual([{ name: "span", attributes: { sessionId: "s1", attempt: 1 }, status: "Ended", exit: "interrupted", ended: true }])
    }))

  // `runTurn`'s stream asks for its turn under the caller's span (`SessionEngine`'s `turnStream`).
  for (const [label, around] of cases) {
    for (const fail of [false, true]) {
      for (const [which, parent] of [["a span made here", "made"], ["an external span", "external"]] as const) {
        it.live(`under: ${label}, ${which}${fail ? ", failing" : ""}, the same spans as Effect.withParentSpan`, () =>
          Effect.gen(function*() {
            const span = parent === "made"
              ? yield* Effect.makeSpan("given", options())
              : Tracer.externalSpan({ spanId: "p1", traceId: "t1" })
            yield* sameSpans((self) => self.pipe(Effect.withParentSpan(span)), OwnedSpan.under(span), fail, around)
          }))
      }
    }
  }

  it.live("under: an interrupted effect gives the fiber its context back", () =>
    Effect.gen(function*() {
      const span = Tracer.externalSpan({ spanId: "p1", traceId: "t1" })
      let after: { readonly interrupted: boolean; readonly parent: unknown } | undefined
      // The fiber goes on after the interruption (uninterruptible but for the wait) and reads its parent span then.
      const fiber = yield* Effect.fork(Effect.uninterruptible(Effect.gen(function*() {
        const cut = yield* Effect.exit(Effect.interruptible(Effect.never).pipe(OwnedSpan.under(span)))
        after = { interrupted: Exit.isInterrupted(cut), parent: Option.getOrUndefined(yield* Effect.option(Effect.currentParentSpan)) }
      })))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      expect(after).toEqual({ interrupted: true, parent: undefined })
    }))

  it.live("around: the same spans as Effect.withSpan, and the context given back", () =>
    sameSpans(
      (self) => self.pipe(Effect.withSpan("span", options())),
      (self) => OwnedSpan.around("span", options(), Effect.orDie(self)),
      false,
      Effect.withSpan("caller")
    ))

  it.live("within: an interrupted effect ends its span interrupted", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recording
      const fiber = yield* Effect.never.pipe(OwnedSpan.within("span", options()), Effect.withTracer(tracer), Effect.fork)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      expect(seen(spans)).toEqual([{ name: "span", attributes: { sessionId: "s1", attempt: 1 }, status: "Ended", exit: "interrupted", ended: true }])
    }))

  // A step runs about 7 of these spans (bench/ops.ts): each Effect operation a span takes is paid
  // 7 times a step. `within` takes 12 operations besides its effect's, `around` 9 (were 17 and 14:
  // the context set and got back through `FiberRef`'s effects, each its own step and `flatMap`).
  it.effect("a span's own Effect operations: within at most 12, around, withinUninterruptible and under at most 9", () =>
    Effect.gen(function*() {
      const bare = yield* opsOf(Effect.void)
      expect((yield* opsOf(Effect.void.pipe(OwnedSpan.within("span", options())))) - bare).toBeLessThanOrEqual(12)
      expect((yield* opsOf(OwnedSpan.around("span", options(), Effect.void))) - bare).toBeLessThanOrEqual(9)
      // Inside a region the caller holds, no region of its own: 3 fewer than `within`.
      const uninterruptible = (self: Effect.Effect<void>) => opsOf(Effect.uninterruptible(self))
      const bareHeld = yield* uninterruptible(Effect.void)
      expect((yield* uninterruptible(Effect.void.pipe(OwnedSpan.withinUninterruptible("span", options())))) - bareHeld).toBeLessThanOrEqual(9)
      // A parent given, no span made: 9 (`Effect.withParentSpan` takes 25).
      expect((yield* opsOf(Effect.void.pipe(OwnedSpan.under(Tracer.externalSpan({ spanId: "p1", traceId: "t1" }))))) - bare).toBeLessThanOrEqual(9)
    }))
})
