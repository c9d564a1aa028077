/**
 * The server's scheduler (`EventLoop`): while hundreds of fibers keep working, Node's event loop
 * still turns (sockets are read, `/healthz` answers). Effect's default scheduler runs them all
 * before the loop turns once. Counted in work done, not in time: no timing assumption.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { EventLoop } from "../../src/server.js"

const fibers = 200
const steps = 1_000

/** The work of `fibers` fibers yielding `steps` times each, and how much of it was done when the loop first turned. */
const workAndFirstTurn = async (run: (effect: Effect.Effect<void>) => Effect.Effect<void>) => {
  let done = 0
  const work = Effect.forEach(
    Array.from({ length: fibers }),
    () => Effect.forEach(Array.from({ length: steps }), () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => void done++)), { discard: true }),
    { concurrency: "unbounded", discard: true }
  )
  const turned = new Promise<number>((resolve) => setImmediate(() => resolve(done)))
  await Effect.runPromise(run(work))
  return { atTurn: await turned, total: done }
}

describe("EventLoop.scheduler", () => {
  it("lets the loop turn long before busy fibers are done; the default scheduler does not", async () => {
    const sliced = await workAndFirstTurn(EventLoop.sliced())
    expect(sliced.total).toBe(fibers * steps)
    expect(sliced.atTurn).toBeLessThan(sliced.total / 2)
    const plain = await workAndFirstTurn((effect) => effect)
    expect(plain.atTurn).toBe(plain.total)
  })

  it("runs every fiber to its end, in the order a single fiber's steps were written", async () => {
    const seen: Array<number> = []
    await Effect.runPromise(
      Effect.forEach(Array.from({ length: 5_000 }, (_, i) => i), (i) => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => void seen.push(i))), { discard: true }).pipe(EventLoop.sliced(1))
    )
    expect(seen).toEqual(Array.from({ length: 5_000 }, (_, i) => i))
  })
})
