/**
 * The runners' port with a credential, proven both ways: every connection proves it knows the
 * cluster secret (`ClusterSecret`) before one byte of it reaches `@effect/cluster`'s protocol
 * decoder, and the runner that accepted it proves it too before the connecting one sends a byte of
 * the protocol.
 *
 * The handshake (version 2) is three messages. When the connection opens, the connecting runner
 * sends `helloMagic` and a fresh 32-byte nonce, and the accepting runner sends `challengeMagic` and
 * a fresh nonce of its own. Once it has the hello, the accepting runner sends its proof; the
 * connecting runner checks it and only then sends its own proof, then the protocol. Each proof is
 * HMAC-SHA256(secret, its role's context ‖ both nonces ‖ the accepting runner's `host:port`, as the
 * cluster knows it): a proof is good for one connection only (a captured handshake replayed on
 * another fails), neither side's proof can be sent back as the other's, and a port that relays to
 * another runner gets that runner's proof, for its own address, which does not pass here. Both
 * sides compare in constant time; the accepting runner closes a connection whose proof is wrong or
 * has not come within `handshakeTimeout`, keeping at most 32 bytes of it at a time until then, and
 * holds at most `maxPendingHandshakes` connections in the handshake (one more closes the oldest of
 * the source address that has the most); the
 * connecting runner does the same, having sent its hello only: a port
 * that cannot prove the secret (a local user's, bound to a runner's address while the runner is
 * down) gets no proof and no protocol byte, and the RPC client takes the failure for a connection
 * that did not open and connects again. A connection that fails otherwise before its handshake is
 * done (refused, closed, out of time: a runner busy or making room) is tried again twice, 0.1
 * s after its first failure and 0.2 s after its second (`reconnect`), before the calls waiting on it fail. The secret itself never crosses the wire, nor is it in an
 * error. Another version is refused either way — a runner with no handshake (an earlier release)
 * or with version 1's (a development version, in which only the connecting side proved itself):
 * its first bytes are not this version's. A cluster's runners must all run the same version. Without
 * TLS the traffic after the handshake is not encrypted: on a network others can read, they can read
 * it, and one who can also rewrite it between two live runners can take over a connection after its
 * handshake. With `tls` (`RunnerTls`: mutual TLS with a cluster CA) the port speaks TLS first and the
 * handshake, byte for byte the same, runs inside it.
 *
 * Both sides are the library's own services, wrapped: a `SocketServer` whose connections' reads
 * start only after the handshake and whose writes wait for it, and the `Runners.RpcClientProtocol` of
 * `@effect/platform-node`, whose sockets do their side of it before their first write. `layer`
 * composes them as `NodeClusterSocket.layer` composes its unguarded ones (SQL storage, msgpack),
 * and lets a runner that lost the race to create the storage's tables try again.
 *
 * @since 0.2.0
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
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
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { PostgresEventStore } from "../postgres.js"
import { ClusterSecret } from "./ClusterSecret.js"
import * as RunnerTls from "./RunnerTls.js"

/** What the accepting runner sends first: the handshake's name and version, then its nonce. */
export const challengeMagic = new TextEncoder().encode("effect-agent runners 2\n")

/** What the connecting runner sends first: the handshake's name and version, then its nonce. */
export const helloMagic = new TextEncoder().encode("effect-agent runners 2 hello\n")

/** Each nonce's length, and each proof's (HMAC-SHA256). */
export const nonceLength = 32
export const proofLength = 32

/** The challenge's length (without the proof that follows it). */
export const challengeLength = challengeMagic.length + nonceLength

/** The hello's length. */
export const helloLength = helloMagic.length + nonceLength

/** Which side a proof comes from. */
export type Role = "accepting" | "connecting"

/**
 * What a proof is bound to besides the nonces and the address: this handshake and the side that
 * proves, so the key proves nothing elsewhere and neither side's proof can be sent back as the other's.
 */
const contexts: Record<Role, Uint8Array> = {
  accepting: new TextEncoder().encode("effect-agent runners 2: accepting runner's proof\n"),
  connecting: new TextEncoder().encode("effect-agent runners 2: connecting runner's proof\n")
}

/** How long a connection has to finish the handshake before it is closed (by either side). */
export const handshakeTimeout = Duration.seconds(5)

/**
 * How many connections of a runners' port may be in the handshake at once. Each holds a fiber, a
 * timer and a descriptor for up to `handshakeTimeout`, before it proved anything: without a bound
 * whoever reaches the port holds as many as it opens. A runner's own handshake takes about a
 * millisecond, and a cluster's runners connect to a port a few at a time, so 64 leaves them room.
 */
export const maxPendingHandshakes = 64

/**
 * The connections of a runners' port in the handshake now, tagged with the port (`port`): at most
 * `maxPendingHandshakes`.
 */
export const pendingHandshakes = Metric.gauge("effect_agent_runner_pending_handshakes", {
  description: "connections of the runners' port that have not finished the handshake"
})

/**
 * The connections of one port in the handshake, at most `limit`. One more evicts one: the oldest of
 * the source address that holds the most of them. A flood from one address then evicts its own
 * connections, never a runner's from another address; from the runner's own address (a local user)
 * it evicts the oldest, which a runner's handshake, done in about a millisecond, is not unless the
 * flood opens `limit` connections within it.
 */
export interface Pending {
  /** A connection from `source` enters; `evict` closes it if it must make room. What it returns: it left (proven or closed). */
  readonly enter: (source: string, evict: () => void) => () => void
}

/** An empty set of connections in the handshake, reporting its size to `sized`. */
export const pending = (limit: number, sized: (size: number) => void = () => {}): Pending => {
  const waiting = new Map<object, { readonly source: string; readonly evict: () => void }>()
  const bySource = new Map<string, number>()
  const remove = (key: object) => {
    const entry = waiting.get(key)
    if (entry === undefined) return undefined
    waiting.delete(key)
    const left = bySource.get(entry.source)! - 1
    if (left === 0) bySource.delete(entry.source)
    else bySource.set(entry.source, left)
    return entry
  }
  return {
    enter: (source, evict) => {
      if (waiting.size >= limit) {
        const most = Math.max(...bySource.values())
        // The map keeps the order of entry: the first of that source is its oldest.
        for (const [key, entry] of waiting) {
          if (bySource.get(entry.source) === most) {
            remove(key)
            entry.evict()
            break
          }
        }
      }
      const key = {}
      waiting.set(key, { source, evict })
      bySource.set(source, (bySource.get(source) ?? 0) + 1)
      sized(waiting.size)
      return () => {
        if (remove(key) !== undefined) sized(waiting.size)
      }
    }
  }
}

/**
 * The connections of a runners' port with TLS in the TLS handshake now (before the secret's), tagged
 * with the port (`port`): at most `maxPendingHandshakes`.
 */
export const pendingTlsHandshakes = Metric.gauge("effect_agent_runner_pending_tls_handshakes", {
  description: "connections of the runners' port (with TLS) that have not finished the TLS handshake"
})

/** A connection's place among those in the handshake: it enters when its handshake starts and leaves once proven or closed. */
type Admission = (evict: () => void) => () => void

/** What both proofs of one connection cover: both nonces, and the accepting runner's address as the cluster knows it. */
export interface Transcript {
  readonly connectingNonce: Uint8Array
  readonly acceptingNonce: Uint8Array
  readonly address: RunnerAddress.RunnerAddress
}

/**
 * A side's proof: HMAC-SHA256(secret, its role's context ‖ the connecting nonce ‖ the accepting
 * nonce ‖ `host:port`). The nonces have a fixed length and the port has no colon, so no two
 * transcripts share these bytes.
 */
export const proof = (secret: Redacted.Redacted<Uint8Array>, role: Role, transcript: Transcript): Uint8Array =>
  new Uint8Array(
    createHmac("sha256", Redacted.value(secret))
      .update(contexts[role])
      .update(transcript.connectingNonce)
      .update(transcript.acceptingNonce)
      .update(`${transcript.address.host}:${transcript.address.port}`)
      .digest()
  )

const concat = (a: Uint8Array, b: Uint8Array) => {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a)
  joined.set(b, a.length)
  return joined
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b)

const encoder = new TextEncoder()
const bytesOf = (chunk: string | Uint8Array) => typeof chunk === "string" ? encoder.encode(chunk) : chunk

/** One step of a handshake: it reads `expect` bytes, then says what to send back and what comes next (nothing: the protocol). */
interface Step {
  readonly expect: number
  readonly received: (bytes: Uint8Array) => Exit.Exit<{ readonly reply?: Uint8Array; readonly next?: Step }, Socket.SocketError>
}

/** One connection's handshake, as one side holds it: what it sends when the connection opens, and its first step. */
interface Handshake {
  readonly opening: Uint8Array
  readonly first: Step
}

/** A side of the handshake: a fresh one for each connection, and how this side ends one that did not finish in time. */
interface Side {
  readonly start: () => Handshake
  readonly expired: () => Socket.SocketError
}

/**
 * A socket whose runs begin with the handshake of `side`: the handler sees only the bytes after
 * it, and writes wait until it is done. Each run is a connection of its own (a client's socket
 * reconnects by running again), with a handshake of its own.
 */
const guarded = (socket: Socket.Socket, side: Side, admission?: Admission): Socket.Socket => {
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
        // The replies go out after the opening: the other side's bytes may arrive before this side's `onOpen` ran.
        const openingSent = Effect.unsafeMakeLatch(false)
        const handshake = side.start()
        let step: Step | undefined = handshake.first
        let collected = new Uint8Array(0)
        let open = false
        // Rejected: the rest of the connection is dropped unread, so it gets one answer, not one per step of bytes it sends.
        let rejected = false
        // One connection too many in the handshake: the one evicted is closed as one that took too long.
        const leave = admission?.(() => Deferred.unsafeDone(failed, Exit.fail(side.expired())))
        if (leave !== undefined) yield* Scope.addFinalizer(scope, Effect.sync(leave))
        // A silent or slow connection: closed when the handshake has not ended in time.
        yield* Effect.sleep(handshakeTimeout).pipe(
          Effect.zipRight(Effect.suspend(() => open ? Effect.void : Deferred.fail(failed, side.expired()))),
          Effect.forkIn(scope)
        )
        const send = (replies: ReadonlyArray<Uint8Array>) =>
          replies.length === 0 ? Effect.void : openingSent.whenOpen(Effect.forEach(replies, write, { discard: true }))
        const onChunk = (chunk: string | Uint8Array) => {
          if (open) return handler(bytesOf(chunk))
          if (rejected) return
          let bytes = bytesOf(chunk)
          const replies: Array<Uint8Array> = []
          while (step !== undefined) {
            const missing = step.expect - collected.length
            if (bytes.length < missing) {
              collected = concat(collected, bytes)
              return send(replies)
            }
            const head = concat(collected, bytes.subarray(0, missing))
            collected = new Uint8Array(0)
            bytes = bytes.subarray(missing)
            const outcome = step.received(head)
            if (Exit.isFailure(outcome)) {
              rejected = true
              Deferred.unsafeDone(failed, Exit.failCause(outcome.cause))
              return
            }
            if (outcome.value.reply !== undefined) replies.push(outcome.value.reply)
            step = outcome.value.next
          }
          open = true
          leave?.()
          const handed = bytes.length > 0 ? handler(bytes) : undefined
          return Effect.gen(function*() {
            yield* send(replies)
            proven.unsafeOpen()
            if (options?.onOpen) yield* options.onOpen
            if (Effect.isEffect(handed)) yield* handed
          })
        }
        const onOpen = write(handshake.opening).pipe(
          Effect.zipRight(openingSent.open),
          Effect.catchAll((error) => Deferred.fail(failed, error)),
          Effect.asVoid
        )
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

/** A step that reads `magic` and goes on to `next`, or fails with `wrong()`. */
const expectMagic = (magic: Uint8Array, wrong: () => Socket.SocketError, next: Step): Step => ({
  expect: magic.length,
  received: (bytes) => sameBytes(bytes, magic) ? Exit.succeed({ next }) : Exit.fail(wrong())
})

/** A normal close for the RPC server (nothing to log per stranger), a policy violation by its code. */
const refused = () => new Socket.SocketCloseError({ reason: "Close", code: 1008 })

/**
 * The accepting side, at `address` (the runner's, as the cluster knows it): sends its challenge at
 * once; given the hello, proves itself; then checks the connecting side's proof in constant time.
 */
const accepting = (secret: Redacted.Redacted<Uint8Array>, address: RunnerAddress.RunnerAddress): Side => ({
  start: () => {
    const acceptingNonce = new Uint8Array(randomBytes(nonceLength))
    const answer = (transcript: Transcript): Step => ({
      expect: proofLength,
      received: (given) => sameBytes(given, proof(secret, "connecting", transcript)) ? Exit.succeed({}) : Exit.fail(refused())
    })
    const hello: Step = {
      expect: nonceLength,
      received: (connectingNonce) => {
        const transcript = { connectingNonce, acceptingNonce, address }
        return Exit.succeed({ reply: proof(secret, "accepting", transcript), next: answer(transcript) })
      }
    }
    return { opening: concat(challengeMagic, acceptingNonce), first: expectMagic(helloMagic, refused, hello) }
  },
  expired: refused
})

/** Why the connecting side gave up on a port that answered: it is not a runner of this cluster and version, and will not become one (not tried again). */
class NotARunner extends Error {}

/** The connecting side's refusals of a port: reasons the RPC client takes for a connection that did not open (it connects again later). */
const notOpened = (detail: string) => new Socket.SocketGenericError({ reason: "Open", cause: new NotARunner(detail) })

/**
 * How a connection to another runner that failed before its handshake was done is tried again before
 * the call on it fails: twice, 100 ms and then 200 ms later. Such a failure is often a port that
 * answers the next connection: a runner too busy to finish a handshake in `handshakeTimeout` (a
 * flood of connections it serves in the same process), or one that closed this connection to make
 * room among those in its handshake (`maxPendingHandshakes`). Bounded, so that a call to a runner
 * that is gone still fails (and the cluster's health checks mark it unavailable): a refused port
 * fails in about 0.3 s, one that never answers after three handshakes' time.
 */
export const reconnect = Schedule.exponential(Duration.millis(100)).pipe(Schedule.intersect(Schedule.recurs(2)))

/**
 * A failure before the handshake was done that another connection may not have: anything but a port
 * that proved it is not a runner of this cluster, or a certificate refused either way (`RunnerTls.CertificateRefused`).
 */
const transient = (error: unknown) =>
  Socket.isSocketError(error) &&
  !("cause" in error && (error.cause instanceof RunnerTls.CertificateRefused || (error.reason === "Open" && error.cause instanceof NotARunner)))

/**
 * `socket` (the connecting side's, guarded), whose run connects again (`schedule`) while a
 * connection fails, or is closed, before its handshake is done (`transient`). Not a byte of the
 * protocol has crossed such a connection (the protocol's writes wait for a proven one), so nothing
 * is sent twice. The RPC client's own `retryTransientErrors` cannot be bounded: its calls wait for
 * as long as it retries, and once a bounded schedule ran out they would wait for ever.
 */
const reconnecting = (socket: Socket.Socket, schedule: Schedule.Schedule<unknown, unknown>): Socket.Socket => {
  const run = <_, E, R>(
    handler: (chunk: Uint8Array) => Effect.Effect<_, E, R> | void,
    options?: { readonly onOpen?: Effect.Effect<void> | undefined }
  ): Effect.Effect<void, Socket.SocketError | E, R> =>
    Effect.suspend(() => {
      // The guarded socket opens a connection to the protocol once both sides proved the secret.
      let proven = false
      const onOpen = Effect.suspend(() => {
        proven = true
        return options?.onOpen ?? Effect.void
      })
      const attempt = socket.run(handler, { onOpen }).pipe(
        Effect.zipRight(Effect.suspend(() => proven ? Effect.void : Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause: new Error("the runners' port closed the connection in the handshake") }))))
      )
      return Effect.retry(attempt, { schedule, while: (error) => !proven && transient(error) })
    })
  return Socket.Socket.of({ [Socket.TypeId]: Socket.TypeId, run, runRaw: run, writer: socket.writer })
}

/**
 * The connecting side, to `address`: sends its hello at once; checks the challenge's version and the
 * accepting side's proof in constant time, and only then proves itself. A port that cannot prove
 * the secret gets the hello only, never a proof nor a protocol byte.
 */
const connecting = (secret: Redacted.Redacted<Uint8Array>, address: RunnerAddress.RunnerAddress): Side => ({
  start: () => {
    const connectingNonce = new Uint8Array(randomBytes(nonceLength))
    const challenge: Step = {
      expect: nonceLength + proofLength,
      received: (bytes) => {
        const transcript = { connectingNonce, acceptingNonce: bytes.subarray(0, nonceLength), address }
        return sameBytes(bytes.subarray(nonceLength), proof(secret, "accepting", transcript))
          ? Exit.succeed({ reply: proof(secret, "connecting", transcript) })
          : Exit.fail(notOpened("the runners' port did not prove the cluster secret"))
      }
    }
    const otherVersion = () => notOpened("the runners' port did not send this version's challenge (another version of effect-agent, or not a runner)")
    return { opening: concat(helloMagic, connectingNonce), first: expectMagic(challengeMagic, otherVersion, challenge) }
  },
  // Transient for the RPC client: it connects again.
  expired: () => new Socket.SocketGenericError({ reason: "OpenTimeout", cause: new Error("the runners' port did not finish the handshake in time") })
})

/**
 * A socket to the runner at `address` that proves the cluster secret, once that runner proved it,
 * before its first write; a connection that fails before that is tried again (`reconnect`).
 */
export const connectingSocket = (socket: Socket.Socket, secret: Redacted.Redacted<Uint8Array>, address: RunnerAddress.RunnerAddress): Socket.Socket =>
  reconnecting(guarded(socket, connecting(secret, address)), reconnect)

/**
 * A connection to the runners' port of the runner at `address` that proves it and hands its bytes on
 * only after the other side's right proof; while in the handshake, it holds a place among `admission`'s.
 */
export const acceptingSocket = (
  socket: Socket.Socket,
  secret: Redacted.Redacted<Uint8Array>,
  address: RunnerAddress.RunnerAddress,
  admission?: Admission
): Socket.Socket => guarded(socket, accepting(secret, address), admission)

/**
 * A socket server of the runner at `address` whose connections must prove the cluster secret (and
 * are proven it), at most `maxPendingHandshakes` at a time in the handshake (`pending`).
 */
export const guardServer = (
  server: SocketServer.SocketServer["Type"],
  secret: Redacted.Redacted<Uint8Array>,
  address: RunnerAddress.RunnerAddress
): SocketServer.SocketServer["Type"] => {
  const gauge = pendingHandshakes.pipe(Metric.tagged("port", String(server.address._tag === "TcpAddress" ? server.address.port : server.address.path)))
  const inHandshake = pending(maxPendingHandshakes, (size) => gauge.unsafeUpdate(size, []))
  return SocketServer.SocketServer.of({
    address: server.address,
    run: (handler) =>
      server.run((socket) =>
        Effect.flatMap(Effect.serviceOption(NodeSocket.NetSocket), (connection) => {
          // The peer's address, to evict from the source with the most connections in the handshake.
          const source = Option.match(connection, { onNone: () => "", onSome: (net) => net.remoteAddress ?? "" })
          return handler(acceptingSocket(socket, secret, address, (evict) => inHandshake.enter(source, evict)))
        })
      )
  })
}

/** The runners' transport's options: TLS (`RunnerTls`) or none (plaintext, the secret's handshake only). */
export interface Options {
  readonly tls?: RunnerTls.RunnerTls | undefined
}

/**
 * The runners' port, listening at the sharding config's address (with `tls`, over mutual TLS),
 * guarded. Its proofs name the runner's address (`runnerAddress`, which the others connect to,
 * even when it listens elsewhere).
 */
export const layerSocketServerWith = (
  options: Options
): Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig | ClusterSecret> => {
  const tls = options.tls
  const listening: Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig> = tls === undefined
    ? NodeClusterSocket.layerSocketServer
    : Layer.scoped(
      SocketServer.SocketServer,
      Effect.gen(function*() {
        const config = yield* ShardingConfig.ShardingConfig
        const listen = Option.orElse(config.runnerListenAddress, () => config.runnerAddress)
        if (Option.isNone(listen)) return yield* Effect.dieMessage("RunnerPort.layerSocketServerWith: ShardingConfig.runnerListenAddress is None")
        // The TLS handshake is bounded as the secret's is: a place among at most `maxPendingHandshakes`, for at most `handshakeTimeout`.
        return yield* RunnerTls.server(tls, listen.value, handshakeTimeout, (port) => {
          const gauge = pendingTlsHandshakes.pipe(Metric.tagged("port", String(port)))
          return pending(maxPendingHandshakes, (size) => gauge.unsafeUpdate(size, [])).enter
        })
      })
    )
  return Layer.effect(
    SocketServer.SocketServer,
    Effect.gen(function*() {
      const config = yield* ShardingConfig.ShardingConfig
      if (Option.isNone(config.runnerAddress)) return yield* Effect.dieMessage("RunnerPort.layerSocketServer: ShardingConfig.runnerAddress is None")
      return guardServer(yield* SocketServer.SocketServer, yield* ClusterSecret, config.runnerAddress.value)
    })
  ).pipe(Layer.provide(listening))
}

/** The runners' port without TLS (see `layerSocketServerWith`). */
export const layerSocketServer: Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig | ClusterSecret> =
  layerSocketServerWith({})

/**
 * A connection to the runner at `address` (with `tls`, over mutual TLS) that proves the cluster
 * secret before its first write, once that runner proved it. `log` says why a TLS handshake failed.
 */
export const clientSocket = (
  address: RunnerAddress.RunnerAddress,
  secret: Redacted.Redacted<Uint8Array>,
  options: Options & { readonly log?: (key: string, line: string) => Effect.Effect<void> }
): Effect.Effect<Socket.Socket, Socket.SocketError> =>
  Effect.map(
    options.tls === undefined
      // No Nagle: the connecting side's proof and its first request are two small writes in a row, and
      // the second would wait for the first's ACK, which the accepting side delays ~40 ms (it has nothing to send).
      ? NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port, noDelay: true })
      : RunnerTls.connect(options.tls, address, { openTimeout: 1000, log: options.log ?? RunnerTls.throttled() }),
    (socket) => connectingSocket(socket, secret, address)
  )

/** Connections to other runners (as `NodeClusterSocket.layerClientProtocol` opens them, with `tls` over mutual TLS) that take part in the handshake. */
export const layerClientProtocolWith = (options: Options): Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization | ClusterSecret> =>
  Layer.effect(
    Runners.RpcClientProtocol,
    Effect.gen(function*() {
      const serialization = yield* RpcSerialization.RpcSerialization
      const secret = yield* ClusterSecret
      // One log of TLS failures per runner's clients: a peer that keeps failing is one line per `RunnerTls.logEvery`.
      const log = RunnerTls.throttled()
      return Effect.fnUntraced(function*(address: RunnerAddress.RunnerAddress) {
        const socket = yield* clientSocket(address, secret, { ...options, log })
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, socket),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        )
      }, Effect.orDie)
    })
  )

/** Connections to other runners without TLS (see `layerClientProtocolWith`). */
export const layerClientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization | ClusterSecret> =
  layerClientProtocolWith({})

/**
 * A storage of `@effect/cluster` whose operations run again when PostgreSQL cancels a statement of
 * theirs that their fiber did not interrupt (`PostgresEventStore.retriedOnLateCancel`): its statements share the runner's pool
 * with the store's, so the library's cancel of an interrupted store statement can land on one.
 * Unretried, a cancelled `saveRequest` fails the client's message (a turn, an answer), a cancelled
 * `register` the runner's start, a cancelled `saveReply` the entity's reply.
 */
export const lateCancelled = <I, S extends object, E, R>(tag: Context.Tag<I, S>, storage: Layer.Layer<I, E, R>): Layer.Layer<I, E, R> =>
  Layer.effect(tag, Effect.map(tag, PostgresEventStore.retriedOnLateCancel)).pipe(Layer.provide(storage))

/**
 * `NodeClusterSocket.layer({ storage: "sql" })` with the guarded port and connections (over mutual
 * TLS with `options.tls`): the runner's transport (server and clients), its peers' health checks
 * (which connect too), SQL storage of runners and messages, msgpack.
 *
 * Shard locks are rows of `cluster_locks` that expire (`shardLockDisableAdvisory`), not the
 * library's default PostgreSQL advisory locks: an advisory lock lasts as long as its connection, so
 * a runner frozen (SIGSTOP, a VM paused) or cut off by the network — whose connection the server
 * keeps open for hours — kept its shards, and its sessions waited with no limit. A row lasts
 * `shardLockExpiration` past its last renewal, judged on the database's clock: once it lapsed the
 * runners left take the shard, and a frozen runner that wakes finds it gone at its next renewal.
 * `shardingConfig` may still set it back.
 */
export const layer = (shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>, options: Options = {}) => {
  const clients = layerClientProtocolWith(options)
  // Two runners starting at once on an empty database both create `@effect/cluster`'s tables: one
  // fails on PostgreSQL's catalog (a duplicate type or relation; the message storage's migrator
  // dies of it) and tries again, finding them made. A failure that lasts is the runner's defect still.
  const created = Schedule.spaced(Duration.millis(200)).pipe(Schedule.intersect(Schedule.recurs(3)))
  const retried = <A, E, R>(storage: Layer.Layer<A, E, R>) =>
    storage.pipe(Layer.catchAllCause((cause) => Layer.fail(cause)), Layer.retry(created), Layer.catchAll((cause) => Layer.failCause(cause)), Layer.orDie)
  const transport = SocketRunner.layer.pipe(Layer.provide([layerSocketServerWith(options), clients]))
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clients))
  return transport.pipe(
    Layer.provide(health),
    Layer.provideMerge(lateCancelled(MessageStorage.MessageStorage, retried(SqlMessageStorage.layer))),
    Layer.provide(lateCancelled(RunnerStorage.RunnerStorage, retried(SqlRunnerStorage.layer))),
    Layer.provide(ShardingConfig.layerFromEnv({ shardLockDisableAdvisory: true, ...shardingConfig })),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}
