/**
 * The runners' port under what a local process can send it without any credential (audit 3, item
 * 4): a hundred connections that send nothing, and connections that send garbage — bytes that are
 * not the protocol, a value that claims 4 G entries (the decoder buffers at most 16 MiB of an
 * unfinished one per connection, `@effect/rpc`'s limit). The runner goes on serving: the port still
 * answers the protocol's `Ping` and a turn runs to its end. The `Ping` needs no credential: whoever
 * speaks the protocol on this port can drive any session whose id it knows (docs/security.md).
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Runners from "@effect/cluster/Runners"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Chunk from "effect/Chunk"
import { connect, type Socket } from "node:net"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

/** A `Ping` over the runners' protocol, as another runner (or anyone who reaches the port) sends it. */
const ping = (port: number) =>
  Effect.gen(function*() {
    const makeProtocol = yield* Runners.RpcClientProtocol
    const protocol = yield* makeProtocol(RunnerAddress.make("127.0.0.1", port))
    const client = yield* Effect.provideService(Runners.makeRpcClient, RpcClient.Protocol, protocol)
    yield* client.Ping()
  }).pipe(
    Effect.provide(NodeClusterSocket.layerClientProtocol),
    Effect.provide(RpcSerialization.layerMsgPack),
    Effect.scoped,
    Effect.timeout("10 seconds")
  )

describe("the runners' port", () => {
  it.live("a hundred silent connections and garbage on others leave the runner serving", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port")
      const { engine, port } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [{ chunks: ["still here"] }])
      const silent = yield* Effect.promise(() => Promise.all(Array.from({ length: 100 }, () => opened(port))))
      const noisy = yield* Effect.promise(() => Promise.all(Array.from({ length: 10 }, () => opened(port))))
      for (const socket of [...silent, ...noisy]) socket.on("error", () => {})
      // Not the protocol; a frame length of 4 GiB; a msgpack value claiming 4 G entries; NDJSON-looking junk.
      const junk = [
        Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00]),
        Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
        Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 0x61]),
        Buffer.from("{\"_tag\":\"Request\",\"id\":\"1\",\"tag\":\"Ping\",\"payload\":{}}\n")
      ]
      noisy.forEach((socket, i) => socket.write(junk[i % junk.length]!))
      try {
        // The port still answers the protocol: here anyone's, with no credential at all.
        yield* ping(port)
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = Chunk.toReadonlyArray(yield* Stream.runCollect(engine.runTurn({ sessionId, userMessage: "are you there?" })))
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      } finally {
        for (const socket of [...silent, ...noisy]) socket.destroy()
      }
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })
})
