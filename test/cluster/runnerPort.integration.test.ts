/**
 * The runners' port and its credential (docs/security.md): a connection must answer the runner's
 * challenge with the cluster secret (`RunnerPort`) before its bytes reach the protocol. Without it
 * — the protocol spoken raw, a wrong answer, silence — it is closed with no answer; with it, the
 * same bytes get the protocol's `Pong`. And what a local process can send without any credential
 * (audit 3, item 4): a hundred connections that send nothing, and connections that send garbage —
 * bytes that are not the protocol, a value that claims 4 G entries. The runner goes on serving: the
 * port answers a `Ping` of a client with the secret, and a turn runs to its end.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Runners from "@effect/cluster/Runners"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Chunk from "effect/Chunk"
import { createHmac } from "node:crypto"
import { connect, type Socket } from "node:net"
import { ClusterSecret, RunnerPort } from "../../src/cluster.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

/** The cluster database's secret, as a runner reads it. */
const secretOf = (url: string) =>
  ClusterSecret.fromDatabase().pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

/** A `Ping` over the runners' protocol, as another runner sends it (answering the challenge with `secret`). */
const ping = (port: number, secret: Redacted.Redacted<Uint8Array>) =>
  Effect.gen(function*() {
    const makeProtocol = yield* Runners.RpcClientProtocol
    const protocol = yield* makeProtocol(RunnerAddress.make("127.0.0.1", port))
    const client = yield* Effect.provideService(Runners.makeRpcClient, RpcClient.Protocol, protocol)
    yield* client.Ping()
  }).pipe(
    Effect.provide(RunnerPort.layerClientProtocol),
    Effect.provide(Layer.succeed(ClusterSecret.ClusterSecret, secret)),
    Effect.provide(RpcSerialization.layerMsgPack),
    Effect.scoped,
    Effect.timeout("10 seconds")
  )

/**
 * Everything a raw connection receives until the runner closes it, or until a protocol message
 * (`Pong`, `Exit`) decodes from it: from what follows the challenge, when the port sent one.
 */
const answerOf = (socket: Socket) =>
  new Promise<{ readonly received: Buffer; readonly message: unknown }>((resolve) => {
    let received = Buffer.alloc(0)
    const magic = Buffer.from(RunnerPort.challengeMagic)
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const challenged = received.subarray(0, magic.length).equals(magic.subarray(0, Math.min(magic.length, received.length)))
      if (challenged && received.length <= RunnerPort.challengeLength) return
      let decoded: ReadonlyArray<unknown> = []
      try {
        decoded = RpcSerialization.msgPack.unsafeMake().decode(challenged ? received.subarray(RunnerPort.challengeLength) : received)
      } catch {
        // Not (yet) a whole message.
      }
      const message = decoded.find((value) => typeof value === "object" && value !== null && "_tag" in value)
      if (message !== undefined) resolve({ received, message })
    })
    socket.on("close", () => resolve({ received, message: undefined }))
  })

/** The protocol's keepalive as the cluster's client sends it: `{ _tag: "Ping" }`, one msgpack frame. */
const protocolPing = () => RpcSerialization.msgPack.unsafeMake().encode({ _tag: "Ping" }) as Uint8Array

describe("the runners' port", () => {
  it.live("a connection that speaks the protocol without the cluster secret, or with a wrong answer, or not at all, is closed unanswered", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port_raw")
      const { port } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [])
      const secret = yield* secretOf(url)
      /** A raw connection: `send` is given the challenge's bytes (once they all arrived) and says what to write. */
      const exchange = (send: (challenge: Buffer) => Uint8Array | undefined, first?: Uint8Array) =>
        Effect.promise(async () => {
          const socket = await opened(port)
          socket.on("error", () => {})
          const answer = answerOf(socket)
          if (first !== undefined) socket.write(first)
          let challenge = Buffer.alloc(0)
          const onChallenge = (chunk: Buffer) => {
            challenge = Buffer.concat([challenge, chunk])
            if (challenge.length < RunnerPort.challengeLength) return
            socket.off("data", onChallenge)
            const reply = send(challenge)
            if (reply !== undefined) socket.write(reply)
          }
          socket.on("data", onChallenge)
          try {
            return await answer
          } finally {
            socket.destroy()
          }
        })
      const nonceOf = (challenge: Buffer) => challenge.subarray(RunnerPort.challengeMagic.length, RunnerPort.challengeLength)
      const hmac = (key: Uint8Array, challenge: Buffer) =>
        createHmac("sha256", key).update("effect-agent runner proof 1\n").update(nonceOf(challenge)).digest()

      // The protocol spoken raw: before the port checked a credential, the decoder read the frame and the runner answered `Pong`.
      const raw = yield* exchange(() => undefined, protocolPing())
      expect(raw.message).toBeUndefined()
      expect(raw.received.subarray(0, RunnerPort.challengeMagic.length)).toEqual(Buffer.from(RunnerPort.challengeMagic))
      expect(raw.received.length).toBe(RunnerPort.challengeLength)
      // A wrong answer (another key), then the protocol: closed, nothing decoded.
      const wrong = yield* exchange((challenge) => Buffer.concat([hmac(new Uint8Array(32), challenge), protocolPing()]))
      expect(wrong.message).toBeUndefined()
      expect(wrong.received.length).toBe(RunnerPort.challengeLength)
      // A wrong answer and then the right one: one answer per connection, closed.
      const second = yield* exchange((challenge) => Buffer.concat([hmac(new Uint8Array(32), challenge), hmac(Redacted.value(secret), challenge), protocolPing()]))
      expect(second.message).toBeUndefined()
      // A right answer replayed on another connection (a capture of the wire): its nonce differs, closed.
      let captured: Buffer | undefined
      const first = yield* exchange((challenge) => {
        captured = hmac(Redacted.value(secret), challenge)
        return Buffer.concat([captured, protocolPing()])
      })
      expect(first.message).toEqual({ _tag: "Pong" })
      const replayed = yield* exchange(() => Buffer.concat([captured!, protocolPing()]))
      expect(replayed.message).toBeUndefined()
      // Silence: closed once the handshake's time is up.
      const silent = yield* exchange(() => undefined)
      expect(silent.message).toBeUndefined()
      expect(silent.received.length).toBe(RunnerPort.challengeLength)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })

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
        // The port still answers the protocol, to a client with the cluster secret.
        yield* ping(port, yield* secretOf(url))
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const events = Chunk.toReadonlyArray(yield* Stream.runCollect(engine.runTurn({ sessionId, userMessage: "are you there?" })))
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      } finally {
        for (const socket of [...silent, ...noisy]) socket.destroy()
      }
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })
})
