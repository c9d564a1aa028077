/**
 * The runners' port and its credential (docs/security.md): both ends of a connection prove the
 * cluster secret (`RunnerPort`) before a byte of the protocol crosses it. A connection without it
 * — the protocol spoken raw, a wrong, replayed, reflected or version-1 answer, silence — is closed
 * with no answer; with it, the same bytes get the protocol's `Pong`. A runner's client that meets a
 * port that cannot prove it (a fake, a relay to another runner, a runner of version 1) sends it
 * its hello only, fails its call and connects again. And what a local process can send without any credential
 * (audit 3, item 4): a hundred connections that send nothing, and connections that send garbage —
 * bytes that are not the protocol, a value that claims 4 G entries. The runner goes on serving: the
 * port answers a `Ping` of a client with the secret, and a turn runs to its end. And a flood of
 * connections that never prove anything: at most `maxPendingHandshakes` are held in the handshake
 * at once (the oldest are closed to make room), and a runner with the secret still gets through.
 * And a runner's connection that fails in its handshake — a runner too busy to answer it in time,
 * or one that closed it to make room for a flood from the same address — is tried again, and the
 * call on it answered (on an earlier release it failed the call: a flake at load 20+).
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Runners from "@effect/cluster/Runners"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Stream from "effect/Stream"
import * as Chunk from "effect/Chunk"
import { createHmac, randomBytes } from "node:crypto"
import { type AddressInfo, connect, createServer, type Socket } from "node:net"
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

/** The runners' RPC client of another runner, connected to `port` (proving `secret` in the handshake) for as long as the scope lasts. */
const clientOf = (port: number, secret: Redacted.Redacted<Uint8Array>) =>
  Effect.gen(function*() {
    const makeProtocol = yield* Runners.RpcClientProtocol
    const protocol = yield* makeProtocol(RunnerAddress.make("127.0.0.1", port))
    return yield* Effect.provideService(Runners.makeRpcClient, RpcClient.Protocol, protocol)
  }).pipe(
    Effect.provide(RunnerPort.layerClientProtocol),
    Effect.provide(Layer.succeed(ClusterSecret.ClusterSecret, secret)),
    Effect.provide(RpcSerialization.layerMsgPack)
  )

/**
 * A `Ping` over the runners' protocol, as another runner sends it, answered. No deadline of its own
 * (a busy machine can outlast any guess): an unanswered ping fails the test at vitest's timeout.
 */
const ping = (port: number, secret: Redacted.Redacted<Uint8Array>) =>
  clientOf(port, secret).pipe(Effect.flatMap((client) => client.Ping()), Effect.scoped)

/**
 * Everything a raw connection receives until the runner closes it, or until a protocol message
 * (`Pong`, `Exit`) decodes from what follows the runner's first `handshake` bytes (its challenge,
 * and its proof when the connection sent a hello).
 */
const answerOf = (socket: Socket, handshake: number) =>
  new Promise<{ readonly received: Buffer; readonly message: unknown }>((resolve) => {
    let received = Buffer.alloc(0)
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length <= handshake) return
      let decoded: ReadonlyArray<unknown> = []
      try {
        decoded = RpcSerialization.msgPack.unsafeMake().decode(received.subarray(handshake))
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

/** The handshake's wire, written out here as the spec the module must meet. */
const wire = {
  /** What a connecting runner sends first, then its 32-byte nonce. */
  helloMagic: Buffer.from("effect-agent runners 2 hello\n"),
  /** What the accepting runner sends first, then its nonce; its proof follows once it has the hello. */
  challengeMagic: Buffer.from("effect-agent runners 2\n"),
  /** What version 1's accepting runner sent first, then its nonce (it proved nothing). */
  version1Magic: Buffer.from("effect-agent runners 1\n"),
  nonceLength: 32,
  proofLength: 32,
  get helloLength() {
    return this.helloMagic.length + this.nonceLength
  },
  get challengeLength() {
    return this.challengeMagic.length + this.nonceLength
  },
  /** A side's proof: HMAC-SHA256 under the secret of its role's context, both nonces and the accepting runner's `host:port`. */
  proof: (key: Uint8Array, role: "accepting" | "connecting", connectingNonce: Uint8Array, acceptingNonce: Uint8Array, address: string) =>
    createHmac("sha256", key).update(`effect-agent runners 2: ${role} runner's proof\n`).update(connectingNonce).update(acceptingNonce).update(address).digest()
}

/** Whether a protocol message (`{ _tag: … }`) decodes from these bytes at some offset: a client that took the handshake for done. */
const carriesProtocol = (bytes: Buffer) => {
  for (let offset = 0; offset < bytes.length; offset++) {
    try {
      const decoded = RpcSerialization.msgPack.unsafeMake().decode(bytes.subarray(offset)) as ReadonlyArray<unknown>
      if (decoded.some((value) => typeof value === "object" && value !== null && "_tag" in value)) return true
    } catch {
      // Not a message at this offset.
    }
  }
  return false
}

/** One connection to a fake port: what it received, and whether the client closed it (the fake never does). */
interface Seen {
  received: Buffer
  closed: boolean
}

/**
 * A port that is not a runner of the cluster (a local user's, bound to a runner's address while the
 * runner is down): `serve` says what it does with each connection, and it records what each received.
 * `until(closes)` resolves once `closes` connections were closed by the client, or once any
 * connection carried a protocol message.
 */
const fakePort = (serve: (socket: Socket, seen: Seen) => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly port: number; readonly connections: ReadonlyArray<Seen>; readonly until: (closes: number) => Promise<void>; readonly close: () => void }>((resolve) => {
        const connections: Array<Seen> = []
        const waiting: Array<() => void> = []
        const check = () => waiting.forEach((recheck) => recheck())
        const server = createServer((socket) => {
          const seen: Seen = { received: Buffer.alloc(0), closed: false }
          connections.push(seen)
          socket.on("error", () => {})
          socket.on("data", (chunk: Buffer) => {
            seen.received = Buffer.concat([seen.received, chunk])
            check()
          })
          socket.on("close", () => {
            seen.closed = true
            check()
          })
          serve(socket, seen)
        })
        const until = (closes: number) =>
          new Promise<void>((done) => {
            const recheck = () => {
              if (connections.some((seen) => carriesProtocol(seen.received)) || connections.filter((seen) => seen.closed).length >= closes) done()
            }
            waiting.push(recheck)
            recheck()
          })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address() as AddressInfo
          resolve({ port: address.port, connections, until, close: () => server.close() })
        })
      })
    ),
    (fake) => Effect.sync(() => fake.close())
  )

/**
 * What a port in front of a runner does with one connection: `silent` accepts it and never answers
 * (a runner too busy to finish a handshake in time); `withheld` relays it but keeps the client's
 * bytes from the runner, which holds it in its handshake; `relayed` relays it both ways.
 */
type FrontMode = "silent" | "withheld" | "relayed"

/**
 * A port at the runner's address (127.0.0.1:`port`) in front of the runner, which listens on
 * 127.0.0.2:`port`: the runner proves itself for the address its clients dial, so what crosses
 * this port passes their handshake. Its next connections do what `next(...modes)` says, in turn
 * (then `relayed`). `connections` counts them; `challenged(n)` resolves once the runner sent
 * connection `n` (from 0) its challenge (it holds that connection in its handshake by then).
 */
const frontOf = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{
        readonly next: (...modes: ReadonlyArray<FrontMode>) => void
        readonly connections: () => number
        readonly challenged: (n: number) => Promise<void>
        readonly close: () => void
      }>((resolve) => {
        const modes: Array<FrontMode> = []
        const sockets = new Set<Socket>()
        const challenges: Array<{ received: number; readonly done: Array<() => void> }> = []
        const challengeOf = (n: number) => (challenges[n] ??= { received: 0, done: [] })
        let connections = 0
        const server = createServer((socket) => {
          const n = connections++
          const mode = modes.shift() ?? "relayed"
          const challenge = challengeOf(n)
          sockets.add(socket)
          socket.on("error", () => {})
          if (mode === "silent") return
          const upstream = connect({ port, host: "127.0.0.2", localAddress: "127.0.0.1" })
          sockets.add(upstream)
          upstream.on("error", () => {})
          upstream.on("data", (chunk: Buffer) => {
            challenge.received += chunk.length
            if (challenge.received >= wire.challengeLength) challenge.done.splice(0).forEach((done) => done())
            socket.write(chunk)
          })
          if (mode === "relayed") socket.on("data", (chunk: Buffer) => upstream.write(chunk))
          socket.on("close", () => upstream.destroy())
          upstream.on("close", () => socket.destroy())
        })
        server.listen(port, "127.0.0.1", () =>
          resolve({
            next: (...next) => void modes.push(...next),
            connections: () => connections,
            challenged: (n) =>
              new Promise<void>((done) => {
                const challenge = challengeOf(n)
                if (challenge.received >= wire.challengeLength) done()
                else challenge.done.push(done)
              }),
            close: () => {
              for (const socket of sockets) socket.destroy()
              server.close()
            }
          }))
      })
    ),
    (front) => Effect.sync(() => front.close())
  )

describe("the runners' port", () => {
  it.live("a connection that speaks the protocol without the cluster secret, or with a wrong, replayed, reflected or version-1 answer, or none, is closed unanswered", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port_raw")
      const { port } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [])
      const secret = yield* secretOf(url)
      // The wire as written here is the module's.
      expect(Buffer.from(RunnerPort.helloMagic)).toEqual(wire.helloMagic)
      expect(Buffer.from(RunnerPort.challengeMagic)).toEqual(wire.challengeMagic)
      const handshake = wire.challengeMagic.length + wire.nonceLength + wire.proofLength
      /**
       * A raw connection: writes `opening` at once; once the runner sent `wait` bytes, `send` is
       * given them and says what to write next.
       */
      const exchange = (opening: Uint8Array | undefined, wait: number, send: (fromRunner: Buffer) => Uint8Array | undefined = () => undefined) =>
        Effect.promise(async () => {
          const socket = await opened(port)
          socket.on("error", () => {})
          const answer = answerOf(socket, wait)
          if (opening !== undefined) socket.write(opening)
          let fromRunner = Buffer.alloc(0)
          const onBytes = (chunk: Buffer) => {
            fromRunner = Buffer.concat([fromRunner, chunk])
            if (fromRunner.length < wait) return
            socket.off("data", onBytes)
            const reply = send(fromRunner.subarray(0, wait))
            if (reply !== undefined) socket.write(reply)
          }
          socket.on("data", onBytes)
          try {
            return await answer
          } finally {
            socket.destroy()
          }
        })
      const hello = () => {
        const nonce = randomBytes(wire.nonceLength)
        return { nonce, bytes: Buffer.concat([wire.helloMagic, nonce]) }
      }
      const acceptingNonceOf = (fromRunner: Buffer) => fromRunner.subarray(wire.challengeMagic.length, wire.challengeMagic.length + wire.nonceLength)
      const runnerProofOf = (fromRunner: Buffer) => fromRunner.subarray(wire.challengeMagic.length + wire.nonceLength, handshake)
      const key = Redacted.value(secret)
      const here = `127.0.0.1:${port}`

      // The runner proves itself first: its proof is the spec's, for this connection's nonces and its own address.
      let runnerProof: Buffer | undefined
      const connecting = hello()
      const proven = yield* exchange(connecting.bytes, handshake, (fromRunner) => {
        runnerProof = runnerProofOf(fromRunner)
        expect(runnerProof).toEqual(wire.proof(key, "accepting", connecting.nonce, acceptingNonceOf(fromRunner), here))
        return Buffer.concat([wire.proof(key, "connecting", connecting.nonce, acceptingNonceOf(fromRunner), here), protocolPing()])
      })
      expect(proven.message).toEqual({ _tag: "Pong" })
      expect(proven.received.subarray(0, wire.challengeMagic.length)).toEqual(wire.challengeMagic)

      // The protocol spoken raw: before the port checked a credential, the decoder read the frame and the runner answered `Pong`.
      const raw = yield* exchange(protocolPing(), wire.challengeLength)
      expect(raw.message).toBeUndefined()
      expect(raw.received.length).toBe(wire.challengeLength)
      // Version 1's answer to the challenge (an HMAC of its nonce alone), then the protocol: not a hello, closed.
      const version1 = yield* exchange(undefined, wire.challengeLength, (fromRunner) =>
        Buffer.concat([createHmac("sha256", key).update("effect-agent runner proof 1\n").update(acceptingNonceOf(fromRunner)).digest(), protocolPing()]))
      expect(version1.message).toBeUndefined()
      expect(version1.received.length).toBe(wire.challengeLength)
      /** A hello, then what `answer` makes of the runner's challenge and proof, then the protocol. */
      const after = (answer: (connectingNonce: Buffer, acceptingNonce: Buffer, runnerProof: Buffer) => Uint8Array, first = hello()) =>
        exchange(first.bytes, handshake, (fromRunner) => Buffer.concat([answer(first.nonce, acceptingNonceOf(fromRunner), runnerProofOf(fromRunner)), protocolPing()]))
      // A wrong answer (another key), then the protocol: closed, nothing decoded.
      const wrong = yield* after((nC, nA) => wire.proof(new Uint8Array(32), "connecting", nC, nA, here))
      expect(wrong.message).toBeUndefined()
      expect(wrong.received.length).toBe(handshake)
      // A wrong answer and then the right one: one answer per connection, closed.
      const second = yield* after((nC, nA) => Buffer.concat([wire.proof(new Uint8Array(32), "connecting", nC, nA, here), wire.proof(key, "connecting", nC, nA, here)]))
      expect(second.message).toBeUndefined()
      // The runner's own proof sent back as the answer: a proof of the other side, closed.
      const reflected = yield* after((_nC, _nA, proof) => proof)
      expect(reflected.message).toBeUndefined()
      // A proof for another runner's address (right key, right nonces): closed.
      const elsewhere = yield* after((nC, nA) => wire.proof(key, "connecting", nC, nA, `127.0.0.1:${port + 1}`))
      expect(elsewhere.message).toBeUndefined()
      // A right answer captured from the wire, replayed with its hello on another connection: the runner's nonce differs, closed.
      let captured: Buffer | undefined
      const capturing = hello()
      const first = yield* after((nC, nA) => (captured = wire.proof(key, "connecting", nC, nA, here)), capturing)
      expect(first.message).toEqual({ _tag: "Pong" })
      const replayed = yield* after(() => captured!, capturing)
      expect(replayed.message).toBeUndefined()
      // Silence after the hello: closed once the handshake's time is up.
      const silent = yield* exchange(hello().bytes, handshake)
      expect(silent.message).toBeUndefined()
      expect(silent.received.length).toBe(handshake)
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

  it.live("a flood of connections in the handshake holds at most 64 of them: the oldest are closed, and a runner with the secret gets through", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port_flood")
      const { port } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [])
      const secret = yield* secretOf(url)
      const inHandshake = Metric.value(RunnerPort.pendingHandshakes.pipe(Metric.tagged("port", String(port)))).pipe(Effect.map((state) => state.value))
      const flood: Array<Socket> = []
      let closed = 0
      const closing: Array<() => void> = []
      /** A connection that sends nothing, once the runner's challenge came (the runner counted it among those in the handshake by then). */
      const challenged = () =>
        opened(port).then((socket) =>
          new Promise<Socket>((resolve) => {
            flood.push(socket)
            socket.on("error", () => {})
            let received = 0
            socket.on("data", (chunk: Buffer) => {
              received += chunk.length
              if (received >= wire.challengeLength) resolve(socket)
            })
            socket.on("close", () => {
              closed += 1
              closing.forEach((check) => check())
              resolve(socket)
            })
          })
        )
      const closedAtLeast = (count: number) =>
        new Promise<void>((done) => {
          const check = () => closed >= count && done()
          closing.push(check)
          check()
        })
      const batches = 5
      const batch = 50
      let most = 0
      try {
        for (let i = 0; i < batches; i++) {
          yield* Effect.promise(() => Promise.all(Array.from({ length: batch }, challenged)))
          most = Math.max(most, yield* inHandshake)
        }
        expect(RunnerPort.maxPendingHandshakes).toBe(64)
        // Never more than the bound in the handshake, each batch's connections counted.
        expect(most).toBeLessThanOrEqual(RunnerPort.maxPendingHandshakes)
        expect(most).toBeGreaterThan(0)
        // The ones evicted to make room are closed.
        yield* Effect.promise(() => closedAtLeast(batches * batch - RunnerPort.maxPendingHandshakes))
        // With the flood's newest still in the handshake, a runner with the secret gets through.
        yield* ping(port, secret)
        expect(yield* inHandshake).toBeLessThanOrEqual(RunnerPort.maxPendingHandshakes)
      } finally {
        for (const socket of flood) socket.destroy()
      }
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })

  it.live("a runner's connection that fails in its handshake — out of time at a busy runner, or closed by the runner to make room — connects again, and its Ping is answered", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port_again")
      const { port } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3), listenHost: "127.0.0.2" }, [])
      const secret = yield* secretOf(url)
      const front = yield* frontOf(port)
      // The first connection gets no answer: the client's handshake runs out of time, and it connects again.
      front.next("silent")
      yield* ping(port, secret)
      expect(front.connections()).toBeGreaterThanOrEqual(2)
      // The next is held in the runner's handshake; a flood from the same address fills the runner's
      // room for handshakes, and the oldest of that address — the client's — is closed to make room.
      const held = front.connections()
      front.next("withheld")
      const pinging = yield* Effect.fork(ping(port, secret))
      yield* Effect.promise(() => front.challenged(held))
      const flood: Array<Socket> = []
      try {
        yield* Effect.promise(() =>
          Promise.all(Array.from({ length: RunnerPort.maxPendingHandshakes }, () =>
            new Promise<void>((challenged) => {
              const socket = connect({ port, host: "127.0.0.2", localAddress: "127.0.0.1" })
              flood.push(socket)
              socket.on("error", () => {})
              let received = 0
              socket.on("data", (chunk: Buffer) => {
                received += chunk.length
                if (received >= wire.challengeLength) challenged()
              })
              socket.on("close", () => challenged())
            })))
        )
        yield* Fiber.join(pinging)
        expect(front.connections()).toBeGreaterThanOrEqual(held + 2)
      } finally {
        for (const socket of flood) socket.destroy()
      }
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })

  it.live("a runner's client sends a port that cannot prove the cluster secret nothing but its hello, fails, and connects again", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_port_fake")
      const { port: runnerPort } = yield* runnerInProcess(url, { shardsPerGroup: 4, shardLockTtl: Duration.seconds(3) }, [])
      const secret = yield* secretOf(url)
      const secretHex = Buffer.from(Redacted.value(secret)).toString("hex")
      /** A runner's client pings the fake: it sends only its hello on each connection, closes it, connects again, and its call fails. */
      const refusedBy = (serve: (socket: Socket, seen: Seen) => void, closes: number) =>
        Effect.gen(function*() {
          const fake = yield* fakePort(serve)
          const client = yield* clientOf(fake.port, secret)
          const pinging = yield* Effect.fork(client.Ping())
          yield* Effect.promise(() => fake.until(closes))
          for (const seen of fake.connections) {
            expect(carriesProtocol(seen.received)).toBe(false)
            expect(seen.received.length).toBeLessThanOrEqual(wire.helloLength)
            // A connection the client gave up on before it wrote (its open timed out on a busy machine) carries nothing at all.
            if (seen.closed && seen.received.length > 0) expect(seen.received.subarray(0, wire.helloMagic.length)).toEqual(wire.helloMagic)
          }
          expect(fake.connections.filter((seen) => seen.closed).length).toBeGreaterThanOrEqual(closes)
          // The call fails (the handshake's failure reaches it) rather than hang; nothing of the secret is in its error.
          const exit = yield* Fiber.await(pinging)
          expect(Exit.isFailure(exit)).toBe(true)
          if (Exit.isFailure(exit)) expect(Cause.pretty(exit.cause)).not.toContain(secretHex)
        }).pipe(Effect.scoped)
      /** Sends a well-formed challenge of this version at once; given the client's hello, `answer` says what follows it. */
      const challenging = (answer: (hello: Buffer, nonce: Buffer) => Uint8Array | undefined) => (socket: Socket, seen: Seen) => {
        const nonce = randomBytes(wire.nonceLength)
        socket.write(Buffer.concat([RunnerPort.challengeMagic, nonce]))
        let answered = false
        socket.on("data", () => {
          if (answered || seen.received.length < wire.helloLength) return
          answered = true
          const reply = answer(seen.received.subarray(0, wire.helloLength), nonce)
          if (reply !== undefined) socket.write(reply)
        })
      }

      // A proof of the right shape under another key: refused at once, and the client connects again.
      yield* refusedBy(challenging(() => createHmac("sha256", randomBytes(32)).update("a guess").digest()), 2)
      // No proof at all: the client gives up when the handshake's time is up, on its last try (`RunnerPort.reconnect`).
      yield* refusedBy(challenging(() => undefined), 1)
      // A runner of version 1 (its challenge proves nothing): refused.
      yield* refusedBy((socket) => socket.write(Buffer.concat([wire.version1Magic, randomBytes(wire.nonceLength)])), 2)
      // A relay to a real runner at another address: that runner's proof names its own address, so it is refused here.
      yield* refusedBy((socket) => {
        const upstream = connect(runnerPort, "127.0.0.1")
        upstream.on("error", () => {})
        upstream.on("data", (chunk: Buffer) => socket.write(chunk))
        socket.on("data", (chunk: Buffer) => upstream.write(chunk))
        socket.on("close", () => upstream.destroy())
      }, 2)
      // The same client reaches the real runner itself.
      yield* ping(runnerPort, secret)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })
})
