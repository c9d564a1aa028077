/**
 * A fork's log, written as the source is read (in bounded batches), must be the log the fork wrote
 * when it held the whole source at once: that first implementation is kept verbatim as the reference
 * (forkReference.ts; Fork.ts at 1251f1a), and so is the rewind's plan over the collected log. Every fork point of varied logs — the engine's own
 * turns (a long streamed answer crossing several batches, tool calls, a follow-up, a compaction, a
 * title, a rewind), the golden fixtures, a log whose last turn a crash left open — is forked by the
 * engine and compared with the reference line for line (JSON text, so key order counts), and bad
 * points fail with the reference's error.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as AgentEventM from "../../src/domain/AgentEvent.js"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as SessionState from "../../src/domain/SessionState.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as Rewind from "../../src/engine/Rewind.js"
import { referenceForkLog, referenceForkPoint, referenceRewindPlan } from "./forkReference.js"
import { collect, engineLayer, expectWellFormedLog, failingStore, right, testTools } from "../helpers.js"

// ---- Helpers ----

const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
const run = (sessionId: string, userMessage: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.runTurn({ sessionId, userMessage })))
const lines = (log: ReadonlyArray<AgentEvent>) => log.map((event) => JSON.stringify(event))

/** A stored fixture log's events (the header line left out). */
const fixture = (name: string): ReadonlyArray<AgentEvent> =>
  readFileSync(join(import.meta.dirname, "..", "..", "fixtures", "golden", name), "utf8").split("\n").filter((line) => line.includes("\"type\""))
    .map((line) => Either.getOrThrow(AgentEventM.decodeJson(line)))

/** Stores a log as it is (its own session id), as a session written by an earlier process. */
const store = (log: ReadonlyArray<AgentEvent>) => Effect.flatMap(EventStore, (events) => events.appendAll(log))

/** The fork points worth trying on a log of `last` events: all of them when it is short, else every closed point and a few inside turns. */
const pointsOf = (source: ReadonlyArray<AgentEvent>): ReadonlyArray<number | undefined> => {
  const last = source.length
  const every = Array.from({ length: last }, (_, i) => i + 1)
  const closed = new Set<number>()
  let state: SessionState.SessionState | undefined
  for (const event of source) {
    state = Either.getOrThrow(state === undefined ? SessionState.start(event) : SessionState.reduce(state, event))
    if (state.openTurn === undefined && state.compaction === undefined) closed.add(event.sequence)
  }
  const some = last <= 80 ? every : every.filter((s) => closed.has(s) || closed.has(s - 1) || s % 397 === 0 || s === 2 || s === last)
  return [undefined, 0, -1, 1.5, Number.NaN, last + 1, ...some]
}

/** Forks `sessionId` at every point of {@link pointsOf}: the same log as the reference, or the same error. */
const forksAsBefore = (sessionId: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const source = yield* replay(sessionId)
    let forks = 0
    for (const atSequence of pointsOf(source)) {
      const expected = referenceForkPoint(source, atSequence)
      const outcome = yield* Effect.either(engine.forkSession({ sessionId, ...(atSequence === undefined ? {} : { atSequence }) }))
      if (Either.isLeft(expected)) {
        const error = Either.isLeft(outcome) ? { tag: outcome.left._tag, message: outcome.left.message } : "forked"
        expect(error, `fork at ${atSequence}`).toEqual({ tag: "InvalidInput", message: expected.left.message })
        continue
      }
      const fork = right(outcome)
      forks++
      const forked = yield* replay(fork.sessionId)
      // Ids come from the sequential generator, one per event in log order.
      const first = Number(forked[0]!.id.slice("evt_".length))
      const ids = Array.from({ length: expected.right + 1 }, (_, i) => `evt_${first + i}`)
      const reference = referenceForkLog(source, expected.right, fork.sessionId, ids, forked[0]!.timestamp)
      expect(lines(forked), `fork at ${atSequence}`).toEqual(lines(reference))
      // What the engine holds of the fork is the fold of that log.
      const replayed = Either.getOrThrow(SessionState.replay(reference))!
      expect(yield* engine.sessionState({ sessionId: fork.sessionId })).toEqual(replayed)
      expect(fork).toEqual(Session.fromState(replayed))
    }
    return forks
  })

const tools = testTools({ look: { run: () => Effect.succeed({ result: "a view" }) } })

/** A long answer: more events in one turn than a fork writes in one batch. */
const longAnswer = Array.from({ length: 1_500 }, (_, i) => `word${i} `)

const script = {
  responses: [
    { chunks: longAnswer },
    { toolCalls: [{ tool: "look", args: {} }] },
    { chunks: ["seen"] },
    { chunks: ["three"] },
    { chunks: ["summary of it all"] },
    { chunks: ["after the summary"] },
    { chunks: ["after the rewind"] },
    { chunks: ["spare"] }
  ]
}

const engine = engineLayer(MemoryEventStore.layer, script).pipe(Layer.provideMerge(tools))

/** A session of varied events made by the engine itself. */
const variedSession = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
  yield* run(sessionId, "tell me a long story")
  // The tool asks first: allowed, and remembered.
  yield* collect(engine.runTurn({ sessionId, userMessage: "look around" }).pipe(
    Stream.tap((e) =>
      e.type === "permission.resolved" && e.payload.decision === "ask"
        ? engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "allow", remember: true })
        : Effect.void
    )
  ))
  // A follow-up of an idle session starts its own turn: waited for (yielding, never sleeping).
  yield* engine.followUp({ sessionId, message: "and then?" })
  while ((yield* engine.sessionState({ sessionId })).lastTurn?.turnId !== "turn_3") yield* Effect.yieldNow()
  while ((yield* engine.sessionState({ sessionId })).openTurn !== undefined) yield* Effect.yieldNow()
  yield* run(sessionId, "three")
  yield* engine.renameSession({ sessionId, title: "a varied session" })
  yield* engine.compactSession({ sessionId, keepRecentTokens: 0 })
  yield* run(sessionId, "after compacting")
  // Nothing changed files, so a rewind to the end of the turn before needs no checkpoints.
  const end = (yield* replay(sessionId)).length
  yield* run(sessionId, "to be rewound")
  yield* engine.rewindSession({ sessionId, toSequence: end })
  yield* run(sessionId, "after the rewind")
  return sessionId
})

describe("forkSession writes the log it wrote before it streamed", () => {
  it.effect("a session of varied events made by the engine, forked at every closed point and refused elsewhere", () =>
    Effect.gen(function*() {
      const sessionId = yield* variedSession
      const source = yield* replay(sessionId)
      expectWellFormedLog(source)
      expect(source.length).toBeGreaterThan(1_500)
      for (const type of ["tool.completed", "permission.resolved", "followup.queued", "session.titled", "session.compacted", "session.rewound"]) {
        expect(source.some((e) => e.type === type), type).toBe(true)
      }
      expect(yield* forksAsBefore(sessionId)).toBeGreaterThan(5)
      // A rewind's plan, folded as the log is read, is the plan made from the collected log.
      for (const toSequence of pointsOf(source)) {
        if (toSequence === undefined) continue
        expect(Rewind.plan(source, toSequence), `rewind to ${toSequence}`).toEqual(referenceRewindPlan(source, toSequence))
      }
    }).pipe(Effect.provide(engine)))

  it.effect("the golden logs, and a log whose last turn a crash left open", () =>
    Effect.gen(function*() {
      const compaction = fixture("compaction.jsonl")
      const tools = fixture("tools.jsonl")
      // Under ids of their own: the engine's sequential ids name its forks sess_1, sess_2, …
      yield* store(compaction.map((e) => ({ ...e, sessionId: "sess_golden" })))
      expect(yield* forksAsBefore("sess_golden")).toBeGreaterThan(0)
      // The tools golden under another id, its last three events (the end of its last turn) lost.
      const crashed = tools.slice(0, -3).map((e) => ({ ...e, sessionId: "sess_crashed" }))
      yield* store(crashed)
      expect(yield* forksAsBefore("sess_crashed")).toBeGreaterThan(0)
      // The default point is the last closed turn's end, not the log's end.
      expect(Either.getOrThrow(referenceForkPoint(crashed, undefined))).toBeLessThan(crashed.length)
    }).pipe(Effect.provide(engine)))
})

describe("a fork whose store fails midway", () => {
  /** The fork's `n`th event (1-based) fails to append, counting the source's events stored before it. */
  const failingAt = (sourceEvents: number, n: number) =>
    engineLayer(failingStore(MemoryEventStore.layer, [sourceEvents + n]), { responses: [{ chunks: longAnswer }, { chunks: ["two"] }, { chunks: ["in the fork"] }] })

  // The source: session.created, a turn of 1,500 deltas (events 2..1,504), a short turn (1,505..1,508).
  const sourceEvents = 1_508

  it.effect("fails with the store's failure; what it stored is a prefix of the fork in whole batches, without session.forked; the cut turn is closed when the fork is used", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "a long story")
      yield* run(sessionId, "two")
      const source = yield* replay(sessionId)
      expect(source.length).toBe(sourceEvents)
      const error = yield* Effect.flip(engine.forkSession({ sessionId }))
      expect(error._tag).toBe("EventStoreFailure")
      // The fork's id is the next sequential one; what was stored of it stays (the store has no delete).
      const forkId = "sess_2"
      const partial = yield* replay(forkId)
      const first = Number(partial[0]!.id.slice("evt_".length))
      const reference = referenceForkLog(source, sourceEvents, forkId, Array.from({ length: sourceEvents + 1 }, (_, i) => `evt_${first + i}`), partial[0]!.timestamp)
      expect(lines(partial)).toEqual(lines(reference.slice(0, partial.length)))
      // Written in batches: those before the failing one are kept (not the source at once, not event by event).
      expect(partial.length).toBeGreaterThan(1)
      expect(partial.length).toBeLessThan(1_000)
      expect(partial.some((e) => e.type === "session.forked")).toBe(false)
      // Cut inside the long turn: using the fork closes that turn, as for a crash, and the next turn runs.
      expect((yield* engine.sessionState({ sessionId: forkId })).openTurn).toBeDefined()
      const next = yield* run(forkId, "go on")
      expect(next.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      const after = yield* replay(forkId)
      expectWellFormedLog(after)
      expect(after.slice(0, partial.length)).toEqual(partial)
      // The source is untouched.
      expect(yield* replay(sessionId)).toEqual(source)
    }).pipe(Effect.provide(failingAt(sourceEvents, 1_000))))

  it.effect("failing on its last event (session.forked) leaves the whole copy without the marker", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "a long story")
      yield* run(sessionId, "two")
      expect((yield* Effect.flip(engine.forkSession({ sessionId })))._tag).toBe("EventStoreFailure")
      const partial = yield* replay("sess_2")
      expect(partial.length).toBe(sourceEvents)
      expect(partial.at(-1)!.type).toBe("turn.completed")
      expect(Either.isRight(SessionState.replay(partial))).toBe(true)
    }).pipe(Effect.provide(failingAt(sourceEvents, sourceEvents + 1))))

  it.effect("failing on session.created stores nothing of the fork", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "a long story")
      yield* run(sessionId, "two")
      const sessions = (yield* engine.listSessions).length
      expect((yield* Effect.flip(engine.forkSession({ sessionId })))._tag).toBe("EventStoreFailure")
      expect((yield* engine.listSessions).length).toBe(sessions)
    }).pipe(Effect.provide(failingAt(sourceEvents, 1))))
})
