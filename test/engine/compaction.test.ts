import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as LogLevel from "effect/LogLevel"
import * as Logger from "effect/Logger"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import type * as Services from "../../src/engine/Services.js"
import { makeSessionEngine } from "../../src/index.js"
import * as Cassette from "../../src/layers/Cassette.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { FakeModel, type ScriptedResponse } from "../../src/layers/FakeModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { engineLayer, expectWellFormedLog, typesOf } from "../helpers.js"
import { expectFailed, failedCompaction, isSummaryRequest, messagesOf, replay, requests, run, twoTurns } from "./compactionCases.js"

const engineWith = (responses: ReadonlyArray<ScriptedResponse>, options: { maxContextTokens?: number; compaction?: Services.CompactionOptions } = {}) =>
  engineLayer(MemoryEventStore.layer, { responses, ...(options.maxContextTokens === undefined ? {} : { maxContextTokens: options.maxContextTokens }) }, {
    ...(options.compaction === undefined ? {} : { compaction: options.compaction })
  })

const summaryMessage = (summary: string) => ({ role: "user", content: Transcript.summaryMessage(summary) })

/** Waits (yielding, never sleeping: the TestClock holds the model) until the session's state says so. */
const waitFor = (sessionId: string, until: (state: SessionState.SessionState) => boolean) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    while (!until(yield* engine.sessionState({ sessionId }))) yield* Effect.yieldNow()
  })

const quiet = Logger.withMinimumLogLevel(LogLevel.None)

describe("compactSession (manual)", () => {
  it.effect("summarises all but the recent context; the next request sees the summary as a user message; replay rebuilds it", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      yield* run(sessionId, "two")
      const before = yield* replay(sessionId)
      const result = yield* engine.compactSession({ sessionId, keepRecentTokens: 0 })
      // The most recent entry (the answer to "two") is kept verbatim: the cut is where it began.
      const answer2 = before.find((e) => e.type === "model.delta" && e.payload.text === "answer 2")!
      expect(result).toMatchObject({ reason: "manual", summary: "The user said one, then two.", firstKeptSequence: answer2.sequence })
      expect(result.tokensAfter).toBeLessThan(result.tokensBefore)
      const log = yield* replay(sessionId)
      expectWellFormedLog(log)
      expect(log.slice(before.length).map((e) => [e.type, "turnId" in e])).toEqual([["compaction.started", false], ["session.compacted", false]])
      expect(log.at(-1)!.payload).toEqual(result)
      expect(log.at(-2)!.payload).toEqual({ compactionId: result.compactionId, reason: "manual", tokensBefore: result.tokensBefore })
      // The summary request: the fixed instruction, the summarised part as text, no tools.
      const [summaryRequest] = (yield* requests).filter(isSummaryRequest)
      expect(summaryRequest!.tools).toEqual([])
      expect(summaryRequest!.messages[0]!.content).toContain("[User]\none")
      expect(summaryRequest!.messages[0]!.content).toContain("[User]\ntwo")
      expect(summaryRequest!.messages[0]!.content).not.toContain("answer 2")
      expect((yield* engine.sessionState({ sessionId })).compaction).toBeUndefined()

      yield* run(sessionId, "three")
      const last = (yield* requests).at(-1)!
      expect(last.messages).toEqual([
        summaryMessage("The user said one, then two."),
        { role: "assistant", content: "answer 2", toolCalls: [] },
        { role: "user", content: "three" }
      ])
      // Replayed from the log alone (no model call), the transcript is the one the model was sent.
      const after = yield* replay(sessionId)
      expect(messagesOf(after.slice(0, -2))).toEqual(last.messages)
      expect(Either.getOrThrow(SessionState.replay(after))).toEqual(yield* engine.sessionState({ sessionId }))
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["The user said one, ", "then two."] }, { chunks: ["answer 3"] }]))))

  it.effect("asked for with no window of its own, a short session (it all fits the window) is compacted all but its last turn; with an explicit window, the window rules", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      yield* run(sessionId, "two")
      // An explicit window that keeps everything: nothing to compact, nothing stored.
      expect((yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: 1_000_000 })))._tag).toBe("NothingToCompact")
      const before = yield* replay(sessionId)
      const result = yield* engine.compactSession({ sessionId })
      // The last turn — its user message and its answer — is kept verbatim: the cut is where it began.
      const two = before.find((e) => e.type === "user.message" && e.payload.content === "two")!
      expect(result).toMatchObject({ reason: "manual", summary: "The user said one.", firstKeptSequence: two.sequence })
      const [summaryRequest] = (yield* requests).filter(isSummaryRequest)
      expect(summaryRequest!.messages[0]!.content).toContain("[User]\none")
      expect(summaryRequest!.messages[0]!.content).not.toContain("two")
      // Only the last turn and a summary are left: nothing more to take away.
      expect((yield* Effect.flip(engine.compactSession({ sessionId })))._tag).toBe("NothingToCompact")
      yield* run(sessionId, "three")
      expect((yield* requests).at(-1)!.messages).toEqual([
        summaryMessage("The user said one."),
        { role: "user", content: "two" },
        { role: "assistant", content: "answer 2", toolCalls: [] },
        { role: "user", content: "three" }
      ])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["The user said one."] }, { chunks: ["answer 3"] }]))))

  it.effect("an empty session, or one whose context all fits the verbatim budget, has nothing to compact: a typed error, nothing stored", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      expect((yield* Effect.flip(engine.compactSession({ sessionId })))._tag).toBe("NothingToCompact")
      yield* run(sessionId, "one")
      expect((yield* Effect.flip(engine.compactSession({ sessionId })))._tag).toBe("NothingToCompact")
      expect(typesOf(yield* replay(sessionId))).toEqual(["session.created", "turn.started", "user.message", "model.delta", "turn.completed"])
      expect((yield* Effect.flip(engine.compactSession({ sessionId: "sess_missing" })))._tag).toBe("SessionNotFound")
      expect((yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: -1 })))._tag).toBe("InvalidInput")
      expect((yield* FakeModel.pipe(Effect.flatMap((m) => m.requestCount)))).toBe(1)
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }]))))

  it.effect("a provider failure: compaction.failed with its reason, CompactionFailed, and the context unchanged", () =>
    failedCompaction("authentication").pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { failure: { reason: "authentication" } }, { chunks: ["answer 3"] }])), quiet))

  it.effect("a summary past maxResponse: compaction.failed response_too_large, the rest of it never read, the context unchanged", () =>
    failedCompaction("response_too_large").pipe(
      Effect.provide(engineLayer(
        MemoryEventStore.layer,
        { responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: Array.from({ length: 50 }, () => "summary ") }, { chunks: ["answer 3"] }] },
        { maxResponse: { deltas: 20 } }
      )),
      quiet
    ))

  it.effect("a retryable failure of the summary request is retried (through the Clock) before it succeeds", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      yield* run(sessionId, "two")
      const compaction = yield* Effect.fork(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
      yield* waitFor(sessionId, (s) => s.compaction !== undefined)
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(compaction)
      expect(result.summary).toBe("S")
      expect((yield* requests).filter(isSummaryRequest)).toHaveLength(2)
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { failure: { reason: "overloaded" } }, { chunks: ["S"] }])), quiet))

  it.effect("interrupted while the model writes the summary: compaction.failed {cancelled}, the context unchanged", () =>
    Effect.gen(function*() {
      const { before, engine, sessionId } = yield* twoTurns
      const compaction = yield* Effect.fork(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
      yield* waitFor(sessionId, (s) => s.compaction !== undefined)
      // A turn asked for meanwhile would wait for the compaction: the session is in its compaction phase.
      expect((yield* engine.sessionState({ sessionId })).compaction).toMatchObject({ reason: "manual" })
      yield* Fiber.interrupt(compaction)
      expectFailed(before, yield* replay(sessionId), expect.objectContaining({ errorCode: "cancelled" }))
      expect((yield* engine.sessionState({ sessionId })).compaction).toBeUndefined()
      // The session goes on as before.
      const next = yield* run(sessionId, "three")
      expect(next.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["never"], delay: "1 hour" }, { chunks: ["answer 3"] }]))))

  it.effect("while a turn runs: TurnInProgress, nothing stored", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      const turn = yield* Effect.fork(run(sessionId, "two"))
      yield* waitFor(sessionId, (s) => s.openTurn !== undefined)
      expect((yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: 0 })))._tag).toBe("TurnInProgress")
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(turn)
      expect((yield* replay(sessionId)).filter((e) => e.type.startsWith("compaction"))).toEqual([])
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"], delay: "1 second" }]))))
})

/** Four turns of ~260 tokens each: the fifth request passes a window of 1000. */
const long = (n: number) => `${n}:` + "x".repeat(1000)
const longTurns = [1, 2, 3, 4].map((n) => ({ chunks: [long(n)] }))

describe("overflow", () => {
  it.effect("a request over the window compacts once and is sent again: final", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2, 3, 4]) expect((yield* run(sessionId, `turn ${n}`)).at(-1)!.payload).toEqual({ stopReason: "final" })
      const fifth = yield* run(sessionId, "turn 5")
      expect(typesOf(fifth)).toEqual(["turn.started", "user.message", "compaction.started", "session.compacted", "model.delta", "turn.completed"])
      const turnId = (fifth[0] as { turnId: string }).turnId
      expect(fifth[2]).toMatchObject({ turnId, payload: { reason: "overflow" } })
      expect((fifth[2]!.payload as { tokensBefore: number }).tokensBefore).toBeGreaterThan(1000)
      expect(fifth[3]).toMatchObject({ turnId, payload: { reason: "overflow", summary: "Four long answers." } })
      expect(fifth.at(-1)!.payload).toEqual({ stopReason: "final" })
      const all = yield* requests
      // The summary request was over the window too: its oldest entries were left out until it fitted.
      const summaryRequest = all.find(isSummaryRequest)!
      expect(summaryRequest.messages[0]!.content).not.toContain("[User]\nturn 1")
      expect(summaryRequest.messages[0]!.content).toContain("[User]\nturn 4")
      expect(all.at(-1)!.messages).toEqual([summaryMessage("Four long answers."), { role: "user", content: "turn 5" }])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(engineWith([...longTurns, { chunks: ["Four long answers."] }, { chunks: ["done"] }], { maxContextTokens: 1000 }))))

  it.effect("still over the window after the compaction: the turn ends context_overflow, no request sent", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      const huge = yield* run(sessionId, "y".repeat(5000))
      expect(typesOf(huge)).toEqual(["turn.started", "user.message", "compaction.started", "session.compacted", "turn.completed"])
      expect(huge.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "context_overflow" })
      // The first turn's request and the summary request; the overflowing one never left.
      expect((yield* requests).map(isSummaryRequest)).toEqual([false, true])
    }).pipe(Effect.provide(engineWith([{ chunks: ["ok"] }, { chunks: ["The user said one."] }], { maxContextTokens: 1000 }))))

  it.effect("nothing to compact (the overflowing message is all there is): context_overflow as before, no compaction event", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const huge = yield* run(sessionId, "y".repeat(5000))
      expect(typesOf(huge)).toEqual(["turn.started", "user.message", "turn.completed"])
      expect(huge.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "context_overflow" })
    }).pipe(Effect.provide(engineWith([], { maxContextTokens: 1000 }))))

  it.effect("with onOverflow off, an overflow ends the turn at once", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2, 3, 4]) yield* run(sessionId, `turn ${n}`)
      const fifth = yield* run(sessionId, "turn 5")
      expect(typesOf(fifth)).toEqual(["turn.started", "user.message", "turn.completed"])
      expect(fifth.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "context_overflow" })
    }).pipe(Effect.provide(engineWith(longTurns, { maxContextTokens: 1000, compaction: { onOverflow: false } }))))

  it.effect("a summary request the provider refuses as too long is sent again without its older half, at most 3 times; then compaction.failed", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2, 3, 4]) yield* run(sessionId, `turn ${n}`)
      const result = yield* engine.compactSession({ sessionId, keepRecentTokens: 0 })
      expect(result.summary).toBe("Shorter.")
      const [first, second] = (yield* requests).filter(isSummaryRequest)
      expect(first!.messages[0]!.content).toContain("[User]\nturn 1")
      expect(second!.messages[0]!.content).not.toContain("[User]\nturn 1")
      expect(second!.messages[0]!.content.length).toBeLessThan(first!.messages[0]!.content.length)
      // Refused every time: 1 + 3 attempts (17 entries before the cut, then the newest 8, 4 and 2), then it fails, and the context stays as it was.
      for (let n = 5; n < 13; n++) yield* run(sessionId, `turn ${n}`)
      const before = yield* replay(sessionId)
      const error = yield* Effect.flip(engine.compactSession({ sessionId, keepRecentTokens: 0 }))
      expect(error).toMatchObject({ _tag: "CompactionFailed", errorCode: "context_overflow" })
      expect((yield* requests).filter(isSummaryRequest)).toHaveLength(2 + 4)
      const log = yield* replay(sessionId)
      expect(log.at(-1)).toMatchObject({ type: "compaction.failed", payload: { errorCode: "context_overflow" } })
      expect(messagesOf(log)).toEqual(messagesOf(before))
    }).pipe(Effect.provide(engineWith([
      ...longTurns,
      { failure: { reason: "context_overflow" } },
      { chunks: ["Shorter."] },
      ...Array.from({ length: 8 }, () => ({ chunks: ["ok"] })),
      ...Array.from({ length: 4 }, () => ({ failure: { reason: "context_overflow" as const } }))
    ], { maxContextTokens: 100_000 })), quiet))
})

describe("threshold", () => {
  const options = { maxContextTokens: 1000, compaction: { threshold: 0.45, keepRecentTokens: 278 } }

  it.effect("a request past the share of the window compacts first; context.built counts the compacted request", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2]) expect(typesOf(yield* run(sessionId, `turn ${n}`))).not.toContain("compaction.started")
      const third = yield* run(sessionId, "turn 3")
      expect(typesOf(third)).toEqual(["turn.started", "user.message", "compaction.started", "session.compacted", "model.delta", "turn.completed"])
      const compacted = third[3] as Extract<AgentEvent, { type: "session.compacted" }>
      expect(compacted.payload).toMatchObject({ reason: "threshold", summary: "Two turns." })
      expect(compacted.payload.tokensBefore).toBeGreaterThan(450)
      // 278 verbatim tokens: the new message (10) and the second answer (263) are kept; the message before them would pass the budget.
      const log = yield* replay(sessionId)
      const answer2 = log.find((e) => e.type === "model.delta" && e.payload.text === long(2))!
      expect(compacted.payload.firstKeptSequence).toBe(answer2.sequence)
      expect((yield* requests).at(-1)!.messages.map((m) => m.content)).toEqual([Transcript.summaryMessage("Two turns."), long(2), "turn 3"])
    }).pipe(Effect.provide(engineWith([...longTurns.slice(0, 2), { chunks: ["Two turns."] }, { chunks: ["three"] }], options))))

  it.effect("a provider failure: compaction.failed, and the turn goes on uncompacted while it fits", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2]) yield* run(sessionId, `turn ${n}`)
      const third = yield* run(sessionId, "turn 3")
      expect(third.map((e) => [e.type, e.type === "compaction.failed" ? e.payload.errorCode : undefined])).toEqual([
        ["turn.started", undefined],
        ["user.message", undefined],
        ["compaction.started", undefined],
        ["compaction.failed", "authentication"],
        ["model.delta", undefined],
        ["turn.completed", undefined]
      ])
      expect(third.at(-1)!.payload).toEqual({ stopReason: "final" })
      expect((yield* requests).at(-1)!.messages.map((m) => m.content)).toEqual(["turn 1", long(1), "turn 2", long(2), "turn 3"])
    }).pipe(Effect.provide(engineWith([...longTurns.slice(0, 2), { failure: { reason: "authentication" } }, { chunks: ["three"] }], options)), quiet))

  it.effect("cancelled during the compaction: compaction.failed {cancelled}, then turn.completed {cancelled}", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const n of [1, 2]) yield* run(sessionId, `turn ${n}`)
      const before = yield* replay(sessionId)
      const turn = yield* Effect.fork(run(sessionId, "turn 3"))
      yield* waitFor(sessionId, (s) => s.openTurn?.status.state === "running" && s.openTurn.status.phase === "compaction")
      expect((yield* engine.sessionState({ sessionId })).compaction).toMatchObject({ reason: "threshold" })
      yield* engine.cancelTurn({ sessionId })
      const third = yield* Fiber.join(turn)
      expect(third.map((e) => e.type === "compaction.failed" || e.type === "turn.completed" ? [e.type, e.payload] : e.type)).toEqual([
        "turn.started",
        "user.message",
        "compaction.started",
        ["compaction.failed", expect.objectContaining({ errorCode: "cancelled" })],
        ["turn.completed", { stopReason: "cancelled" }]
      ])
      const log = yield* replay(sessionId)
      expectWellFormedLog(log)
      expect(messagesOf(log)).toEqual([...messagesOf(before), { role: "user", content: "turn 3" }])
    }).pipe(Effect.provide(engineWith([...longTurns.slice(0, 2), { chunks: ["never"], delay: "1 hour" }], options))))
})

describe("fork after a compaction", () => {
  it.effect("the fork carries the compaction: its transcript starts with the summary, and its next request too", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* run(sessionId, "one")
      yield* run(sessionId, "two")
      yield* engine.compactSession({ sessionId, keepRecentTokens: 0 })
      const source = yield* replay(sessionId)
      // By default the fork point is after the manual compaction that followed the last turn.
      const fork = yield* engine.forkSession({ sessionId })
      const forked = yield* replay(fork.sessionId)
      expectWellFormedLog(forked)
      expect(forked.at(-1)!.payload).toEqual({ fromSessionId: sessionId, atSequence: source.length })
      expect(messagesOf(forked)).toEqual(messagesOf(source))
      expect(messagesOf(forked)[0]).toEqual(summaryMessage("Summary."))
      yield* run(fork.sessionId, "three")
      expect((yield* requests).at(-1)!.messages.map((m) => m.content)).toEqual([Transcript.summaryMessage("Summary."), "answer 2", "three"])
      // A fork at the end of the first turn, before the compaction, has none.
      const early = yield* engine.forkSession({ sessionId, atSequence: source.find((e) => e.type === "turn.completed")!.sequence })
      expect((yield* replay(early.sessionId)).filter((e) => e.type === "session.compacted")).toEqual([])
      // Inside the compaction is no fork point.
      const started = source.find((e) => e.type === "compaction.started")!.sequence
      expect((yield* Effect.flip(engine.forkSession({ sessionId, atSequence: started })))._tag).toBe("InvalidInput")
    }).pipe(Effect.provide(engineWith([{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["Summary."] }, { chunks: ["answer 3"] }]))))
})

describe("cassettes and the Promise façade", () => {
  const options = { maxContextTokens: 1000, compaction: { threshold: 0.45, keepRecentTokens: 278 } }
  const turns = ["turn 1", "turn 2", "turn 3"]
  /** The log of a session that ran the three turns against `responses` (in this window it compacts once). */
  const threeTurns = (responses: ReadonlyArray<ScriptedResponse>) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const turn of turns) yield* run(sessionId, turn)
      return yield* replay(sessionId)
    }).pipe(Effect.provide(engineWith(responses, options)))
  const strip = (log: ReadonlyArray<AgentEvent>) => log.map(({ id: _id, ...rest }) => rest)

  it.effect("a session that compacted, exported as a cassette, replays to the same events (the summary is a scripted response)", () =>
    Effect.gen(function*() {
      const recordedLog = yield* threeTurns([...longTurns.slice(0, 2), { chunks: ["Two turns."] }, { chunks: ["three"] }])
      expect(typesOf(recordedLog)).toContain("session.compacted")
      const script = Cassette.fromEvents(recordedLog)
      expect(script.responses[2]).toEqual({ chunks: ["Two turns."] })
      expect(strip(yield* threeTurns(script.responses))).toEqual(strip(recordedLog))
    }))

  it.effect("a compaction's summary usage comes with its cassette: the replayed session.compacted carries the same usage (kernel45: it was dropped)", () =>
    Effect.gen(function*() {
      const summaryUsage = { inputTokens: 321, outputTokens: 12 }
      const recordedLog = yield* threeTurns([...longTurns.slice(0, 2), { chunks: ["Two turns."], usage: summaryUsage }, { chunks: ["three"] }])
      expect(recordedLog.find((e) => e.type === "session.compacted")?.payload).toMatchObject({ usage: summaryUsage })
      const script = Cassette.fromEvents(recordedLog)
      expect(script.responses[2]).toEqual({ chunks: ["Two turns."], usage: summaryUsage })
      expect(strip(yield* threeTurns(script.responses))).toEqual(strip(recordedLog))
    }))

  it("an empty summary's usage (compaction.failed {empty_summary}) comes with its cassette too", () => {
    const usage = { inputTokens: 40, outputTokens: 0 }
    const script = Cassette.fromEvents([
      { id: "e1", sessionId: "s", sequence: 1, timestamp: "2026-12-07T00:00:00.000Z", type: "compaction.failed", payload: { compactionId: "c", errorCode: "empty_summary", usage } } as AgentEvent
    ])
    expect(script.responses).toEqual([{ usage }])
  })

  it("compactSession on the Promise façade: resolves with the result, rejects with typed errors, and its signal cancels it", async () => {
    const engine = makeSessionEngine({
      store: MemoryEventStore.layer,
      model: FakeModelProvider.layer({ responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["Summary."] }, { chunks: ["answer 3"] }, { chunks: ["slow"], delay: "1 hour" }] }),
      ids: IdGenerator.layerSequential
    })
    try {
      const { sessionId } = await engine.createSession({ cwd: "/work", client: "test" })
      await expect(engine.compactSession({ sessionId })).rejects.toMatchObject({ _tag: "NothingToCompact" })
      for (const userMessage of ["one", "two"]) for await (const _ of engine.runTurn({ sessionId, userMessage })) void _
      const result = await engine.compactSession({ sessionId, keepRecentTokens: 0 })
      expect(result).toMatchObject({ reason: "manual", summary: "Summary." })
      // A second compaction, after one more turn, aborted while the model writes: compaction.failed {cancelled}.
      for await (const _ of engine.runTurn({ sessionId, userMessage: "three" })) void _
      const controller = new AbortController()
      // Aborted once the compaction is stored as started (the model then waits an hour).
      const watching = new AbortController()
      const { lastSequence } = await engine.sessionState({ sessionId })
      const started = (async () => {
        for await (const event of engine.watchSession({ sessionId, fromSequence: lastSequence + 1, signal: watching.signal })) {
          if (event.type === "compaction.started") return
        }
      })()
      const pending = engine.compactSession({ sessionId, keepRecentTokens: 0, signal: controller.signal })
      await started
      watching.abort()
      expect((await engine.sessionState({ sessionId })).compaction).toBeDefined()
      controller.abort()
      await expect(pending).rejects.toBeDefined()
      const log: Array<AgentEvent> = []
      for await (const event of engine.replaySession({ sessionId })) log.push(event)
      expect(log.at(-1)).toMatchObject({ type: "compaction.failed", payload: { errorCode: "cancelled" } })
      expect((await engine.sessionState({ sessionId })).compaction).toBeUndefined()
    } finally {
      await engine.dispose()
    }
  })
})

describe("compaction in the state reducer", () => {
  const event = (sequence: number, type: string, payload: object, turnId?: string) =>
    ({ id: `evt_${sequence}`, sessionId: "s", ...(turnId === undefined ? {} : { turnId }), sequence, timestamp: "t", type, payload }) as AgentEvent
  const created = event(1, "session.created", { cwd: "/w", client: "test" })
  const started = (sequence: number, turnId?: string) => event(sequence, "compaction.started", { compactionId: "c1", reason: "manual", tokensBefore: 1 }, turnId)
  const failed = (sequence: number, compactionId = "c1", turnId?: string) => event(sequence, "compaction.failed", { compactionId, errorCode: "x" }, turnId)
  const impossible = (log: ReadonlyArray<AgentEvent>) => Either.isLeft(SessionState.replay(log))

  it("a log in an impossible order is refused, by name", () => {
    const turn = [event(2, "turn.started", { promptPreview: "p" }, "t1"), event(3, "user.message", { content: "p" }, "t1")]
    // Fine: manual between turns, then a turn; in a turn, then the turn's end.
    expect(impossible([created, started(2), failed(3), ...turn.map((e) => ({ ...e, sequence: e.sequence + 2 }))])).toBe(false)
    expect(impossible([created, ...turn, started(4, "t1"), failed(5, "c1", "t1"), event(6, "turn.completed", { stopReason: "final" }, "t1")])).toBe(false)
    // A turn may not start while a compaction runs, nor end with one open.
    expect(impossible([created, started(2), event(3, "turn.started", { promptPreview: "p" }, "t1")])).toBe(true)
    expect(impossible([created, ...turn, started(4, "t1"), event(5, "turn.completed", { stopReason: "final" }, "t1")])).toBe(true)
    // A session-level compaction while a turn is open; one of another turn; two at once; an end of another compaction.
    expect(impossible([created, ...turn, started(4)])).toBe(true)
    expect(impossible([created, ...turn, started(4, "t2")])).toBe(true)
    expect(impossible([created, started(2), { ...started(3), payload: { compactionId: "c2", reason: "manual", tokensBefore: 1 } } as AgentEvent])).toBe(true)
    expect(impossible([created, started(2), failed(3, "c2")])).toBe(true)
    expect(impossible([created, failed(2)])).toBe(true)
    // Not while tool calls are open.
    expect(impossible([created, ...turn, event(4, "model.tool_call_requested", { toolCallId: "k", tool: "x", args: {} }, "t1"), started(5, "t1")])).toBe(true)
  })
})
