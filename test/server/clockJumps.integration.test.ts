/**
 * The viewer's sign-in under a wall clock that jumps (NTP stepping it, a VM restored, a user setting
 * the date) while the server runs: a one-time code lives its ten minutes at most whichever way the
 * clock jumps, and the login form's wait after a wrong token is as long as it said.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { type JumpingClock, withJumpingClock } from "../clockJumps.js"
import { startIn } from "./harness.js"
import { send } from "./requests.js"

const call = (port: number, path: string, init: Parameters<typeof send>[2] = {}) => Effect.promise(() => send(port, path, init))

const hour = 60 * 60 * 1000

/** A server on a jumping clock: a code issued at the start, and the sign-in form's POST. */
const signIn = <A>(body: (server: {
  readonly jump: JumpingClock["jump"]
  readonly useCode: Effect.Effect<{ readonly status: number; readonly text: string }>
  readonly post: (token: string) => ReturnType<typeof call>
  readonly token: string
}) => Effect.Effect<A>) =>
  withJumpingClock(({ jump }) =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port, token } = server
      const code = yield* server.config.loginCodes.issueNow
      const own = { origin: `http://127.0.0.1:${port}`, "content-type": "application/json" }
      return yield* body({
        jump,
        token,
        useCode: call(port, `/login?code=${code}`),
        post: (given) => call(port, "/login", { method: "POST", headers: own, body: JSON.stringify({ token: given }) })
      })
    })
  )

describe("sign-in across a jump of the wall clock", () => {
  it.scoped("a one-time code issued before the clock steps back an hour expires ten minutes after it was printed, not seventy", () =>
    signIn(({ jump, useCode }) =>
      Effect.gen(function*() {
        yield* jump(-hour)
        yield* TestClock.adjust("10 minutes")
        const answer = yield* useCode
        expect(answer.status).toBe(401)
        expect(answer.text).toContain("That one-time URL has expired")
      })
    ))

  it.scoped("a code used a minute after it was printed signs in when the clock stepped back meanwhile", () =>
    signIn(({ jump, useCode }) =>
      Effect.gen(function*() {
        yield* jump(-hour)
        yield* TestClock.adjust("1 minute")
        expect((yield* useCode).status).toBe(303)
      })
    ))

  it.scoped("after a wrong token, a clock stepped back an hour does not lock the form for an hour: the wait is the second it said", () =>
    signIn(({ jump, post }) =>
      Effect.gen(function*() {
        expect((yield* post("guess")).status).toBe(401)
        yield* jump(-hour)
        const refused = yield* post("guess again")
        expect(refused.status).toBe(429)
        expect(refused.headers["retry-after"]).toBe("1")
        yield* TestClock.adjust("1 second")
        expect((yield* post("guess again")).status).toBe(401)
      })
    ))

  it.scoped("after a wrong token, a clock stepped forward does not open the form before the wait is over", () =>
    signIn(({ jump, post }) =>
      Effect.gen(function*() {
        for (let n = 0; n < 10; n++) {
          expect((yield* post("guess")).status).toBe(401)
          yield* TestClock.adjust(`${2 ** n} seconds`)
        }
        expect((yield* post("guess")).status).toBe(401)
        // The 11th wrong token: 15 minutes to wait. A clock stepped forward a day does not end it.
        yield* jump(24 * hour)
        expect((yield* post("guess")).status).toBe(429)
      })
    ))

  // Any local process can post to the form (its Origin is only a header): four wrong tokens locked the
  // user's right one out for up to 15 minutes, while the bearer header was never limited at all.
  it.scoped("the wait is for wrong tokens only: the right token signs in at once, however many wrong ones came before", () =>
    signIn(({ post, token }) =>
      Effect.gen(function*() {
        for (let n = 0; n < 4; n++) yield* post(`guess ${n}`)
        expect((yield* post("one more guess")).status).toBe(429)
        expect((yield* post(token)).status).toBe(204)
      })
    ))
})
