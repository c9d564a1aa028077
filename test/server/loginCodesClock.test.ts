/**
 * Login codes keep the time of an effect `Clock`: under `TestClock` a code expires after ten minutes
 * of the test's time exactly. `issue()` used to fall back to the wall clock (`Date.now()`): a code
 * issued so and used at the test's time (the login route reads the `Clock`) never expired.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { Security, ServerConfig } from "../../src/server.js"

const justBefore = Duration.subtract(Duration.minutes(10), Duration.millis(1))

describe("login codes on the effect Clock", () => {
  it.effect("issueNow / consumeNow: a code signs in until 10 minutes less 1 ms, and is expired at 10 minutes exactly", () =>
    Effect.gen(function*() {
      const codes = Security.loginCodes()
      yield* TestClock.adjust("1 hour")
      const early = yield* codes.issueNow
      const late = yield* codes.issueNow
      yield* TestClock.adjust(justBefore)
      expect(yield* codes.consumeNow(early)).toBe("signedIn")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* codes.consumeNow(late)).toBe("expired")
    }))

  it.effect("ServerConfig.layer: issue() without a time is on the layer's Clock, not the wall clock", () =>
    Effect.gen(function*() {
      const config = yield* ServerConfig.ServerConfig
      const first = config.loginCodes.issue()
      const second = config.loginCodes.issue()
      yield* TestClock.adjust(justBefore)
      // Used as the login route used it: at the fiber's Clock time.
      expect(config.loginCodes.consume(first, yield* Clock.currentTimeMillis)).toBe("signedIn")
      yield* TestClock.adjust(Duration.millis(1))
      expect(config.loginCodes.consume(second, yield* Clock.currentTimeMillis)).toBe("expired")
    }).pipe(Effect.provide(ServerConfig.layer({ token: "t" }))))
})
