/**
 * How `serve` starts a request (issue 20, row 18): every request but `/healthz` as a task of the
 * scheduler the server runs on, not inside Node's `request` callback. Node reads every readable
 * socket in one turn of its loop, so when hundreds of clients connect at once their requests are
 * read together, and each one's fiber used to start right there — hundreds of fibers' first steps
 * in one turn, before the loop could accept the next connection, while a liveness probe waited
 * behind them in the listen queue. Observed through the platform's span of each request, made in
 * the request fiber's first steps: whether it was made inside a task of the server's scheduler.
 * A plain `GET /healthz` starts no request at all: `serve` answers it in Node's callback
 * (healthFirst.test.ts); one the guards must judge starts at once. Counted, not timed.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Scheduler from "effect/Scheduler"
import * as Tracer from "effect/Tracer"
import { EventLoop } from "../../src/server.js"
import { startIn } from "./harness.js"
import { send } from "./requests.js"

/** `inner`, counting whether a task of it is running. */
const counting = (inner: Scheduler.Scheduler) => {
  let running = 0
  const scheduler: Scheduler.Scheduler = {
    shouldYield: (fiber) => inner.shouldYield(fiber),
    scheduleTask: (task, priority, fiber) =>
      inner.scheduleTask(() => {
        running++
        try {
          task()
        } finally {
          running--
        }
      }, priority, fiber)
  }
  return { scheduler, inTask: () => running > 0 }
}

describe("serve starts requests", () => {
  for (const [name, inner] of [["Effect's default scheduler", () => Scheduler.defaultScheduler], ["EventLoop.scheduler", () => EventLoop.scheduler()]] as const) {
    it.scopedLive(`every request but /healthz as a task of the server's scheduler, /healthz at once (${name})`, () =>
      Effect.gen(function*() {
        const { scheduler, inTask } = counting(inner())
        const tracer = yield* Effect.tracer
        /** Each request's span (`http.server <method>`): whether it was made inside a task of the scheduler. */
        const started: Array<boolean> = []
        const spying = Tracer.make({
          span: (spanName, parent, context, links, startTime, kind, options) => {
            if (spanName.startsWith("http.server")) started.push(inTask())
            return tracer.span(spanName, parent, context, links, startTime, kind, options)
          },
          context: (f, fiber) => tracer.context(f, fiber)
        })
        const { server } = yield* startIn().pipe(Effect.withScheduler(scheduler), Effect.withTracer(spying))
        const authorized = { headers: { authorization: `Bearer ${server.token}` } }
        started.length = 0
        // A plain probe is answered before any fiber (healthFirst.test.ts): no span at all.
        expect((yield* Effect.promise(() => send(server.port, "/healthz"))).status).toBe(200)
        expect(started).toEqual([])
        // One with a body's length goes the platform's way, and starts at once.
        expect((yield* Effect.promise(() => send(server.port, "/healthz", { body: "" }))).status).toBe(200)
        expect((yield* Effect.promise(() => send(server.port, "/sessions", authorized))).status).toBe(200)
        expect((yield* Effect.promise(() => send(server.port, "/no-such-route", authorized))).status).toBe(404)
        const answers = yield* Effect.promise(() => Promise.all(Array.from({ length: 50 }, () => send(server.port, "/sessions", authorized))))
        expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200))
        expect(started.slice(0, 3)).toEqual([false, true, true])
        expect(started.slice(3)).toEqual(answers.map(() => true))
      }), 30_000)
  }
})
