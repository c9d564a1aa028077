/**
 * The live transcript folds events in place, renders requests once per entry, and folds a run of
 * streaming deltas into the state at once: what it gives out must equal the pure replays of the log
 * (`Transcript.replay`, `Transcript.rendered`, `SessionState.replay`) at every point.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { LiveTranscript } from "../../src/engine/LiveTranscript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as ContextBuilder from "../../src/services/ContextBuilder.js"
import { collect, memoryEngine, typesOf } from "../helpers.js"

const callId = FastCheck.constantFrom("c1", "c2", "c3")
const text = FastCheck.string({ maxLength: 5 })
const image = { blob: "ab".repeat(32), mediaType: "image/png", bytes: 67 }
/** Events of any order the transcript's reducer may meet (it checks no order: SessionState does). */
const step: FastCheck.Arbitrary<{ readonly type: string; readonly payload: object } | "render"> = FastCheck.oneof(
  FastCheck.constant("render" as const),
  text.map((content) => ({ type: "user.message", payload: { content } })),
  text.map((content) => ({ type: "user.message", payload: { content, images: [image] } })),
  text.map((content) => ({ type: "turn.steered", payload: { content } })),
  text.map((t) => ({ type: "model.delta", payload: { text: t } })),
  text.map((t) => ({ type: "model.delta", payload: { text: t } })),
  // Thinking by two models: the rendering's share of each (what a request to the other leaves out) must follow rewinds and cuts.
  text.map((t) => ({ type: "model.thinking_delta", payload: { text: t } })),
  FastCheck.constantFrom("m1", "m2").map((model) => ({ type: "model.thinking_block", payload: { provider: "anthropic", model, signature: "S" } })),
  callId.map((toolCallId) => ({ type: "model.tool_call_requested", payload: { toolCallId, tool: "look", args: { at: toolCallId } } })),
  FastCheck.tuple(callId, text).map(([toolCallId, result]) => ({ type: "tool.completed", payload: { toolCallId, result } })),
  FastCheck.tuple(callId, text).map(([toolCallId, result]) => ({ type: "tool.completed", payload: { toolCallId, result, images: [image] } })),
  FastCheck.tuple(callId, text).map(([toolCallId, message]) => ({ type: "tool.failed", payload: { toolCallId, errorCode: "x", message } })),
  callId.map((toolCallId) => ({ type: "tool.started", payload: { toolCallId, tool: "look", args: {} } })),
  FastCheck.constant({ type: "context.built", payload: { tokens: { instruction: 0, transcript: 0, tools: 0, total: 0 } } }),
  FastCheck.constant({ type: "turn.completed", payload: { stopReason: "final" } }),
  // The provider refused the turn's request: its images are left out from then on.
  FastCheck.constant({ type: "turn.completed", payload: { stopReason: "error", errorCode: "invalid_request" } }),
  FastCheck.constant({ type: "compaction.started", payload: { compactionId: "cmp_1", reason: "threshold", tokensBefore: 9 } }),
  FastCheck.constant({ type: "compaction.failed", payload: { compactionId: "cmp_1", errorCode: "cancelled" } }),
  // A rewind to any point (SessionState would refuse one at or after itself): entries leave, and come back.
  FastCheck.integer({ min: 1, max: 45 }).map((toSequence) => ({ type: "session.rewound", payload: { toSequence, changes: [] } })),
  // A cut anywhere in the log so far (or past it): the summary first, the entries from the cut kept.
  FastCheck.tuple(text, FastCheck.integer({ min: 1, max: 45 })).map(([summary, firstKeptSequence]) => ({
    type: "session.compacted",
    payload: { compactionId: "cmp_1", reason: "threshold", summary, firstKeptSequence, tokensBefore: 9, tokensAfter: 3 }
  }))
)

const eventsOf = (steps: ReadonlyArray<{ readonly type: string; readonly payload: object } | "render">) => {
  let sequence = 1
  let turn = 1
  return steps.map((s) => {
    if (s === "render") return s
    if (s.type === "user.message") turn++
    return { id: `evt_${sequence}`, sessionId: "sess_1", turnId: `turn_${turn}`, sequence: ++sequence, timestamp: "t", ...s } as unknown as AgentEvent
  })
}

describe("the live transcript", () => {
  // The property's counterexample once (seed 741969328): a response repeating a call's id, then one
  // result. The index of calls' places named only the last; reduce gives the result to both. The
  // live transcript and replay hold the transcript the same way (Transcript.Held), so both are
  // compared with the fold of reduce, which holds it apart.
  it("a result of an id the response repeats goes where Transcript.reduce puts it", () => {
    const call = { type: "model.tool_call_requested", payload: { toolCallId: "c1", tool: "look", args: { at: "c1" } } } as const
    const events = eventsOf([call, call, { type: "tool.failed", payload: { toolCallId: "c1", errorCode: "x", message: "" } }] as never)
      .filter((event): event is AgentEvent => event !== "render")
    const live = new LiveTranscript()
    for (const event of events) live.add(event)
    const reduced = events.reduce(Transcript.reduce, Transcript.empty)
    expect(reduced.entries[0]).toMatchObject({ toolCalls: [{ result: { content: "" } }, { result: { content: "" } }] })
    expect(Transcript.replay(events)).toEqual(reduced)
    expect(live.snapshot()).toEqual(reduced)
    expect(live.rendered()).toEqual(Transcript.rendered(reduced))
  })

  it("property: after every event its snapshot equals Transcript.replay and its rendering Transcript.rendered", () =>
    FastCheck.assert(FastCheck.property(FastCheck.array(step, { maxLength: 40 }), (steps) => {
      const live = new LiveTranscript()
      const seen: Array<AgentEvent> = []
      for (const s of eventsOf(steps)) {
        if (s === "render") {
          // Rendering between events: what is kept must be rendered again where a later event changes it.
          live.rendered()
          continue
        }
        live.add(s)
        seen.push(s)
        const replayed = Transcript.replay(seen)
        expect(live.snapshot()).toEqual(replayed)
        expect(live.rendered()).toEqual(Transcript.rendered(replayed))
        expect(ContextBuilder.renderingOf(live.snapshot())).toEqual(Transcript.rendered(replayed))
      }
    })))

  it("property: Transcript.replay, which folds in place, equals the fold of Transcript.reduce, which gives a value per event", () =>
    FastCheck.assert(FastCheck.property(FastCheck.array(step, { maxLength: 40 }), (steps) => {
      const events = eventsOf(steps).filter((s): s is AgentEvent => s !== "render")
      let reduced = Transcript.empty
      for (let n = 0; n < events.length; n++) {
        reduced = Transcript.reduce(reduced, events[n]!)
        expect(Transcript.replay(events.slice(0, n + 1))).toEqual(reduced)
      }
    })))

  it("a snapshot taken before a change is rendered as it was, not as the transcript is now", () => {
    const live = new LiveTranscript()
    const [user, delta] = eventsOf([{ type: "user.message", payload: { content: "hi" } }, { type: "model.delta", payload: { text: "hello" } }]) as Array<AgentEvent>
    live.add(user!)
    const before = live.snapshot()
    live.add(delta!)
    expect(ContextBuilder.renderingOf(before)).toEqual(Transcript.rendered(before))
    expect(ContextBuilder.renderingOf(before).messages).toEqual([{ role: "user", content: "hi" }])
    expect(ContextBuilder.buildWith([], { sessionId: "sess_1", cwd: "/", transcript: before, tools: [] }).request.messages).toHaveLength(1)
  })
})

describe("a long response committed as one batch", () => {
  it.effect("5,000 deltas and a tool call in one chunk: the live state and the next request equal their replay from the log", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const chunks = Array.from({ length: 5000 }, (_, i) => `${i} `)
      const first = yield* collect(engine.runTurn({ sessionId, userMessage: "count" }))
      // 5,000 deltas of the first response, one of the second ("done").
      expect(typesOf(first).filter((t) => t === "model.delta")).toHaveLength(5001)
      yield* Stream.runDrain(engine.runTurn({ sessionId, userMessage: "again" }))
      const log = yield* collect(engine.replaySession({ sessionId }))
      expect(yield* engine.sessionState({ sessionId })).toEqual(Either.getOrThrow(SessionState.replay(log)))
      const requests = yield* (yield* FakeModel).requests
      const secondTurn = log.slice(0, log.findLastIndex((e) => e.type === "user.message") + 1)
      expect(requests.at(-1)!.messages).toEqual(Transcript.messages(Transcript.replay(secondTurn)))
      expect(requests.at(-1)!.messages[1]).toMatchObject({ role: "assistant", content: chunks.join("") })
    }).pipe(Effect.provide(memoryEngine({
      responses: [
        // A tool no router knows: the call fails, and the turn goes on to the next response.
        { chunks: Array.from({ length: 5000 }, (_, i) => `${i} `), toolCalls: [{ tool: "missing", args: {} }] },
        { chunks: ["done"] },
        { chunks: ["and ", "again"] }
      ]
    }))))
})
