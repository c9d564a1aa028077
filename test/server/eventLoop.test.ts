/**
 * The server's scheduler (`EventLoop`): while hundreds of fibers keep working, Node's event loop
 * still turns (sockets are read, `/healthz` answers). Effect's default scheduler runs them all
 * before the loop turns once. Counted in work done, not in time: no timing assumption.
 */
import { describe, expect, it, vi } from "@effect/vitest"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"
import { type AddressInfo, connect, createServer, type Socket } from "node:net"
import { EventLoop, Server } from "../../src/server.js"

/** Every op and every suspension of the fibers it supervises (with op supervision on). */
class OpsAndYields extends Supervisor.AbstractSupervisor<void> {
  ops = 0
  suspends = 0
  readonly value = Effect.void
  override onEffect() {
    this.ops++
  }
  override onSuspend() {
    this.suspends++
  }
}

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

  it("runs about one slice of work per turn of the loop, however long the work goes on", async () => {
    // A slice of 0 ms ends after each task: the loop must then turn after every task or two. (Runs
    // used to pile up — each slice's end queued a run for the next turn beside the one a fiber
    // had queued — so the work done per turn doubled turn after turn.)
    let done = 0
    const perTurn: Array<number> = []
    let last = 0
    let working = true
    const count = () => {
      perTurn.push(done - last)
      last = done
      if (working) setImmediate(count)
    }
    setImmediate(count)
    const work = Effect.forEach(
      Array.from({ length: 50 }),
      () => Effect.forEach(Array.from({ length: 40 }), () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => void done++)), { discard: true }),
      { concurrency: "unbounded", discard: true }
    )
    await Effect.runPromise(work.pipe(EventLoop.sliced(0)))
    working = false
    expect(done).toBe(50 * 40)
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(4)
  })

  it("has a fiber yield in the middle of a run once the slice is used, not only after 2,048 ops", async () => {
    // Each op here is long (a busy loop of 1 ms, past the slice of 0 ms): the loop turns between
    // ops, where Effect's own rule would run 2,048 of them first.
    let done = 0
    let atTurn = -1
    setImmediate(() => (atTurn = done))
    const busy = () => {
      const until = performance.now() + 1
      while (performance.now() < until) { /* work */ }
    }
    await Effect.runPromise(
      Effect.forEach(Array.from({ length: 200 }), () => Effect.sync(() => { busy(); done++ }), { discard: true }).pipe(EventLoop.sliced(0))
    )
    expect(done).toBe(200)
    expect(atTurn).toBeGreaterThanOrEqual(0)
    expect(atTurn).toBeLessThan(200)
  })

  it("yields in the middle of a run without a scheduling-priority region per yield", async () => {
    // Effect's run loop wraps a yield whose `shouldYield` answer is a number in
    // `withSchedulingPriority` (an acquireUseRelease: a dozen ops and two copies of the fiber's
    // FiberRefs each). Counted: the ops and suspensions of 3,200 steps with a slice of 0 ms (a yield
    // every 32 ops) against the same with a slice of a minute (a yield per 2,048 ops): what each
    // extra yield costs in ops.
    const run = async (sliceMs: number) => {
      const counter = new OpsAndYields()
      let done = 0
      await Effect.runPromise(
        Effect.withRuntimeFlagsPatch(
          Effect.supervised(Effect.forEach(Array.from({ length: 3_200 }), () => Effect.sync(() => void done++), { discard: true }), counter),
          RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)
        ).pipe(EventLoop.sliced(sliceMs))
      )
      expect(done).toBe(3_200)
      return counter
    }
    const long = await run(60_000)
    const short = await run(0)
    const yields = short.suspends - long.suspends
    expect(yields).toBeGreaterThan(50)
    // A plain yield is 3 ops (the yield, the step it wraps, the resume); the region made it 25.
    expect((short.ops - long.ops) / yields).toBeLessThan(10)
  })

  it("counts the work Node defers to a task's ticks (a response's corked write) in the slice", async () => {
    // A response's `write` only corks its socket and queues a tick that writes (`writev`) once the
    // current callback is done: 500 clients' writes of a big batch, queued in one slice, were
    // 100–250 ms of kernel copies after it, before the loop could turn. Here the first task's tick
    // takes the rest of a 50 ms slice; the loop must turn before the second task runs (a
    // `setImmediate` the first queued runs before it), not after both tasks and both ticks.
    const order: Array<string> = []
    const task = (name: string) =>
      Effect.sync(() => {
        order.push(name)
        if (name === "first") setImmediate(() => order.push("turn"))
        process.nextTick(() => {
          order.push(`${name}'s write`)
          const until = performance.now() + 60
          while (performance.now() < until) { /* the kernel copying a big batch */ }
        })
      })
    await Effect.runPromise(
      // From a yield: both tasks run in the scheduler's runs (a fiber's very first steps run where it is started).
      Effect.zipRight(Effect.yieldNow(), Effect.zipRight(task("first"), Effect.zipRight(Effect.yieldNow(), task("second")))).pipe(EventLoop.sliced(50))
    )
    await new Promise((resolve) => setImmediate(resolve))
    expect(order.slice(0, 4)).toEqual(["first", "first's write", "turn", "second"])
  })

  it("turns the loop after a short slice while connections are arriving (Node accepts one per turn)", async () => {
    // A slice of a minute: without `arriving` the 200 ms of work runs before the loop turns; with
    // connections arriving, the slice is `arrivingSliceMs` and the loop turns long before the end.
    const busy = () => {
      const until = performance.now() + 1
      while (performance.now() < until) { /* work */ }
    }
    const doneAtFirstTurn = async (arriving: boolean) => {
      let done = 0
      let atTurn = -1
      setImmediate(() => (atTurn = done))
      await Effect.runPromise(
        Effect.forEach(Array.from({ length: 200 }), () => Effect.sync(() => { busy(); done++ }), { discard: true }).pipe(EventLoop.sliced(60_000, undefined, () => arriving))
      )
      expect(done).toBe(200)
      // The loop's first turn, if it had not come during the work.
      await new Promise((resolve) => setImmediate(resolve))
      return atTurn
    }
    expect(await doneAtFirstTurn(false)).toBe(200)
    const arriving = await doneAtFirstTurn(true)
    expect(arriving).toBeGreaterThanOrEqual(0)
    expect(arriving).toBeLessThan(200)
  })

  it("runs no fiber work in a turn of the loop that accepted a connection, and a slice every `maxAcceptingTurns` of them", async () => {
    // Node accepts one connection per turn of its loop: 100 clients connecting at once take 100
    // turns to accept, and whatever fiber work runs in each turn delays every connection still in
    // the listen queue (a `/healthz` probe behind them). Counted: the steps of busy fibers (a slice
    // of 0 ms: one step a slice) done between the first and the last accept, with the server's count
    // of accepts given to the scheduler and without it. The clock is a fake one that only the steps
    // move (0.01 ms each), so the hold runs out by its turns, not by `maxHeldMs` of a loaded machine.
    let now = 0
    const clock = vi.spyOn(performance, "now").mockImplementation(() => now)
    const connections = 100
    const stepsWhileAccepting = async (withCount: boolean) => {
      let done = 0
      let accepts = 0
      const atAccept: Array<number> = []
      const server = createServer((socket) => {
        accepts++
        atAccept.push(done)
        socket.destroy()
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const { port } = server.address() as AddressInfo
      const clients: Array<Socket> = []
      // The clients connect once the work is under way (all at once: in the listen queue before the next poll).
      const step = Effect.sync(() => {
        now += 0.01
        if (++done === 100) for (let i = 0; i < connections; i++) clients.push(connect(port, "127.0.0.1").on("error", () => undefined))
      })
      const work = Effect.forEach(
        Array.from({ length: 50 }),
        () => Effect.forEach(Array.from({ length: 400 }), () => Effect.zipRight(Effect.yieldNow(), step), { discard: true }),
        { concurrency: "unbounded", discard: true }
      )
      await Effect.runPromise(work.pipe(EventLoop.sliced(0, undefined, undefined, withCount ? () => accepts : undefined)))
      while (accepts < connections) await new Promise((resolve) => setImmediate(resolve))
      for (const client of clients) client.destroy()
      await new Promise((resolve) => server.close(resolve))
      expect(done).toBe(50 * 400)
      return atAccept[connections - 1]! - atAccept[0]!
    }
    try {
      // Without the count, a step (at least) in every turn that accepted one.
      expect(await stepsWhileAccepting(false)).toBeGreaterThanOrEqual(connections / 2)
      // With it, a slice every 32 such turns: 3 of them in 100 turns.
      expect(await stepsWhileAccepting(true)).toBeLessThanOrEqual(connections / 32 + 2)
    } finally {
      clock.mockRestore()
    }
  })

  it("runs a fiber's work at least every `maxHeldMs` while connections keep coming, a slice of more than one task (a fake clock)", async () => {
    // A flood of connections (two clients connecting and closing, no token needed) means a connection
    // accepted in every turn of the loop, for as long as it goes on. The work held back for them must
    // still run often and in slices long enough for a cancel's tasks: it ran one task every
    // `maxAcceptingTurns` + 1 turns (50 tasks of a fiber took 0.1–3.3 s, a `serve` cancel up to 4.5 s).
    // Driven here with a simulated accept stream (a connection counted each turn, 0.25 ms of the
    // fake clock each) and tasks of 0.01 ms each: counted, the fiber's tasks run per connection accepted.
    let now = 0
    const clock = vi.spyOn(performance, "now").mockImplementation(() => now)
    try {
      const floodTurns = 2_000
      let accepted = 0
      let flooding = true
      let done = 0
      let doneInFlood = 0
      const acceptTurn = () => {
        if (accepted === floodTurns) {
          flooding = false
          doneInFlood = done
          return
        }
        accepted++
        now += 0.25
        setImmediate(acceptTurn)
      }
      const task = Effect.sync(() => {
        now += 0.01
        done++
      })
      const fiber = Effect.whileLoop({ while: () => flooding, body: () => Effect.zipRight(Effect.yieldNow(), task), step: () => undefined })
      setImmediate(acceptTurn)
      await Effect.runPromise(fiber.pipe(EventLoop.sliced(EventLoop.defaultSliceMs, undefined, () => flooding, () => accepted)))
      // A hold of at most `maxHeldMs` (20 turns of 0.25 ms) then a slice of `heldSliceMs` (100 tasks):
      // about 5 tasks a connection. It was one task every 33.
      expect(doneInFlood / floodTurns).toBeGreaterThanOrEqual(1)
      // Still held back: fewer tasks than the same simulated time free of accepts would run (25 a connection).
      expect(doneInFlood / floodTurns).toBeLessThan(12)
    } finally {
      clock.mockRestore()
    }
  })

  it("runs the fibers `urgent` names ahead of the queued work, from their first step", async () => {
    class Probe extends Context.Tag("test/Probe")<Probe, true>() {}
    const urgent: EventLoop.Urgent = (fiber) => Context.getOption(fiber.currentContext, Probe)._tag === "Some"
    /** How many steps of 50 busy fibers ran while a probe of 5 steps (urgent or not) went from start to end. */
    const stepsWhileProbing = async (probeIsUrgent: boolean) => {
      let done = 0
      const busy = Effect.forEach(
        Array.from({ length: 50 }),
        () => Effect.forEach(Array.from({ length: 40 }), () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => void done++)), { discard: true }),
        { concurrency: "unbounded", discard: true }
      )
      const probe = Effect.gen(function*() {
        const start = done
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        return done - start
      })
      return Effect.runPromise(
        Effect.gen(function*() {
          const work = yield* Effect.fork(busy)
          // Once the busy fibers have all queued their steps.
          yield* Effect.repeat(Effect.yieldNow(), { until: () => done > 100 })
          const waited = yield* (probeIsUrgent ? Effect.provideService(probe, Probe, true) : probe)
          yield* Fiber.join(work)
          return waited
        }).pipe(EventLoop.sliced(0, urgent))
      )
    }
    expect(await stepsWhileProbing(true)).toBeLessThan(20)
    expect(await stepsWhileProbing(false)).toBeGreaterThan(100)
  })

  it("names the fibers serving /healthz urgent for serve, and no other request's", async () => {
    const servesHealthAt = (url: string) =>
      Effect.runSync(Effect.withFiberRuntime((fiber) => Effect.succeed(Server.servesHealth(fiber))).pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request(`http://127.0.0.1${url}`)))
      ))
    expect(servesHealthAt("/healthz")).toBe(true)
    expect(servesHealthAt("/healthz?x=1")).toBe(true)
    expect(servesHealthAt("/healthzz")).toBe(false)
    expect(servesHealthAt("/sessions/s1/live")).toBe(false)
    expect(Effect.runSync(Effect.withFiberRuntime((fiber) => Effect.succeed(Server.servesHealth(fiber))))).toBe(false)
  })
})
