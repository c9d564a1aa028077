/**
 * Mutual TLS on the runners' port (`RunnerTls`, docs/scaling.md), over real loopback sockets with
 * certificates made by `openssl` for this run (`certificates.ts`): a passive observer between two
 * runners' ends (a TCP relay that records every byte) reads the messages of a plaintext port, and
 * none of a TLS port's; a client with no certificate or another CA's is refused before a byte of
 * the handshake, as is one whose port's certificate names another host; a plaintext client at a TLS
 * port and a TLS client at a plaintext port fail (each side says why in one log line) instead of
 * hanging; and a runner (PostgreSQL, the whole runner) answers the protocol over TLS.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import type * as Socket from "@effect/platform/Socket"
import * as SocketServer from "@effect/platform/SocketServer"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { type AddressInfo, connect, createServer, type Server } from "node:net"
import * as Tls from "node:tls"
import * as Runners from "@effect/cluster/Runners"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { FakeModelProvider } from "../../src/index.js"
import { freshDatabaseUrl } from "../postgres.js"
import { freePort } from "../../bench/support/ports.js"
import { runnerInProcess } from "./inProcess.js"
import { ClusterSecret, RunnerPort, RunnerTls } from "../../src/cluster.js"
import { type Certificates, makeCertificates } from "../../bench/support/certificates.js"

let certificates: Certificates
beforeAll(() => {
  certificates = makeCertificates()
})
afterAll(() => certificates?.remove())

const secret = Redacted.make(new Uint8Array(randomBytes(32)))

/**
 * A passive observer: a TCP relay on 127.0.0.1 to `target()` that records every byte it carries,
 * both ways. The runners' ends dial its address as the accepting runner's (its address as the
 * cluster knows it, the port listening elsewhere: a NAT).
 */
const relay = (target: () => number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly seen: () => Buffer; readonly accepted: () => number; readonly server: Server }>((resume) => {
      const chunks: Array<Buffer> = []
      let accepted = 0
      const server = createServer((socket) => {
        accepted++
        const upstream = connect(target(), "127.0.0.1")
        socket.on("error", () => {})
        upstream.on("error", () => {})
        socket.on("data", (chunk: Buffer) => {
          chunks.push(chunk)
          upstream.write(chunk)
        })
        upstream.on("data", (chunk: Buffer) => {
          chunks.push(chunk)
          socket.write(chunk)
        })
        socket.on("close", () => upstream.destroy())
        upstream.on("close", () => socket.destroy())
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as AddressInfo).port, seen: () => Buffer.concat(chunks), accepted: () => accepted, server })))
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

/** Log lines, as a runner's logger would print them. */
const logged = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ message }) => void lines.push((Array.isArray(message) ? message : [message]).map(String).join(" ")))
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/**
 * A runners' port (`RunnerPort.layerSocketServerWith`) whose address, as the cluster knows it, is
 * `address` (listening on another port of 127.0.0.1): the bytes of each connection that passes TLS
 * (with `tls`) and the secret's handshake are echoed back, and `connections` counts those that got that far.
 */
const echoPort = (tls: RunnerTls.RunnerTls | undefined, address: RunnerAddress.RunnerAddress) =>
  Effect.gen(function*() {
    const logs = logged()
    const context = yield* Layer.build(
      RunnerPort.layerSocketServerWith({ tls }).pipe(
        Layer.provide(ShardingConfig.layer({ runnerAddress: Option.some(address), runnerListenAddress: Option.some(RunnerAddress.make("127.0.0.1", 0)) })),
        Layer.provide(Layer.succeed(ClusterSecret.ClusterSecret, secret)),
        Layer.provide(logs.layer)
      )
    )
    const server = Context.get(context, SocketServer.SocketServer)
    let connections = 0
    yield* Effect.forkScoped(server.run((socket) =>
      Effect.scoped(Effect.gen(function*() {
        const write = yield* socket.writer
        let first = true
        yield* socket.runRaw((chunk) => {
          if (first) connections++
          first = false
          return write(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk)
        })
      })).pipe(Effect.ignore)
    ))
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    return { port, logs: logs.lines, connections: () => connections }
  })

/** Sends `message` over a client's socket to the runners' port at `address` and waits for its echo (or the socket's failure). */
const echoOf = (address: RunnerAddress.RunnerAddress, tls: RunnerTls.RunnerTls | undefined, message: string, log?: (key: string, line: string) => Effect.Effect<void>) =>
  Effect.scoped(Effect.gen(function*() {
    const socket: Socket.Socket = yield* RunnerPort.clientSocket(address, secret, log === undefined ? { tls } : { tls, log })
    const echoed = yield* Deferred.make<string, Socket.SocketError>()
    let received = ""
    yield* socket.runRaw((chunk) => {
      received += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk)
      if (received.includes(message)) Deferred.unsafeDone(echoed, Exit.succeed(received))
    }).pipe(
      Effect.exit,
      Effect.flatMap((exit) => Exit.isFailure(exit) ? Deferred.failCause(echoed, exit.cause) : Deferred.die(echoed, new Error("closed without an echo"))),
      Effect.forkScoped
    )
    const write = yield* socket.writer
    yield* Effect.forkScoped(write(new TextEncoder().encode(message)))
    return yield* Deferred.await(echoed)
  }))

/** A runners' port behind an observer: the relay's address is the port's, as the cluster knows it. */
const observed = (tls: RunnerTls.RunnerTls | undefined) =>
  Effect.gen(function*() {
    let target = 0
    const observer = yield* relay(() => target)
    const address = RunnerAddress.make("127.0.0.1", observer.port)
    const port = yield* echoPort(tls, address)
    target = port.port
    return { observer, address, port }
  })

/**
 * A TLS client of the port at `port`, with `options` (a certificate or none): what it received
 * before the port closed it. A runner's port sends its greeting as soon as TLS is done, so a
 * client that passed TLS receives bytes; one refused in TLS receives none.
 */
const rawTls = (port: number, options: Tls.ConnectionOptions) =>
  Effect.async<{ readonly received: Buffer }>((resume) => {
    let received = Buffer.alloc(0)
    const socket = Tls.connect({ host: "127.0.0.1", port, minVersion: "TLSv1.2", ...options })
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
    })
    socket.on("error", () => {})
    socket.on("close", () => resume(Effect.succeed({ received })))
  })

/** What no log line, error or answer may hold: the key, or where the material lies. */
const expectNoMaterial = (text: string) => {
  expect(text).not.toContain("PRIVATE KEY")
  expect(text).not.toContain("BEGIN CERTIFICATE")
  expect(text).not.toContain(certificates.dir)
}

describe("the runners' port over TLS", () => {
  it.live("a passive observer between two runners reads no message", () =>
    Effect.gen(function*() {
      const { address, observer, port } = yield* observed(certificates.runnerA)
      const marker = `approval of turn ${randomBytes(8).toString("hex")}`
      expect(yield* echoOf(address, certificates.runnerB, marker)).toContain(marker)
      // Both ways: the observer saw the message go and come back, encrypted.
      expect(observer.seen().length).toBeGreaterThan(0)
      expect(observer.seen().includes(marker)).toBe(false)
      // Nor the handshake's greeting: it runs inside TLS.
      expect(observer.seen().includes(Buffer.from(RunnerPort.challengeMagic))).toBe(false)
      expect(port.connections()).toBe(1)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a client with no certificate, another CA's, or at a port whose certificate names another host is refused before a byte of the handshake", () =>
    Effect.gen(function*() {
      const { address, port } = yield* observed(certificates.runnerA)
      // The control: a client with a certificate of the cluster CA gets the port's greeting (then is closed, having sent no hello).
      const member = yield* rawTls(port.port, {
        ca: certificates.runnerB.ca as string,
        cert: certificates.runnerB.certificate as string,
        key: Redacted.value(certificates.runnerB.key) as string
      })
      expect(member.received.subarray(0, RunnerPort.challengeMagic.length)).toEqual(Buffer.from(RunnerPort.challengeMagic))
      // No certificate: the TLS handshake fails, nothing of the runners' handshake comes.
      const bare = yield* rawTls(port.port, { ca: certificates.runnerA.ca as string })
      expect(bare.received.length).toBe(0)
      // Another CA's certificate (trusting the cluster's CA to get that far): refused alike.
      const foreign = yield* rawTls(port.port, {
        ca: certificates.runnerA.ca as string,
        cert: certificates.foreign.certificate as string,
        key: Redacted.value(certificates.foreign.key) as string
      })
      expect(foreign.received.length).toBe(0)
      // A runner with the right certificate still gets through.
      expect(yield* echoOf(address, certificates.runnerB, "after the strangers")).toContain("after the strangers")
      expect(port.connections()).toBe(1)
      // The port said why, and nothing of the material.
      expect(port.logs.some((line) => line.includes("refused a connection from 127.0.0.1 in the TLS handshake ("))).toBe(true)
      // Another CA's certificate is refused by Node's check after OpenSSL's handshake, which closes the
      // connection (no alert): the log names the check's code, not the close's (on main: ECONNRESET).
      expect(port.logs.some((line) => line.includes("in the TLS handshake (UNABLE_TO_VERIFY_LEAF_SIGNATURE)")), port.logs.join("\n")).toBe(true)
      expect(port.logs.some((line) => line.includes("(ECONNRESET)")), port.logs.join("\n")).toBe(false)
      port.logs.forEach(expectNoMaterial)

      // A runner that trusts another CA refuses the port (its certificate is not of that CA).
      const otherCa = yield* Effect.exit(echoOf(address, certificates.foreign, "to the wrong cluster"))
      expect(Exit.isFailure(otherCa)).toBe(true)
      // A port whose certificate is the cluster CA's but names another host: refused by the client.
      const misnamed = yield* observed(certificates.misnamed)
      const clientLogs: Array<string> = []
      const refused = yield* Effect.exit(echoOf(misnamed.address, certificates.runnerB, "to the wrong host", (_key, line) => Effect.sync(() => void clientLogs.push(line))))
      expect(Exit.isFailure(refused)).toBe(true)
      expect(clientLogs.some((line) => line.includes("ERR_TLS_CERT_ALTNAME_INVALID"))).toBe(true)
      expect(misnamed.port.connections()).toBe(0)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a port's certificate this runner refuses fails the connection at once, with a typed error naming the code: not tried again", () =>
    Effect.gen(function*() {
      // On main each was tried twice more (`RunnerPort.reconnect`): three TCP connections, and an untyped Error.
      const cases: ReadonlyArray<readonly [string, RunnerTls.RunnerTls, RunnerTls.RunnerTls]> = [
        ["the port's certificate names another host", certificates.misnamed, certificates.runnerB],
        ["the port's certificate is not of the CA this runner trusts", certificates.runnerA, certificates.foreign]
      ]
      // Not here: this runner's certificate refused by the port. Node's port refuses it with no alert,
      // after this side's TLS 1.3 handshake is done: the connection only closes (the port's log says
      // why), and a close is tried again, as a busy port's is (RunnerTls.certificateCode).
      for (const [name, portTls, clientTls] of cases) {
        const { address, observer, port } = yield* observed(portTls)
        const exit = yield* Effect.exit(echoOf(address, clientTls, "refused", () => Effect.void))
        expect(Exit.isFailure(exit), name).toBe(true)
        expect(observer.accepted(), name).toBe(1)
        expect(port.connections(), name).toBe(0)
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        const refused = (error as { readonly cause?: unknown } | undefined)?.cause
        expect(refused, name).toBeInstanceOf(RunnerTls.CertificateRefused)
        expect((refused as RunnerTls.CertificateRefused).message, name).toMatch(/^The TLS certificate check with the runner at 127\.0\.0\.1:\d+ failed \([A-Z_0-9]+\)/)
        expectNoMaterial(String(Exit.isFailure(exit) ? exit.cause : ""))
      }
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a plaintext runner and a TLS runner cannot talk: each fails within the handshake, and says why", () =>
    Effect.gen(function*() {
      // A plaintext client at a TLS port: the port refuses its greeting, which is not TLS.
      const tlsPort = yield* observed(certificates.runnerA)
      const plainAtTls = yield* Effect.exit(echoOf(tlsPort.address, undefined, "in the clear"))
      expect(Exit.isFailure(plainAtTls)).toBe(true)
      expect(tlsPort.port.connections()).toBe(0)
      expect(tlsPort.port.logs.some((line) => line.includes("in the TLS handshake (") && line.includes("every runner of the cluster needs TLS"))).toBe(true)
      // Nothing of the plaintext client's handshake was answered: the TLS port sent no greeting.
      expect(tlsPort.observer.seen().includes(Buffer.from(RunnerPort.challengeMagic))).toBe(false)

      // A TLS client at a plaintext port: the port's greeting is not TLS, the client fails and logs it.
      const plainPort = yield* observed(undefined)
      const clientLogs: Array<string> = []
      const tlsAtPlain = yield* Effect.exit(echoOf(plainPort.address, certificates.runnerB, "encrypted", (_key, line) => Effect.sync(() => void clientLogs.push(line))))
      expect(Exit.isFailure(tlsAtPlain)).toBe(true)
      expect(plainPort.port.connections()).toBe(0)
      expect(clientLogs.some((line) => line.includes(`the TLS handshake with the runners' port ${plainPort.address.host}:${plainPort.address.port} failed (`))).toBe(true)
      clientLogs.forEach(expectNoMaterial)
      if (Exit.isFailure(tlsAtPlain)) expectNoMaterial(String(tlsAtPlain.cause))

      // A port no one listens on (a runner that is down) is not a TLS matter: a failure, no TLS line.
      const downLogs: Array<string> = []
      const down = yield* Effect.exit(echoOf(RunnerAddress.make("127.0.0.1", yield* Effect.promise(freePort)), certificates.runnerB, "to no one", (_key, line) => Effect.sync(() => void downLogs.push(line))))
      expect(Exit.isFailure(down)).toBe(true)
      expect(downLogs).toEqual([])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("two runners over TLS: a turn streams from the session's owner through the other runner", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("runner_tls")
      const owners = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
      const runner = (name: string, tls: RunnerTls.RunnerTls, responses: ReadonlyArray<FakeModelProvider.ScriptedResponse>) =>
        runnerInProcess(url, {
          shardsPerGroup: 6,
          shardLockTtl: Duration.seconds(3),
          tls,
          onOwned: (sessionId) => Ref.update(owners, (map) => new Map([...map, [sessionId, name]]))
        }, responses)
      const here = yield* runner("here", certificates.runnerA, [])
      const owner = yield* runner("owner", certificates.runnerB, [{ chunks: ["over TLS"] }])
      // A session the other runner owns (a cancel with nothing running reaches it).
      const sessionId = yield* Effect.gen(function*() {
        const session = yield* here.engine.createSession({ cwd: "/work", client: "test" })
        yield* here.engine.cancelTurn({ sessionId: session.sessionId })
        return (yield* Ref.get(owners)).get(session.sessionId) === "owner" ? session.sessionId : yield* Effect.fail("owned by this runner")
      }).pipe(Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 }), Effect.orDie)
      const streamed = yield* here.engine.runTurn({ sessionId, userMessage: "hello" }).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
      expect(streamed.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(streamed.some((event) => event.type === "model.delta" && JSON.stringify(event).includes("over TLS"))).toBe(true)

      // The owner's port answers a runner's client with TLS, and not one without (it cannot reach the protocol).
      const secretOfCluster = yield* ClusterSecret.fromDatabase().pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
      const ping = (tls: RunnerTls.RunnerTls | undefined) =>
        Effect.gen(function*() {
          const makeProtocol = yield* Runners.RpcClientProtocol
          const protocol = yield* makeProtocol(RunnerAddress.make("127.0.0.1", owner.port))
          const client = yield* Effect.provideService(Runners.makeRpcClient, RpcClient.Protocol, protocol)
          return yield* client.Ping()
        }).pipe(
          Effect.provide(RunnerPort.layerClientProtocolWith({ tls })),
          Effect.provide(Layer.succeed(ClusterSecret.ClusterSecret, secretOfCluster)),
          Effect.provide(RpcSerialization.layerMsgPack),
          Effect.provide(Logger.remove(Logger.defaultLogger)),
          Effect.scoped
        )
      // Answered, however long a busy machine takes (vitest's timeout bounds it).
      yield* ping(certificates.runnerA)
      // Not answered: it fails, or it is still waiting at 10 s (either is a refusal).
      expect(Exit.isFailure(yield* Effect.exit(Effect.timeout(ping(undefined), "10 seconds")))).toBe(true)
    }).pipe(Effect.scoped, Effect.orDie), { timeout: 90_000 })

  it.live("a flood of connections that never start TLS holds at most maxPendingHandshakes of them, a runner still gets through, and the silent ones are closed in time", () =>
    Effect.gen(function*() {
      const { address, port } = yield* observed(certificates.runnerA)
      const flood = 3 * RunnerPort.maxPendingHandshakes
      const closed = { count: 0 }
      const sockets = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: flood }, () =>
          new Promise<import("node:net").Socket>((resolve) => {
            const socket = connect(port.port, "127.0.0.1", () => resolve(socket))
            socket.on("error", () => {})
            socket.on("close", () => void closed.count++)
          })))
      )
      try {
        // The oldest are closed to make room: all but the last maxPendingHandshakes (not waiting for the handshake's time).
        yield* Effect.promise(() =>
          new Promise<void>((resolve) => {
            const check = () => closed.count >= flood - RunnerPort.maxPendingHandshakes ? resolve() : void setTimeout(check, 20)
            check()
          })
        )
        // Never more than the bound in the TLS handshake (the gauge the port keeps of them).
        const inTls = Metric.value(RunnerPort.pendingTlsHandshakes.pipe(Metric.tagged("port", String(port.port))))
        const most = (yield* inTls).value
        expect(most).toBeGreaterThan(0)
        expect(most).toBeLessThanOrEqual(RunnerPort.maxPendingHandshakes)
        expect(yield* echoOf(address, certificates.runnerB, "through the flood")).toContain("through the flood")
        // And the flood's newest, silent, are closed once the handshake's time is up (Node leaves them open otherwise).
        yield* Effect.promise(() =>
          new Promise<void>((resolve) => {
            const check = () => closed.count >= flood ? resolve() : void setTimeout(check, 20)
            check()
          })
        )
        expect((yield* inTls).value).toBe(0)
      } finally {
        for (const socket of sockets) socket.destroy()
      }
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("material that does not build is refused with OpenSSL's code, never the material", () =>
    Effect.gen(function*() {
      yield* RunnerTls.check(certificates.runnerA)
      const mismatched = yield* Effect.flip(RunnerTls.check({ ...certificates.runnerA, key: certificates.runnerB.key }))
      // Each failure names the input that is wrong: an embedder with three inputs need not guess.
      expect(mismatched).toMatchObject({ input: "key", code: RunnerTls.keyMismatch })
      expect(mismatched.message).toBe("The runners' TLS key is not the one of its certificate")
      // A CA with no certificate in it: OpenSSL alone would take it, and every handshake would fail.
      const noCa = yield* Effect.flip(RunnerTls.check({ ...certificates.runnerA, ca: "not a certificate" }))
      expect(noCa.input).toBe("ca")
      expect(noCa.message).toMatch(/^The runners' TLS CA certificate cannot be used \(\w+/)
      const noCertificate = yield* Effect.flip(RunnerTls.check({ ...certificates.runnerA, certificate: "not a certificate" }))
      expect(noCertificate.input).toBe("certificate")
      const noKey = yield* Effect.flip(RunnerTls.check({ ...certificates.runnerA, key: Redacted.make("not a key") }))
      expect(noKey.input).toBe("key")
      expectNoMaterial(mismatched.message + noCa.message + noCertificate.message + noKey.message)
    }))
})
