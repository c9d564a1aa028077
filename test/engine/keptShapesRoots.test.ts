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
  it.live("it is a root, and interrupting it ends it", () =>
    Effect.gen(function*() {
      // Made once per process: another test file in this worker may have made it already.
      KeptShapes.hold()
      const parked = KeptShapes.parkedFiber()
      expect(parked).toBeDefined()
      expect(yield* Fiber.roots).toContain(parked)
      const ended = yield* Fiber.interruptAll([parked!]).pipe(Effect.as(true), Effect.timeoutTo({ duration: "20 seconds", onSuccess: () => true, onTimeout: () => false }))
      expect(ended).toBe(true)
      expect(yield* Fiber.roots).not.toContain(parked)
    }))
})
