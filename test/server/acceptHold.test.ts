/**
 * Row 18 (issue 20): a connection behind hundreds in the listen queue. Node (libuv 1.46) accepts one
 * connection per turn of its loop, so a `/healthz` probe that connects behind 500 watchers waits for
 * 500 turns — and each of them also set the previous connection up for HTTP and read its request.
 * `serve` now holds each connection it accepts unread while others are being accepted, and then hands
 * the held ones to the HTTP server a batch a turn, the newest first with as many of the oldest.
 * Counted, not timed: the order in which 101 `/healthz` requests queued at once are answered.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { ServerResponse } from "node:http"
import { connect, type Socket } from "node:net"
import { startIn } from "./harness.js"

describe("serve accepts connections first and reads them after", () => {
  it.scopedLive("a connection queued behind 100 others is answered before most of them, and every one is answered", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port } = server
      // The order the server answers in, by the client's port (`serve` answers a plain `/healthz` in Node's callback).
      const answered: Array<number> = []
      const writeHead = ServerResponse.prototype.writeHead
      ServerResponse.prototype.writeHead = function(this: ServerResponse, ...args: Array<never>) {
        answered.push(this.req.socket.remotePort!)
        return (writeHead as (...a: Array<never>) => ServerResponse).apply(this, args)
      } as typeof writeHead
      yield* Effect.addFinalizer(() => Effect.sync(() => (ServerResponse.prototype.writeHead = writeHead)))
      const count = 101
      const clients: Array<Socket> = []
      let lastPort = -1
      const done = Promise.all(Array.from({ length: count }, () => {
        // All in one go: every connection is in the listen queue before the server's next poll, in this order.
        const client = connect(port, "127.0.0.1")
        clients.push(client)
        if (clients.length === count) client.once("connect", () => (lastPort = client.localPort!))
        client.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
        return new Promise<void>((resolve, reject) => {
          let text = ""
          client.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")))
          client.on("end", () => (text.startsWith("HTTP/1.1 200") ? resolve() : reject(new Error(text))))
          client.on("error", reject)
        })
      }))
      try {
        yield* Effect.promise(() => done)
      } finally {
        for (const client of clients) client.destroy()
      }
      expect(answered.length).toBe(count)
      // The last to connect: answered after all 100 ahead of it on main; now after those handed over
      // while the others were accepted (a batch every `EventLoop.maxAcceptingTurns`) and a few more.
      const last = answered.indexOf(lastPort)
      expect(last).toBeGreaterThanOrEqual(0)
      expect(last).toBeLessThan(75)
    }), 30_000)
})
