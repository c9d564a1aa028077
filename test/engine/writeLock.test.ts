/**
 * The lock each commit of a session holds (LiveSession.WriteLock): batches are stored one after the
 * other, in the order their commits asked for the lock, and a holder that fails or dies lets go.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { WriteLock } from "../../src/engine/LiveSession.js"

describe("LiveSession.WriteLock", () => {
  it.effect("holders run one at a time, in the order they asked, each to its end", () =>
    Effect.gen(function*() {
      const lock = new WriteLock()
      const log: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const holder = (name: string, wait?: Deferred.Deferred<void>) =>
        lock.holding(Effect.gen(function*() {
          log.push(`${name} in`)
          if (wait !== undefined) yield* Deferred.await(wait)
          yield* Effect.yieldNow()
          log.push(`${name} out`)
          return name
        }))
      const first = yield* Effect.fork(holder("a", gate))
      // `a` holds the lock and waits on the gate; b, c and d queue behind it in this order.
      yield* Effect.yieldNow()
      const rest = yield* Effect.fork(Effect.all([holder("b"), holder("c"), holder("d")], { concurrency: "unbounded" }))
      yield* Effect.yieldNow()
      expect(log).toEqual(["a in"])
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe("a")
      expect(yield* Fiber.join(rest)).toEqual(["b", "c", "d"])
      expect(log).toEqual(["a in", "a out", "b in", "b out", "c in", "c out", "d in", "d out"])
    }))

  it.effect("a holder that fails or dies lets go: the next one runs", () =>
    Effect.gen(function*() {
      const lock = new WriteLock()
      const failed = yield* Effect.exit(lock.holding(Effect.fail("store failed")))
      expect(Exit.isFailure(failed)).toBe(true)
      const died = yield* Effect.exit(lock.holding(Effect.die(new Error("boom"))))
      expect(Exit.isFailure(died)).toBe(true)
      expect(yield* lock.holding(Effect.succeed("after"))).toBe("after")
    }))
})
