/**
 * An embedder that mounts `Server.layer` on a Node server of its own gets what `serve` does to its
 * server with `Server.guardNodeServer`: a connection that sends no request is closed after
 * `headersTimeout`; the connections that sent no credential are bounded (one more closes the
 * oldest); requests are still answered (started as tasks). Before, such an embedder had none of it,
 * and a connection that sent nothing stayed open for good. Real sockets on loopback; awaited on the
 * sockets' own `close` events.
 */
import { describe, expect, it } from "@effect/vitest"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import { connect, type Socket } from "node:net"
import { Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, workspace } from "./harness.js"

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, () => resolve(socket))
    socket.once("error", reject)
  })
const closed = (socket: Socket) => new Promise<void>((resolve) => socket.closed ? resolve() : socket.once("close", () => resolve()))

describe("Server.guardNodeServer: serve's guards on an embedder's own Node server", () => {
  it.scopedLive("a silent connection is closed after headersTimeout; strangers are bounded; requests are answered", () =>
    Effect.gen(function*() {
      const { cwd, dataDir } = workspace()
      const engine = embedderEngine(dataDir)
      const node = createServer()
      const config = ServerConfig.make({ token: "embedded-token", defaultCwd: cwd })
      const app = HttpApiBuilder.serve().pipe(
        Layer.provide(Server.layer(config).pipe(Layer.provide(engine))),
        Layer.provide(Server.guardNodeServer(node, config, { headersTimeout: "200 millis", maxUnauthenticatedConnections: 2 })),
        Layer.provideMerge(NodeHttpServer.layer(() => node, { host: "127.0.0.1", port: 0 }))
      )
      const context = yield* Layer.build(app)
      const server = yield* Effect.provide(HttpServer.HttpServer, context)
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0

      // Sends nothing: closed by the server (it used to stay open for good).
      const silent = yield* Effect.promise(() => opened(port))
      yield* Effect.promise(() => closed(silent))

      // Requests still answered.
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/healthz`))
      expect(health.status).toBe(200)
      const created = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/sessions`, { method: "POST", headers: { authorization: "Bearer embedded-token", "content-type": "application/json" }, body: "{}" })
      )
      expect(created.status).toBe(201)

      // Three strangers with room for two: the oldest is closed at once.
      const first = yield* Effect.promise(() => opened(port))
      yield* Effect.promise(() => opened(port))
      yield* Effect.promise(() => opened(port))
      yield* Effect.promise(() => closed(first))
      expect(first.closed).toBe(true)
    }))
})
