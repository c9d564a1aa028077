/**
 * The runners' port with a credential: every connection proves it knows the cluster secret
 * (`ClusterSecret`) before one byte of it reaches `@effect/cluster`'s protocol decoder.
 *
 * The handshake is a challenge and its answer. On each connection the runner that accepted it sends
 * `challengeMagic` and a fresh 32-byte nonce; the connecting runner answers
 * HMAC-SHA256(secret, `proofContext` ‖ nonce), and only then sends the protocol. The accepting
 * runner compares the answer in constant time and closes the connection on a wrong one, or when
 * no answer has come within `handshakeTimeout`; before the answer it keeps at most the answer's 32
 * bytes. The secret itself never crosses the wire, and an answer is good for its nonce only: a
 * captured handshake replayed on a new connection fails. The traffic after the handshake is not
 * encrypted (no TLS): on a network others can read, they can read it.
 *
 * Both sides are the library's own services, wrapped: a `SocketServer` whose connections' reads
 * start only after the proof and whose writes wait for it, and the `Runners.RpcClientProtocol` of
 * `@effect/platform-node`, whose sockets answer the challenge before their first write. `layer`
 * composes them as `NodeClusterSocket.layer` composes its unguarded ones (SQL storage, msgpack),
 * and lets a runner that lost the race to create the storage's tables try again.
 *
 * @since 0.2.0
 */
import type * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as Socket from "@effect/platform/Socket"
import * as SocketServer from "@effect/platform/SocketServer"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { ClusterSecret } from "./ClusterSecret.js"

/** What the accepting runner sends first: the handshake's name and version, then the nonce. */
export const challengeMagic = new TextEncoder().encode("effect-agent runners 1\n")

/** The nonce's length, and the answer's (HMAC-SHA256). */
export const nonceLength = 32
export const proofLength = 32

/** The challenge's length. */
export const challengeLength = challengeMagic.length + nonceLength

/** What the answer is bound to besides the nonce: this handshake, so the key proves nothing elsewhere. */
const proofContext = new TextEncoder().encode("effect-agent runner proof 1\n")

/** How long a connection has to finish the handshake before it is closed. */
export const handshakeTimeout = Duration.seconds(5)

/** The answer to a challenge's nonce. */
export const proof = (secret: Redacted.Redacted<Uint8Array>, nonce: Uint8Array): Uint8Array =>
  new Uint8Array(createHmac("sha256", Redacted.value(secret)).update(proofContext).update(nonce).digest())

const concat = (a: Uint8Array, b: Uint8Array) => {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a)
  joined.set(b, a.length)
  return joined
}

const encoder = new TextEncoder()
const bytesOf = (chunk: string | Uint8Array) => typeof chunk === "string" ? encoder.encode(chunk) : chunk

/** What each side does with the handshake's bytes once it has `expect` of them. */
interface Side {
  /** Sent when the connection opens (the challenge), or nothing. */
  readonly opening: () => Uint8Array | undefined
  /** How many bytes the other side sends before the protocol. */
  readonly expect: number
  /** The bytes received: what to send back (the answer), `undefined` when nothing; fails when wrong. */
  readonly received: (opened: Uint8Array | undefined, bytes: Uint8Array) => Exit.Exit<Uint8Array | undefined, Socket.SocketError>
  /** How this side ends a connection whose handshake did not end in time. */
  readonly expired: () => Socket.SocketError
}

/**
 * A socket whose runs begin with the handshake of `side`: the handler sees only the bytes after
 * it, and writes wait until it is done. Each run is a connection of its own (a client's socket
 * reconnects by running again), with a handshake of its own.
 */
const guarded = (socket: Socket.Socket, side: Side): Socket.Socket => {
  const proven = Effect.unsafeMakeLatch(false)
  const run = <_, E, R>(
    handler: (chunk: Uint8Array) => Effect.Effect<_, E, R> | void,
    options?: { readonly onOpen?: Effect.Effect<void> | undefined }
  ): Effect.Effect<void, Socket.SocketError | E, R> =>
    Effect.scopedWith((scope) =>
      Effect.gen(function*() {
        proven.unsafeClose()
        const write = yield* Scope.extend(socket.writer, scope)
        const failed = yield* Deferred.make<never, Socket.SocketError>()
        let collected = new Uint8Array(0)
        let open = false
        // Refused: the rest of the connection is dropped unread, so it gets one answer, not one per 32 bytes it sends.
        let refused = false
        let opened: Uint8Array | undefined
        // A silent or slow connection: closed when the handshake has not ended in time.
        yield* Effect.sleep(handshakeTimeout).pipe(
          Effect.zipRight(Effect.suspend(() => open ? Effect.void : Deferred.fail(failed, side.expired()))),
          Effect.forkIn(scope)
        )
        const afterProof = (rest: Uint8Array, answer: Uint8Array | undefined) => {
          open = true
          const handed = rest.length > 0 ? handler(rest) : undefined
          return Effect.gen(function*() {
            if (answer !== undefined) yield* write(answer)
            proven.unsafeOpen()
            if (options?.onOpen) yield* options.onOpen
            if (Effect.isEffect(handed)) yield* handed
          })
        }
        const onChunk = (chunk: string | Uint8Array) => {
          if (open) return handler(bytesOf(chunk))
          if (refused) return
          const bytes = bytesOf(chunk)
          const missing = side.expect - collected.length
          if (bytes.length < missing) {
            collected = concat(collected, bytes)
            return
          }
          const head = concat(collected, bytes.subarray(0, missing))
          collected = new Uint8Array(0)
          const outcome = side.received(opened, head)
          if (Exit.isFailure(outcome)) {
            refused = true
            Deferred.unsafeDone(failed, Exit.failCause(outcome.cause))
            return
          }
          return afterProof(bytes.subarray(missing), outcome.value)
        }
        const onOpen = Effect.suspend(() => {
          opened = side.opening()
          return opened === undefined ? Effect.void : write(opened).pipe(Effect.catchAll((error) => Deferred.fail(failed, error)), Effect.asVoid)
        })
        return yield* socket.runRaw(onChunk, { onOpen }).pipe(Effect.raceFirst(Deferred.await(failed)))
      })
    ).pipe(Effect.ensuring(Effect.sync(() => proven.unsafeClose())))
  return Socket.Socket.of({
    [Socket.TypeId]: Socket.TypeId,
    run,
    runRaw: run,
    writer: Effect.map(socket.writer, (write) => (chunk) => Socket.isCloseEvent(chunk) ? write(chunk) : proven.whenOpen(write(chunk)))
  })
}

/** A normal close for the RPC server (nothing to log per stranger), a policy violation by its code. */
const refused = () => new Socket.SocketCloseError({ reason: "Close", code: 1008 })

/** The accepting side: sends the challenge, checks the answer in constant time. */
const accepting = (secret: Redacted.Redacted<Uint8Array>): Side => ({
  opening: () => concat(challengeMagic, new Uint8Array(randomBytes(nonceLength))),
  expect: proofLength,
  received: (challenge, answer) =>
    challenge !== undefined && timingSafeEqual(answer, proof(secret, challenge.subarray(challengeMagic.length)))
      ? Exit.succeed(undefined)
      : Exit.fail(refused()),
  expired: refused
})


/** The connecting side: answers the challenge. */
const connecting = (secret: Redacted.Redacted<Uint8Array>): Side => ({
  opening: () => undefined,
  expect: challengeLength,
  received: (_, challenge) =>
    timingSafeEqual(challenge.subarray(0, challengeMagic.length), challengeMagic)
      ? Exit.succeed(proof(secret, challenge.subarray(challengeMagic.length)))
      : Exit.fail(new Socket.SocketGenericError({ reason: "Open", cause: new Error("the runners' port did not send the handshake's challenge") })),
  // Transient for the RPC client: it connects again.
  expired: () => new Socket.SocketGenericError({ reason: "OpenTimeout", cause: new Error("the runners' port sent no challenge in time") })
})

/** A socket that answers the runners' port's challenge before its first write. */
export const connectingSocket = (socket: Socket.Socket, secret: Redacted.Redacted<Uint8Array>): Socket.Socket => guarded(socket, connecting(secret))

/** A connection to the runners' port that hands its bytes on only after a right answer. */
export const acceptingSocket = (socket: Socket.Socket, secret: Redacted.Redacted<Uint8Array>): Socket.Socket => guarded(socket, accepting(secret))

/** A socket server whose connections must prove the cluster secret. */
export const guardServer = (server: SocketServer.SocketServer["Type"], secret: Redacted.Redacted<Uint8Array>): SocketServer.SocketServer["Type"] =>
  SocketServer.SocketServer.of({
    address: server.address,
    run: (handler) => server.run((socket) => handler(acceptingSocket(socket, secret)))
  })

/** The runners' port, listening at the sharding config's address, guarded. */
export const layerSocketServer: Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig | ClusterSecret> = Layer.effect(
  SocketServer.SocketServer,
  Effect.zipWith(SocketServer.SocketServer, ClusterSecret, guardServer)
).pipe(Layer.provide(NodeClusterSocket.layerSocketServer))

/** Connections to other runners (as `NodeClusterSocket.layerClientProtocol` opens them) that answer the challenge. */
export const layerClientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization | ClusterSecret> = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    const secret = yield* ClusterSecret
    return Effect.fnUntraced(function*(address: RunnerAddress.RunnerAddress) {
      const socket = yield* NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port })
      return yield* RpcClient.makeProtocolSocket().pipe(
        Effect.provideService(Socket.Socket, connectingSocket(socket, secret)),
        Effect.provideService(RpcSerialization.RpcSerialization, serialization)
      )
    }, Effect.orDie)
  })
)

/**
 * `NodeClusterSocket.layer({ storage: "sql" })` with the guarded port and connections: the runner's
 * transport (server and clients), its peers' health checks (which connect too), SQL storage of
 * runners and messages, msgpack.
 */
export const layer = (shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>) => {
  const clients = layerClientProtocol
  // Two runners starting at once on an empty database both create `@effect/cluster`'s tables: one
  // fails on PostgreSQL's catalog (a duplicate type or relation; the message storage's migrator
  // dies of it) and tries again, finding them made. A failure that lasts is the runner's defect still.
  const created = Schedule.spaced(Duration.millis(200)).pipe(Schedule.intersect(Schedule.recurs(3)))
  const retried = <A, E, R>(storage: Layer.Layer<A, E, R>) =>
    storage.pipe(Layer.catchAllCause((cause) => Layer.fail(cause)), Layer.retry(created), Layer.catchAll((cause) => Layer.failCause(cause)), Layer.orDie)
  const transport = SocketRunner.layer.pipe(Layer.provide([layerSocketServer, clients]))
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clients))
  return transport.pipe(
    Layer.provide(health),
    Layer.provideMerge(retried(SqlMessageStorage.layer)),
    Layer.provide(retried(SqlRunnerStorage.layer)),
    Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}
