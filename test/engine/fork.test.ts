import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, expectWellFormedLog, memoryEngine, testTools } from "../helpers.js"

const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))
const run = (sessionId: string, userMessage: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.runTurn({ sessionId, userMessage })))
const messagesOf = (log: ReadonlyArray<AgentEvent>) => Transcript.messages(Transcript.replay(log))
/** A log without what a copy changes (ids and session id), to compare a fork's copy with its source. */
const copied = (log: ReadonlyArray<AgentEvent>) => log.map(({ id: _id, sessionId: _s, ...rest }) => rest)

const model = { responses: Array.from({ length: 8 }, (_, i) => ({ chunks: [`answer ${i + 1}`] })) }

describe("forkSession", () => {
  it.effect("forks at the end of the last closed turn: equal transcripts up to the fork point, then independent; the source is untouched", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const source = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(source.sessionId, "one")
      yield* run(source.sessionId, "two")
      const before = yield* replay(source.sessionId)
      const fork = yield* engine.forkSession({ sessionId: source.sessionId })
      expect(fork.sessionId).not.toBe(source.sessionId)
      expect(fork.cwd).toBe("/work")
      const forked = yield* replay(fork.sessionId)
      expectWellFormedLog(forked)
      expect(forked[0]!.payload).toEqual({ cwd: "/work", client: "test", forkedFrom: { sessionId: source.sessionId, sequence: before.length } })
      expect(copied(forked.slice(1, -1))).toEqual(copied(before.slice(1)))
      const sourceIds = new Set(before.map((e) => e.id))
      expect(forked.filter((e) => sourceIds.has(e.id))).toEqual([])
      expect(forked.at(-1)).toMatchObject({ type: "session.forked", sequence: before.length + 1, payload: { fromSessionId: source.sessionId, atSequence: before.length } })
      expect(yield* replay(source.sessionId)).toEqual(before)
      expect(messagesOf(forked)).toEqual(messagesOf(before))
      // From here on the two go their own ways.
      yield* run(fork.sessionId, "three in the fork")
      yield* run(source.sessionId, "three in the source")
      const forkAfter = yield* replay(fork.sessionId)
      const sourceAfter = yield* replay(source.sessionId)
      expectWellFormedLog(forkAfter)
      expect(messagesOf(forkAfter).slice(0, 4)).toEqual(messagesOf(sourceAfter).slice(0, 4))
      expect(messagesOf(forkAfter)[4]).toEqual({ role: "user", content: "three in the fork" })
      expect(messagesOf(sourceAfter)[4]).toEqual({ role: "user", content: "three in the source" })
      expect(sourceAfter.slice(0, before.length)).toEqual(before)
      expect((yield* engine.sessionState({ sessionId: fork.sessionId })).turnCount).toBe(3)
    }).pipe(Effect.provide(memoryEngine(model))))

  it.effect("forks at an earlier turn's end; a fork of a fork; bad fork points are InvalidInput and store nothing", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const source = yield* engine.createSession({ cwd: "/work", client: "test" })
      const first = yield* run(source.sessionId, "one")
      yield* run(source.sessionId, "two")
      const end1 = first.at(-1)!.sequence
      const fork = yield* engine.forkSession({ sessionId: source.sessionId, atSequence: end1 })
      const forked = yield* replay(fork.sessionId)
      expect(messagesOf(forked)).toEqual([{ role: "user", content: "one" }, { role: "assistant", content: "answer 1", toolCalls: [] }])
      // A fork of the fork.
      yield* run(fork.sessionId, "two in the fork")
      const again = yield* engine.forkSession({ sessionId: fork.sessionId })
      const twice = yield* replay(again.sessionId)
      expectWellFormedLog(twice)
      expect(twice[0]!.payload).toMatchObject({ forkedFrom: { sessionId: fork.sessionId } })
      expect(messagesOf(twice)).toEqual(messagesOf(yield* replay(fork.sessionId)))
      expect(twice.filter((e) => e.type === "session.forked").map((e) => e.payload)).toEqual([
        { fromSessionId: source.sessionId, atSequence: end1 },
        { fromSessionId: fork.sessionId, atSequence: twice.length - 1 }
      ])
      // Inside a turn, past the end, not a number of the log: refused.
      const sessions = (yield* engine.listSessions).length
      for (const atSequence of [3, 999, 0, 1.5]) {
        const error = yield* Effect.flip(engine.forkSession({ sessionId: source.sessionId, atSequence }))
        expect(error._tag).toBe("InvalidInput")
      }
      expect((yield* Effect.flip(engine.forkSession({ sessionId: "sess_missing" })))._tag).toBe("SessionNotFound")
      expect((yield* engine.listSessions).length).toBe(sessions)
    }).pipe(Effect.provide(memoryEngine(model))))

  it.effect("a session rewound past its last turn forks as it is now: the default point is the rewind, and the rewound turn stays out", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const source = yield* engine.createSession({ cwd: "/work", client: "test" })
      const end1 = (yield* run(source.sessionId, "one")).at(-1)!.sequence
      yield* run(source.sessionId, "two, rewound away")
      const rewound = yield* engine.rewindSession({ sessionId: source.sessionId, toSequence: end1 })
      const fork = yield* engine.forkSession({ sessionId: source.sessionId })
      const forked = yield* replay(fork.sessionId)
      expectWellFormedLog(forked)
      expect(forked.at(-1)).toMatchObject({ type: "session.forked", payload: { atSequence: rewound.sequence } })
      expect(messagesOf(forked)).toEqual(messagesOf(yield* replay(source.sessionId)))
      // The fork's next turn continues the conversation the source has: "two" is not in it.
      yield* run(fork.sessionId, "three in the fork")
      expect(messagesOf(yield* replay(fork.sessionId)).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["one", "three in the fork"])
    }).pipe(Effect.provide(memoryEngine(model))))

  it.effect("remembered permissions come along: the fork's state remembers what the source's did", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const source = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId: source.sessionId, userMessage: "look" }).pipe(
        Stream.tap((e) =>
          e.type === "permission.resolved" && e.payload.decision === "ask"
            ? engine.resolvePermission({ sessionId: source.sessionId, toolCallId: e.payload.toolCallId, decision: "allow", remember: true })
            : Effect.void
        )
      ))
      const remembered = (yield* engine.sessionState({ sessionId: source.sessionId })).remembered
      expect(remembered.map((r) => r.scope)).toEqual(["look"])
      const fork = yield* engine.forkSession({ sessionId: source.sessionId })
      expect((yield* engine.sessionState({ sessionId: fork.sessionId })).remembered).toEqual(remembered)
    }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
      responses: [{ toolCalls: [{ tool: "look", args: {} }] }, { chunks: ["seen"] }]
    }).pipe(Layer.provideMerge(testTools({ look: { run: () => Effect.succeed({ result: "a view" }) } }))))))
})

describe("the default fork point: the session as it is now, whatever session-level events came after its last turn", () => {
  /** What comes after two closed turns (turn 1 ends at `end1`), each event a draft. */
  type Tail = (end1: number) => ReadonlyArray<{ readonly type: AgentEvent["type"]; readonly payload: unknown; readonly turnId?: string }>
  /** A tail the default fork keeps whole. */
  const kept: ReadonlyArray<readonly [string, Tail]> = [
    ["a title", () => [{ type: "session.titled", payload: { title: "renamed" } }]],
    ["a rewind", (end1) => [{ type: "session.rewound", payload: { toSequence: end1, changes: [] } }]],
    ["a manual compaction", (end1) => [
      { type: "compaction.started", payload: { compactionId: "cmp_1", reason: "manual", tokensBefore: 40 } },
      { type: "session.compacted", payload: { compactionId: "cmp_1", reason: "manual", summary: "S", firstKeptSequence: end1 + 1, tokensBefore: 40, tokensAfter: 20 } }
    ]],
    ["a manual compaction that failed after its request returned", () => [
      { type: "compaction.started", payload: { compactionId: "cmp_1", reason: "manual", tokensBefore: 40 } },
      { type: "compaction.failed", payload: { compactionId: "cmp_1", errorCode: "empty_summary", usage: { inputTokens: 40, outputTokens: 1 } } }
    ]],
    // Left by a process that stopped before its turn started: the fork's queue is the source's, as
    // it is for a follow-up queued during the last turn.
    ["a follow-up queued and not started", () => [{ type: "followup.queued", payload: { queueId: "queue_1", content: "and then?" } }]],
    // Not kept, the fork would run a follow-up the user dropped.
    ["a follow-up queued, then dropped", () => [
      { type: "followup.queued", payload: { queueId: "queue_1", content: "and then?" } },
      { type: "followup.dropped", payload: { queueIds: ["queue_1"] } }
    ]],
    ["a title, then a rewind", (end1) => [
      { type: "session.titled", payload: { title: "renamed" } },
      { type: "session.rewound", payload: { toSequence: end1, changes: [] } }
    ]]
  ]
  /** A tail ending in something open (a crash's): the default point is the last event before it. */
  const open: ReadonlyArray<readonly [string, Tail]> = [
    ["a title, then a manual compaction left open", () => [
      { type: "session.titled", payload: { title: "renamed" } },
      { type: "compaction.started", payload: { compactionId: "cmp_1", reason: "manual", tokensBefore: 40 } }
    ]],
    ["a title, then a turn left open", () => [
      { type: "session.titled", payload: { title: "renamed" } },
      { type: "turn.started", turnId: "turn_9", payload: {} },
      { type: "user.message", turnId: "turn_9", payload: { content: "three" } }
    ]]
  ]

  /** Two turns made by the engine, the tail appended to a copy of the log stored as `sess_tailed`, and its default fork. */
  const forkWithTail = (tail: Tail) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const end1 = (yield* run(sessionId, "one")).at(-1)!.sequence
      yield* run(sessionId, "two")
      const turns = (yield* replay(sessionId)).map((e) => ({ ...e, sessionId: "sess_tailed" }))
      const drafts = tail(end1)
      const { timestamp } = turns.at(-1)!
      const source = [
        ...turns,
        ...drafts.map(({ payload, turnId, type }, i) =>
          ({ id: `evt_tail_${i}`, sessionId: "sess_tailed", sequence: turns.length + i + 1, timestamp, ...(turnId === undefined ? {} : { turnId }), type, payload }) as AgentEvent
        )
      ]
      yield* Effect.flatMap(EventStore, (store) => store.appendAll(source))
      const fork = yield* engine.forkSession({ sessionId: "sess_tailed" })
      return { source, forked: yield* replay(fork.sessionId), fork: fork.sessionId }
    })

  for (const [name, tail] of kept) {
    it.effect(`after ${name}: the fork copies the whole log, and its state is the source's`, () =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { fork, forked, source } = yield* forkWithTail(tail)
        expectWellFormedLog(source)
        expectWellFormedLog(forked)
        expect(forked.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: "sess_tailed", atSequence: source.length } })
        expect(copied(forked.slice(1, -1))).toEqual(copied(source.slice(1)))
        const [mine, theirs] = [yield* engine.sessionState({ sessionId: fork }), yield* engine.sessionState({ sessionId: "sess_tailed" })]
        expect({ title: mine.title, followUps: mine.followUps, totals: mine.totals }).toEqual({ title: theirs.title, followUps: theirs.followUps, totals: theirs.totals })
        expect(messagesOf(forked)).toEqual(messagesOf(source))
      }).pipe(Effect.provide(memoryEngine(model))))
  }

  for (const [name, tail] of open) {
    it.effect(`after ${name}: the fork ends before what is open`, () =>
      Effect.gen(function*() {
        const { forked, source } = yield* forkWithTail(tail)
        const opened = source.findLast((e) => e.type === "turn.started" || e.type === "compaction.started")!.sequence
        expectWellFormedLog(forked)
        expect(forked.at(-1)).toMatchObject({ type: "session.forked", payload: { atSequence: opened - 1 } })
        expect(forked.filter((e) => e.type === "session.titled")).toHaveLength(1)
      }).pipe(Effect.provide(memoryEngine(model))))
  }

  it.effect("a fork of a fork that has no turn of its own forks at its session.forked; renamed through the engine, at its title", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const source = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(source.sessionId, "one")
      const first = yield* engine.forkSession({ sessionId: source.sessionId })
      const firstLog = yield* replay(first.sessionId)
      const second = yield* replay((yield* engine.forkSession({ sessionId: first.sessionId })).sessionId)
      expect(second.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: first.sessionId, atSequence: firstLog.length } })
      yield* engine.renameSession({ sessionId: first.sessionId, title: "the first fork" })
      const third = yield* engine.forkSession({ sessionId: first.sessionId })
      expect((yield* engine.sessionState({ sessionId: third.sessionId })).title).toBe("the first fork")
      expect((yield* engine.listSessions).find((s) => s.sessionId === third.sessionId)?.title).toBe("the first fork")
    }).pipe(Effect.provide(memoryEngine(model))))
})
