/**
 * The fiber `KeptShapes` parks to keep the run loop's shapes is one of `Fiber.roots`: an embedder's
 * shutdown that interrupts every root must still end.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as KeptShapes from "../../src/engine/KeptShapes.js"

describe("KeptShapes' parked fiber", () => {
  // Until December 2026 it was parked inside an uninterruptible region: `Fiber.interruptAll(Fiber.roots)` never returned.
  it.live("interrupting every root fiber ends, and leaves none of the kept ones suspended", () =>
    Effect.gen(function*() {
      const earlier = new Set(yield* Fiber.roots)
      KeptShapes.hold()
      const before = (yield* Fiber.roots).filter((fiber) => !earlier.has(fiber))
      expect(before.length).toBeGreaterThan(0)
      const ended = yield* Fiber.interruptAll(before).pipe(Effect.as(true), Effect.timeoutTo({ duration: "20 seconds", onSuccess: () => true, onTimeout: () => false }))
      expect(ended).toBe(true)
      const suspended = (yield* Fiber.roots).filter((fiber) => before.includes(fiber))
      expect(suspended).toEqual([])
    }))
})
