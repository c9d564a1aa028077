/**
 * What TLS costs on the runners' port (not a row of `run.ts`; nothing asserted): over loopback, a
 * plaintext port and a TLS port (certificates made by openssl in a temp folder), each with the
 * secret's handshake. Per round, for each side in turn (their order alternating): the time to open
 * a connection through both handshakes, and `BENCH_TLS_TRIPS` (2,000) round trips of a 1 KB message
 * echoed by the port — wall time and this process's CPU time (both ends run here).
 *
 *   npx tsx bench/runner-tls.ts [rounds, default 8]
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import type * as Socket from "@effect/platform/Socket"
import * as SocketServer from "@effect/platform/SocketServer"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { loadavg } from "node:os"
import { ClusterSecret, RunnerPort, type RunnerTls } from "../src/cluster.js"
import { makeCertificates } from "./support/certificates.js"
import { freePort } from "./support/ports.js"

const rounds = Number(process.argv[2] ?? 8)
const trips = Number(process.env["BENCH_TLS_TRIPS"] ?? 2000)
const secret = Redacted.make(new Uint8Array(randomBytes(32)))
const message = new Uint8Array(randomBytes(1024))

/** An echoing runners' port at 127.0.0.1 (a free port: its proofs name it). */
const echoPort = (tls: RunnerTls.RunnerTls | undefined) =>
  Effect.gen(function*() {
    const free = yield* Effect.promise(freePort)
    const config = ShardingConfig.layer({ runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", free)) })
    const server = Context.get(
      yield* Layer.build(RunnerPort.layerSocketServerWith({ tls }).pipe(Layer.provide(config), Layer.provide(Layer.succeed(ClusterSecret.ClusterSecret, secret)))),
      SocketServer.SocketServer
    )
    const port = server.address._tag === "TcpAddress" ? server.address.port : 0
    return { port, server }
  })

/** One connection: opened through both handshakes, then `trips` echoes of `message`. */
const measure = (port: number, tls: RunnerTls.RunnerTls | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const started = performance.now()
    const cpu0 = process.cpuUsage()
    const socket: Socket.Socket = yield* RunnerPort.clientSocket(RunnerAddress.make("127.0.0.1", port), secret, { tls }).pipe(Effect.orDie)
    let received = 0
    let target = message.length
    let waiting = yield* Deferred.make<void>()
    yield* Effect.forkScoped(socket.runRaw((chunk) => {
      received += chunk.length
      if (received >= target) Deferred.unsafeDone(waiting, Effect.void)
    }))
    const write = yield* socket.writer
    // The first echo: both handshakes done.
    yield* write(message)
    yield* Deferred.await(waiting)
    const open = performance.now() - started
    const tripsStarted = performance.now()
    for (let i = 1; i <= trips; i++) {
      waiting = yield* Deferred.make<void>()
      target = message.length * (i + 1)
      yield* write(message)
      yield* Deferred.await(waiting)
    }
    const wall = performance.now() - tripsStarted
    const cpu = process.cpuUsage(cpu0)
    return { open, perTrip: wall / trips, cpuMs: (cpu.user + cpu.system) / 1000 }
  }))

const main = Effect.gen(function*() {
  const certificates = makeCertificates()
  try {
    const plain = yield* echoPort(undefined)
    const tls = yield* echoPort(certificates.runnerA)
    for (const side of [plain, tls]) {
      yield* Effect.forkScoped(side.server.run((socket) =>
        Effect.scoped(Effect.gen(function*() {
          const write = yield* socket.writer
          yield* socket.runRaw((chunk) => write(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk))
        })).pipe(Effect.ignore)
      ))
    }
    const results = { plain: [] as Array<{ open: number; perTrip: number; cpuMs: number }>, tls: [] as Array<{ open: number; perTrip: number; cpuMs: number }> }
    console.log(`load before: ${loadavg().map((n) => n.toFixed(2)).join(" ")}; ${rounds} rounds × ${trips} trips of 1 KB`)
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ["plain", "tls"] as const : ["tls", "plain"] as const
      for (const name of order) {
        const side = name === "plain" ? plain : tls
        results[name].push(yield* measure(side.port, name === "plain" ? undefined : certificates.runnerB))
      }
    }
    const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    for (const name of ["plain", "tls"] as const) {
      const rows = results[name]
      console.log(
        `${name}: open ${median(rows.map((r) => r.open)).toFixed(2)} ms, per trip ${(median(rows.map((r) => r.perTrip)) * 1000).toFixed(1)} µs, CPU ${median(rows.map((r) => r.cpuMs)).toFixed(0)} ms per round (medians)`
      )
    }
    const ratios = results.tls.map((r, i) => r.perTrip / results.plain[i]!.perTrip)
    console.log(`tls/plain per trip, per round: ${ratios.map((r) => r.toFixed(2)).join(" ")}; median ${median(ratios).toFixed(2)}`)
    console.log(`load after: ${loadavg().map((n) => n.toFixed(2)).join(" ")}`)
  } finally {
    certificates.remove()
  }
})

Effect.runPromise(Effect.scoped(main)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
