/**
 * `serve` answers a plain `GET /healthz` in Node's `request` callback, before any fiber (issue 20,
 * row 18, serve19): a liveness probe then needs no turn of the server's scheduler, which on a server
 * writing a turn to 500 watchers runs after the rest of the loop's turn and a slice of their work.
 * Its answer is the route's, byte for byte, and any request the guards would judge (a body, another
 * host, another origin's page, another method) still goes the platform's way. Counted, not timed:
 * the scheduler below holds every task until told, so an answer that needs a fiber never comes
 * while it holds.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Scheduler from "effect/Scheduler"
import { connect } from "node:net"
import { EventLoop } from "../../src/server.js"
import { startIn } from "./harness.js"
import { send } from "./requests.js"

/** `inner`, with every task held while `hold` is on (run, in order, once it is let go). */
const holding = (inner: Scheduler.Scheduler) => {
  let held: Array<[Scheduler.Task, number, Parameters<Scheduler.Scheduler["scheduleTask"]>[2]]> | undefined
  const scheduler: Scheduler.Scheduler = {
    shouldYield: (fiber) => inner.shouldYield(fiber),
    scheduleTask: (task, priority, fiber) => {
      if (held === undefined) inner.scheduleTask(task, priority, fiber)
      else held.push([task, priority, fiber])
    }
  }
  return {
    scheduler,
    hold: () => {
      held = []
    },
    letGo: () => {
      const tasks = held ?? []
      held = undefined
      for (const [task, priority, fiber] of tasks) inner.scheduleTask(task, priority, fiber)
    }
  }
}

/** The raw answer to `head` (a request's head, CRLF lines) on a connection of its own, without its `Date` line. */
const raw = (port: number, head: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    let text = ""
    socket.setEncoding("latin1")
    socket.on("data", (chunk: string) => (text += chunk))
    socket.on("end", () => resolve(text.replace(/^Date: .*\r\n/m, "")))
    socket.on("error", reject)
    socket.write(`${head}Connection: close\r\n\r\n`)
  })

describe("serve answers /healthz first", () => {
  it.scopedLive("a plain probe is answered while every fiber's task is held", () =>
    Effect.gen(function*() {
      const { hold, letGo, scheduler } = holding(EventLoop.scheduler())
      const { server } = yield* startIn().pipe(Effect.withScheduler(scheduler))
      yield* Effect.addFinalizer(() => Effect.sync(letGo))
      hold()
      const answer = yield* Effect.promise(() => send(server.port, "/healthz"))
      const head = yield* Effect.promise(() => send(server.port, "/healthz?from=probe", { method: "HEAD" }))
      letGo()
      expect([answer.status, answer.text, answer.headers["x-content-type-options"]]).toEqual([200, '{"ok":true}', "nosniff"])
      expect([head.status, head.text, head.headers["content-length"]]).toEqual([200, "", "11"])
    }), 30_000)

  it.scopedLive("the answer is the route's byte for byte; requests the guards judge go the platform's way", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const host = `Host: 127.0.0.1:${server.port}\r\n`
      // A `Content-Length: 0` takes the platform's way (a body is the guards' to judge), with the same answer.
      for (const method of ["GET", "HEAD"]) {
        const first = yield* Effect.promise(() => raw(server.port, `${method} /healthz HTTP/1.1\r\n${host}`))
        const routed = yield* Effect.promise(() => raw(server.port, `${method} /healthz HTTP/1.1\r\n${host}Content-Length: 0\r\n`))
        expect(first).toBe(routed)
        expect(first.startsWith("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nx-content-type-options: nosniff\r\n")).toBe(true)
      }
      const statuses = yield* Effect.promise(() =>
        Promise.all([
          send(server.port, "/healthz", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
          send(server.port, "/healthz", { headers: { host: "attacker.example" } }),
          send(server.port, "/healthz", { headers: { origin: "http://attacker.example" } }),
          send(server.port, "/healthz", { headers: { "sec-fetch-site": "cross-site" } }),
          send(server.port, "/healthz", { headers: { "content-length": "99999999" } }),
          send(server.port, "/healthzx")
        ]).then((answers) => answers.map((answer) => answer.status))
      )
      expect(statuses).toEqual([404, 403, 403, 403, 413, 404])
    }), 30_000)
})
