import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { opsOf } from "./opsOf.js"

const crockford = /^[0-9A-HJKMNP-TV-Z]{26}$/

describe("random ids", () => {
  it.effect("event ids, one by one and in batches, are distinct and ULID-shaped; session ids too", () =>
    Effect.gen(function*() {
      const ids = yield* IdGenerator.IdGenerator
      const events = [...(yield* ids.nextMany!("event", 10_000)), ...(yield* Effect.all(Array.from({ length: 1000 }, () => ids.next("event"))))]
      expect(new Set(events).size).toBe(events.length)
      for (const id of events) expect(id.slice(4)).toMatch(crockford)
      expect(events.every((id) => id.startsWith("evt_"))).toBe(true)
      const sessions = yield* Effect.all(Array.from({ length: 1000 }, () => ids.next("session")))
      expect(new Set(sessions).size).toBe(sessions.length)
      for (const id of sessions) expect(id.slice(5)).toMatch(crockford)
      // Within one millisecond (the test clock stands still), event ids still sort in creation order.
      expect([...events.slice(0, 10_000)].sort()).toEqual(events.slice(0, 10_000))
    }).pipe(Effect.provide(IdGenerator.layer)))
})

describe("random ids, what a draw costs", () => {
  // Every commit draws its events' ids (three commits a `read_file` step, bench/ops.ts): the clock
  // is read in the draw's own step, not by `currentTimeMillis`'s effect and a `map` (4 operations).
  it.effect("a draw (next, nextMany) is 2 Effect operations, and its ids carry the Clock's time", () =>
    Effect.gen(function*() {
      const ids = yield* IdGenerator.IdGenerator
      const baseline = yield* opsOf(Effect.void)
      expect((yield* opsOf(ids.nextMany!("event", 3))) - baseline).toBeLessThanOrEqual(2)
      expect((yield* opsOf(ids.next("event"))) - baseline).toBeLessThanOrEqual(2)
      expect((yield* opsOf(ids.next("turn"))) - baseline).toBeLessThanOrEqual(2)
      // The time part is the test clock's, moved or not (the first 10 characters after the prefix).
      const at0 = (yield* ids.next("session")).slice(5, 15)
      yield* TestClock.adjust("1000 days")
      const later = [(yield* ids.next("session")).slice(5, 15), ...(yield* ids.nextMany!("event", 2)).map((id) => id.slice(4, 14))]
      expect(at0).toBe("0000000000")
      expect(new Set(later).size).toBe(1)
      expect(later[0]! > at0).toBe(true)
    }).pipe(Effect.provide(IdGenerator.layer)))
})
