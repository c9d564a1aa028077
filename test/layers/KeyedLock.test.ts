import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as KeyedLock from "../../src/layers/KeyedLock.js"

describe("KeyedLock", () => {
  it.effect("serializes one key, leaves other keys free, in the order callers asked", () =>
    Effect.gen(function*() {
      const lock = yield* KeyedLock.make<string>()
      const order: Array<string> = []
      const release = yield* Deferred.make<void>()
      const holding = yield* Deferred.make<void>()
      const first = yield* Effect.fork(lock.withLock("a")(Effect.gen(function*() {
        order.push("a1 start")
        yield* Deferred.succeed(holding, undefined)
        yield* Deferred.await(release)
        order.push("a1 end")
      })))
      yield* Deferred.await(holding)
      const second = yield* Effect.fork(lock.withLock("a")(Effect.sync(() => order.push("a2"))))
      // Another key is not held up by "a".
      yield* lock.withLock("b")(Effect.sync(() => order.push("b")))
      yield* Effect.yieldNow()
      expect(order).toEqual(["a1 start", "b"])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(order).toEqual(["a1 start", "b", "a1 end", "a2"])
    }))

  it.effect("a failure or an interruption releases the lock", () =>
    Effect.gen(function*() {
      const lock = yield* KeyedLock.make<string>()
      yield* Effect.either(lock.withLock("k")(Effect.fail("boom")))
      const stuck = yield* Effect.fork(lock.withLock("k")(Effect.never))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(stuck)
      expect(yield* lock.withLock("k")(Effect.succeed("free"))).toBe("free")
    }))
})
