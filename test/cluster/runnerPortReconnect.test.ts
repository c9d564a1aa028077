/**
 * How a runner's connection to another runner's port tries again (`RunnerPort.reconnect`): a
 * connection that fails before the handshake is done — refused, closed or reset by the port, its
 * handshake's time up — is a port that may answer the next one (a runner busy with a flood of
 * connections, one that closed this one to make room among those in its handshake), so the socket
 * connects again, a bounded number of times, before its run fails. A port that answered and is not
 * a runner of this cluster (a wrong proof, another version) is not tried again. The fake ports here
 * count the connections they got when the run failed: no time is measured.
 */
import { describe, expect, it } from "@effect/vitest"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Duration from "effect/Duration"
import { randomBytes } from "node:crypto"
import { type AddressInfo, createServer, type Socket } from "node:net"
import { RunnerPort } from "../../src/cluster.js"

const secret = Redacted.make(new Uint8Array(randomBytes(32)))

/** A port of this process that does `serve` with each connection, counting them. */
const fakePort = (serve: (socket: Socket) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly connections: () => number; readonly close: () => void }>((resume) => {
      let connections = 0
      const sockets = new Set<Socket>()
      const server = createServer((socket) => {
        connections += 1
        sockets.add(socket)
        socket.on("error", () => {})
        socket.on("close", () => sockets.delete(socket))
        serve(socket)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          port: (server.address() as AddressInfo).port,
          connections: () => connections,
          close: () => {
            for (const socket of sockets) socket.destroy()
            server.close()
          }
        })))
    }),
    (fake) => Effect.sync(() => fake.close())
  )

/** One run of a runner's connection to `port`, to its end: how it ended. */
const runTo = (port: number) =>
  RunnerPort.clientSocket(RunnerAddress.make("127.0.0.1", port), secret, {}).pipe(
    Effect.flatMap((socket) => socket.runRaw(() => {})),
    Effect.scoped,
    Effect.exit
  )

/** How many runs a connection gets: its first and two more (`RunnerPort.reconnect`). */
const attempts = 3

describe("a runner's connection to another runner's port", () => {
  it.effect("is tried again at most twice, 100 ms and then 200 ms later", () =>
    Effect.gen(function*() {
      let runs = 0
      const failing = Effect.suspend(() => {
        runs += 1
        return Effect.fail("not open")
      })
      const fiber = yield* Effect.fork(Effect.retry(failing, RunnerPort.reconnect))
      yield* TestClock.adjust(Duration.millis(99))
      expect(runs).toBe(1)
      yield* TestClock.adjust(Duration.millis(1))
      expect(runs).toBe(2)
      yield* TestClock.adjust(Duration.millis(200))
      expect(runs).toBe(attempts)
      expect(Exit.isFailure(yield* Fiber.await(fiber))).toBe(true)
    }))

  it.live("closed by the port before the handshake is done, it connects again, then fails after its last try", () =>
    Effect.gen(function*() {
      const fake = yield* fakePort((socket) => socket.destroy())
      const exit = yield* runTo(fake.port)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(fake.connections()).toBe(attempts)
    }).pipe(Effect.scoped))

  it.live("refused (no runner there), it fails after its last try", () =>
    Effect.gen(function*() {
      const fake = yield* fakePort(() => {})
      const port = fake.port
      fake.close()
      const exit = yield* runTo(port)
      expect(Exit.isFailure(exit)).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a port that answers with another version's challenge is not tried again", () =>
    Effect.gen(function*() {
      const fake = yield* fakePort((socket) => socket.write(Buffer.concat([Buffer.from("effect-agent runners 1\n"), randomBytes(32)])))
      const exit = yield* runTo(fake.port)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(fake.connections()).toBe(1)
    }).pipe(Effect.scoped))

  it.live("a port whose proof is wrong is not tried again", () =>
    Effect.gen(function*() {
      const fake = yield* fakePort((socket) => {
        socket.write(Buffer.concat([RunnerPort.challengeMagic, randomBytes(RunnerPort.nonceLength)]))
        let received = 0
        socket.on("data", (chunk: Buffer) => {
          received += chunk.length
          if (received >= RunnerPort.helloLength && received - chunk.length < RunnerPort.helloLength) socket.write(randomBytes(RunnerPort.proofLength))
        })
      })
      const exit = yield* runTo(fake.port)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(fake.connections()).toBe(1)
    }).pipe(Effect.scoped))
})
