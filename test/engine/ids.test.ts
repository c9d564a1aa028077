import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as IdGenerator from "../../src/services/IdGenerator.js"

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
