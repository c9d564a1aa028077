/**
 * `Live.response` on a real `@effect/platform-node` server, over a watch the test controls: the body
 * written straight to Node's response (two fibers), a client going away closes the watch once (the
 * platform interrupts the request's fiber, which interrupts the body's run), the keep-alive comment
 * goes out on the wire between frames while nothing happens, and a watch that ends ends the response.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { createServer, get, IncomingMessage } from "node:http"
import { connect } from "node:net"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { liveEvent } from "./liveEvents.js"

const event = liveEvent

/** A Node server answering every request with `Live.response` over `watch`; its URL and whether the body was written directly. */
const serve = (watch: Stream.Stream<AgentEvent.AgentEvent>, keepAlive: Duration.Duration) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(NodeHttpServer.layer(() => createServer(), { host: "127.0.0.1", port: 0 }))
    const seen: { direct: boolean; message?: IncomingMessage; aborted: number } = { direct: false, aborted: 0 }
    yield* HttpServer.serveEffect()(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const direct = Live.directResponse(request)
      seen.direct = direct !== undefined
      if (request.source instanceof IncomingMessage) {
        seen.message = request.source
        request.source.on("aborted", () => seen.aborted++)
      }
      return Live.response(watch, keepAlive, direct)
    })).pipe(Effect.provide(context))
    const server = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    return { url: `http://127.0.0.1:${port}/`, seen }
  })

/** Reads the response's text until `done` holds of it, then goes away (or reads to the end with `done` never true). */
const read = (url: string, done: (text: string) => boolean) =>
  Effect.async<string>((resume) => {
    let text = ""
    const request = get(url, { agent: false }, (response) => {
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => {
        text += chunk
        if (done(text)) {
          request.destroy()
          resume(Effect.succeed(text))
        }
      })
      response.on("end", () => resume(Effect.succeed(text)))
    })
    request.on("error", () => undefined)
  })

describe("/live on a Node server", () => {
  it.scopedLive("the body is written to Node's response; a client gone closes the watch once", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      let closes = 0
      const watch = Stream.concat(Stream.make(event(1), event(2)), Stream.never).pipe(
        Stream.ensuring(Effect.zipRight(Effect.sync(() => closes++), Deferred.succeed(closed, undefined)))
      )
      const { seen, url } = yield* serve(watch, Duration.hours(1))
      const expected = ": connected\n\n" + Live.encode(event(1)) + Live.encode(event(2))
      const text = yield* read(url, (text) => text.length >= expected.length)
      expect(text).toBe(expected)
      expect(seen.direct).toBe(true)
      // The client went away: the platform interrupts the request's fiber, and with it the watch.
      yield* Deferred.await(closed)
      expect(closes).toBe(1)
    }))

  it.scopedLive("a client gone finds its request read and let go: Node's close aborts nothing of it", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const watch = Stream.concat(Stream.make(event(1)), Stream.never).pipe(Stream.ensuring(Deferred.succeed(closed, undefined)))
      const { seen, url } = yield* serve(watch, Duration.hours(1))
      const expected = ": connected\n\n" + Live.encode(event(1))
      expect(yield* read(url, (text) => text.length >= expected.length)).toBe(expected)
      // Node aborts the requests of a closed socket before the response's `close` interrupts the watch.
      yield* Deferred.await(closed)
      expect(seen.message?.destroyed).toBe(true)
      expect(seen.message?.readableEnded).toBe(true)
      expect(seen.aborted).toBe(0)
    }))

  it.scopedLive("a request whose body is still coming is left to Node, unread: its close aborts it as before", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const watch = Stream.concat(Stream.make(event(1)), Stream.never).pipe(Stream.ensuring(Deferred.succeed(closed, undefined)))
      const { seen, url } = yield* serve(watch, Duration.hours(1))
      const { port } = new URL(url)
      // A chunked body whose last chunk never comes.
      const socket = connect(Number(port), "127.0.0.1")
      socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
      yield* Effect.async<void>((resume) => {
        let text = ""
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString("latin1")
          if (text.includes(": connected")) resume(Effect.void)
        })
      })
      expect(seen.message?.complete).toBe(false)
      expect(seen.message?.destroyed).toBe(false)
      expect(seen.message?.readableFlowing).toBe(null)
      socket.destroy()
      yield* Deferred.await(closed)
      expect(seen.aborted).toBe(1)
    }))

  it.scopedLive("keep-alive comments between frames while idle; a watch that ends ends the response", () =>
    Effect.gen(function*() {
      const idle = Stream.concat(Stream.make(event(1)), Stream.never)
      const { url } = yield* serve(idle, Duration.millis(5))
      const text = yield* read(url, (text) => text.split(Live.keepAliveComment).length > 3)
      expect(text.startsWith(": connected\n\n" + Live.encode(event(1)) + Live.keepAliveComment)).toBe(true)
      expect(text.slice((": connected\n\n" + Live.encode(event(1))).length).split(Live.keepAliveComment).every((rest) => rest === "")).toBe(true)

      const { url: ending } = yield* serve(Stream.make(event(1), event(2)), Duration.hours(1))
      const all = yield* read(ending, () => false)
      expect(all).toBe(": connected\n\n" + Live.encode(event(1)) + Live.encode(event(2)))
    }))
})
