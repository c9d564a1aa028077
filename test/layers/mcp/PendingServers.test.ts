/**
 * `PendingServers.startThenBind`, which HTTP `POST /sessions` and ACP `session/new` and
 * `session/load` use: only the servers' start is interruptible; once started they are bound to the
 * created (or loaded) session even if the caller is interrupted meanwhile (ACP's load bound them
 * with no release before, so an interrupt there left them running unbound), and stopped when the
 * session is not created. Deferreds, not sleeps, order the steps.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { PendingServers } from "../../../src/index.js"

const recorder = () => {
  const events: Array<string> = []
  const pending: PendingServers.PendingServers = {
    bind: (sessionId) => Effect.sync(() => events.push(`bind ${sessionId}`)),
    discard: Effect.sync(() => events.push("discard"))
  }
  return { events, pending }
}

describe("PendingServers.startThenBind", () => {
  it.effect("an interrupt while the session is created waits: the session is created and the servers bound", () =>
    Effect.gen(function*() {
      const { events, pending } = recorder()
      const creating = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const create = Deferred.succeed(creating, undefined).pipe(Effect.zipRight(Deferred.await(gate)), Effect.as({ sessionId: "s1" }))
      const fiber = yield* Effect.fork(PendingServers.startThenBind(Effect.succeed(pending), create, () => "wrong shape"))
      yield* Deferred.await(creating)
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* Deferred.succeed(gate, undefined)
      const exit = yield* Fiber.join(interrupting)
      expect(events).toEqual(["bind s1"])
      // The caller still learns it was interrupted (the answer is not sent), after the bind.
      expect(Exit.isInterrupted(exit)).toBe(true)
    }))

  it.effect("an interrupt while the servers start stops the start: nothing created, nothing bound", () =>
    Effect.gen(function*() {
      const { events, pending } = recorder()
      const starting = yield* Deferred.make<void>()
      const start = Deferred.succeed(starting, undefined).pipe(Effect.zipRight(Effect.never), Effect.as(pending))
      const create = Effect.sync(() => events.push("created")).pipe(Effect.as({ sessionId: "s1" }))
      const fiber = yield* Effect.fork(PendingServers.startThenBind(start, create, () => "wrong shape"))
      yield* Deferred.await(starting)
      yield* Fiber.interrupt(fiber)
      expect(events).toEqual([])
    }))

  it.effect("a session not created stops the servers", () =>
    Effect.gen(function*() {
      const { events, pending } = recorder()
      const exit = yield* Effect.exit(PendingServers.startThenBind(Effect.succeed(pending), Effect.fail("store failed"), () => "wrong shape"))
      expect(exit).toEqual(Exit.fail("store failed"))
      expect(events).toEqual(["discard"])
    }))

  it.effect("servers of another shape (an older embedder's void) fail before the session is created", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const create = Effect.sync(() => events.push("created")).pipe(Effect.as({ sessionId: "s1" }))
      const older = Effect.void as unknown as Effect.Effect<PendingServers.PendingServers>
      const exit = yield* Effect.exit(PendingServers.startThenBind(older, create, () => PendingServers.expectedShape))
      expect(exit).toEqual(Exit.fail(PendingServers.expectedShape))
      expect(events).toEqual([])
    }))
})
