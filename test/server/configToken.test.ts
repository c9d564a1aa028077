/**
 * A server built without a token (the docs' old `token: process.env.MY_TOKEN!` with the variable
 * unset, or set empty) fails its layer build with a typed ServerTokenMissing, instead of starting
 * and answering 500 to every route (review58a).
 */
import { describe, expect, it } from "@effect/vitest"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import { Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, workspace } from "./harness.js"

describe("a server without a token", () => {
  for (const [name, token] of [["unset", undefined], ["empty", ""], ["blank", "  "]] as const) {
    it.scoped(`(${name}) fails to build with ServerTokenMissing`, () =>
      Effect.gen(function*() {
        const { cwd, dataDir } = workspace()
        const config = ServerConfig.make({ token: token as unknown as string, defaultCwd: cwd })
        const app = HttpApiBuilder.serve().pipe(
          Layer.provide(Server.layer(config).pipe(Layer.provide(embedderEngine(dataDir)))),
          Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
        )
        const error = yield* Effect.flip(Layer.build(app))
        expect(error).toBeInstanceOf(ServerConfig.ServerTokenMissing)
        expect((error as { _tag: string })._tag).toBe("ServerTokenMissing")
      }))
  }

  it.effect("ServerConfig.layer fails the same way", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(Layer.build(ServerConfig.layer({ token: "" }))))
      expect((error as { _tag: string })._tag).toBe("ServerTokenMissing")
    }))
})
