/**
 * A kept-alive connection reused after a few idle seconds. Node's server closes an idle kept-alive
 * connection after `keepAliveTimeout` (5 s by default) and says so in `Keep-Alive: timeout=5`;
 * undici (Node's `fetch`, the platform's `FetchHttpClient`) stops reusing it 2 s before, but decides
 * on timers of about a second's grain that run only between the loop's tasks. On a busy machine a
 * client that waited ≈ 5 s sent its next request on a connection the server was closing, and got
 * `fetch failed: other side closed` for a request the server never read (the README's test command
 * failed so once, on `test/server/live.test.ts`'s `storedEvents` after a turn of 1,000 events). The
 * server now keeps an idle connection for `keepAliveTimeout` (65 s), well past the waits clients make.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { connect, type Socket } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { startIn } from "./harness.js"

/**
 * A raw connection: `healthz()` sends one `GET /healthz` and resolves with the answer's head once its
 * body has come, or rejects once the server has closed the connection.
 */
const connection = (port: number) =>
  new Promise<{ readonly healthz: () => Promise<string>; readonly close: () => void }>((resolve, reject) => {
    let text = ""
    let closed = false
    let waiting: (() => void) | undefined
    const socket: Socket = connect(port, "127.0.0.1", () => resolve({ healthz, close: () => socket.destroy() }))
    socket.once("error", reject)
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1")
      waiting?.()
    })
    socket.once("close", () => {
      closed = true
      waiting?.()
    })
    const healthz = () =>
      new Promise<string>((resolve, reject) => {
        text = ""
        waiting = () => {
          const end = text.indexOf("\r\n\r\n")
          const length = /content-length: (\d+)/i.exec(text)
          if (end >= 0 && length !== null && text.length >= end + 4 + Number(length[1])) resolve(text.slice(0, end))
          else if (closed) reject(new Error(`closed by the server before it answered (read ${JSON.stringify(text)})`))
        }
        if (closed) return waiting()
        socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`)
      })
  })

describe("kept-alive connections", () => {
  it.scopedLive("a connection idle for 6 s still answers its next request, and the server says how long it keeps one", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({})
      const client = yield* Effect.acquireRelease(Effect.promise(() => connection(server.port)), (client) => Effect.sync(client.close))
      const first = yield* Effect.promise(client.healthz)
      expect(first).toMatch(/^HTTP\/1\.1 200/)
      expect(first).toMatch(/\r\nkeep-alive: timeout=65(\r\n|$)/i)
      // Past Node's default of 5 s (a wait, not a measurement: the server's 65 s is far away).
      yield* Effect.promise(() => sleep(6_000))
      const second = yield* Effect.promise(client.healthz)
      expect(second).toMatch(/^HTTP\/1\.1 200/)
    }))
})
