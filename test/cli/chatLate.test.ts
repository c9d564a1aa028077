/**
 * `chat`: a Ctrl+C or a typed steer meant for the turn on screen, arriving as that turn ends and
 * the session's queued follow-up starts. The chat names the turn it shows, so the cancel is a
 * no-op and the steer is refused (then queued as a follow-up, with its note), rather than landing
 * on the follow-up's turn. No timing: the chat is driven by a scripted terminal, and its watcher
 * holds the first turn's `turn.completed` until the test lets it through — so the input is handled
 * while the screen still shows the first turn and the engine already runs the follow-up's, whose
 * tool waits on a gate the test opens afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Chat from "../../src/cli/Chat.js"
import type { AgentEvent } from "../../src/index.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, expectWellFormedLog, testTools } from "../helpers.js"

const allowAll = Layer.succeed(PermissionEngine, { decide: () => Effect.succeed({ decision: "allow" as const, policy: "test" }) })

/**
 * Runs a chat on a session whose first turn (started by the line "first") waits in a tool until
 * the test opens `firstGate`, and whose queued follow-up's turn waits in a tool until `secondGate`.
 * `late` is the input given once the follow-up's turn runs in the engine while the chat still
 * shows the first turn. Returns the log, what the chat wrote, and the first turn's id.
 */
const lateInput = (late: Chat.Input) =>
  Effect.gen(function*() {
    const firstGate = yield* Deferred.make<void>()
    const secondGate = yield* Deferred.make<void>()
    const tools = testTools({
      hold: { run: () => Effect.as(Deferred.await(firstGate), { result: "held" }) },
      wait: { run: () => Effect.as(Deferred.await(secondGate), { result: "waited" }) }
    })
    return yield* Effect.gen(function*() {
      const real = yield* SessionEngine
      const { sessionId } = yield* real.createSession({ cwd: "/work", client: "test" })

      // The chat's watcher stops before showing the first turn's end, until `release`.
      const held = yield* Deferred.make<string>()
      const release = yield* Deferred.make<void>()
      const handled = yield* Deferred.make<void>()
      const engine: SessionEngine.Service = {
        ...real,
        watchSession: (input) =>
          real.watchSession(input).pipe(Stream.mapEffect((event): Effect.Effect<AgentEvent.AgentEvent> =>
            event.type === "turn.completed"
              ? Deferred.succeed(held, event.turnId).pipe(
                Effect.zipRight(Deferred.await(release)),
                Effect.as(event)
              )
              : Effect.succeed(event)
          )),
        // Done once the chat has acted on the late input (whatever the engine answered).
        cancelTurn: (input) => real.cancelTurn(input).pipe(Effect.ensuring(Deferred.succeed(handled, undefined))),
        steer: (input) => real.steer(input).pipe(Effect.ensuring(Deferred.succeed(handled, undefined)))
      }

      const inputs = yield* Queue.unbounded<Chat.Input>()
      let written = ""
      const terminal: Chat.Terminal = {
        take: Queue.take(inputs),
        prompt: (text, kind) => {
          if (kind === "question") written += text
        },
        answered: () => {
          written += "\n"
        },
        interactive: false,
        write: (_stream, text) => {
          written += text
        }
      }
      const chat = yield* Chat.chat(engine, { sessionId, cwd: "/work" }, Effect.succeed(terminal)).pipe(Effect.fork)
      /** Waits for the first stored event `pick` takes (an event, not a delay). */
      const first = <A>(pick: (event: AgentEvent.AgentEvent) => A | undefined) =>
        real.watchSession({ sessionId }).pipe(
          Stream.filterMap((e) => Option.fromNullable(pick(e))),
          Stream.runHead,
          Effect.map(Option.getOrThrow)
        )
      const toolStarted = (otherThan?: string) => first((e) => e.type === "tool.started" && e.turnId !== otherThan ? e.turnId : undefined)

      yield* Queue.offer(inputs, { _tag: "Line", text: "first" })
      const firstTurnId = yield* toolStarted()
      yield* Queue.offer(inputs, { _tag: "Line", text: ">> the follow-up" })
      yield* first((e) => e.type === "followup.queued" ? e.payload.queueId : undefined)

      // The first turn ends; the chat still shows it while the follow-up's turn runs its tool.
      yield* Deferred.succeed(firstGate, undefined)
      expect(yield* Deferred.await(held)).toBe(firstTurnId)
      yield* toolStarted(firstTurnId)

      yield* Queue.offer(inputs, late)
      yield* Deferred.await(handled)
      yield* Deferred.succeed(release, undefined)
      yield* Deferred.succeed(secondGate, undefined)
      yield* Queue.offer(inputs, { _tag: "End" })
      yield* Fiber.join(chat)

      const log = yield* collect(real.replaySession({ sessionId }))
      expectWellFormedLog(log)
      return { log, written, firstTurnId }
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [
        { toolCalls: [{ tool: "hold", args: {} }] },
        { chunks: ["first done"] },
        { toolCalls: [{ tool: "wait", args: {} }] },
        { chunks: ["follow-up done"] },
        { chunks: ["third done"] }
      ]
    }).pipe(Layer.provideMerge(tools), Layer.provideMerge(allowAll))))
  })

const endings = (log: ReadonlyArray<AgentEvent.AgentEvent>) =>
  log.flatMap((e) => e.type === "turn.completed" ? [[e.turnId, e.payload.stopReason]] : [])

describe("chat: a late Ctrl+C or steer", () => {
  it.effect("Ctrl+C meant for the turn on screen, which has ended, leaves the follow-up's turn running", () =>
    Effect.gen(function*() {
      const { firstTurnId, log } = yield* lateInput({ _tag: "Interrupt" })
      const ends = endings(log)
      expect(ends).toHaveLength(2)
      expect(ends[0]).toEqual([firstTurnId, "final"])
      expect(ends[1]![1]).toBe("final")
    }))

  it.effect("a line meant for the turn on screen, which has ended, is queued as a follow-up, not steered into the follow-up's turn", () =>
    Effect.gen(function*() {
      const { log, written } = yield* lateInput({ _tag: "Line", text: "meant for the first turn" })
      expect(log.filter((e) => e.type === "turn.steered")).toEqual([])
      expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual([
        "first",
        "the follow-up",
        "meant for the first turn"
      ])
      expect(endings(log).map(([, reason]) => reason)).toEqual(["final", "final", "final"])
      expect(written).toContain("[the turn was ending: queued as follow-up fup_")
      expect(written).not.toContain("[steering the running turn]")
    }))
})
