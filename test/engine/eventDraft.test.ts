/**
 * The engine never builds an event its own schema refuses (issue 8, item 8): every payload builder,
 * on generated inputs, gives an event that `AgentEvent` decodes and a store can encode; the retry
 * schedule's waits are whole milliseconds whatever `retry-after` and attempt; and tool output is
 * escaped (item 10): no NUL, no ESC, no other control character but tab, newline and return.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import { ProviderFailure, ProviderFailureReason } from "../../src/domain/Errors.js"
import type { Json } from "../../src/domain/Json.js"
import * as EventDraft from "../../src/engine/EventDraft.js"
import * as Retry from "../../src/engine/Retry.js"

/** A draft as the store sees it: with an envelope. */
const asEvent = (draft: AgentEvent.TurnEventDraft, sequence = 2): unknown => ({
  id: "evt_1",
  sessionId: "sess_1",
  turnId: "turn_1",
  sequence,
  timestamp: "2026-11-30T00:00:00.000Z",
  type: draft.type,
  payload: draft.payload
})

/** The schema accepts it, and encoding it (what the JSONL and SQLite stores do) does not throw. */
const expectStorable = (draft: AgentEvent.TurnEventDraft) => {
  const decoded = AgentEvent.decodeUnknown(asEvent(draft))
  if (Either.isLeft(decoded)) throw new Error(`${draft.type} refused: ${decoded.left.message}`)
  expect(Either.isRight(EventDraft.check(draft))).toBe(true)
  expect(() => AgentEvent.encodeJson(decoded.right)).not.toThrow()
}

const anyNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -Infinity, -0, 1166.2, Number.MAX_VALUE))
const anyText = fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.constantFrom("a\0b\x1b[2J", "\u0000", "\x9b31m", "line\r\n\tend"))
const usage = fc.record(
  { inputTokens: anyNumber, outputTokens: anyNumber, cacheReadTokens: anyNumber, cacheWriteTokens: anyNumber },
  { requiredKeys: ["inputTokens", "outputTokens"] }
)
const risk = fc.constantFrom(...AgentEvent.Risk.literals)
const decision = fc.constantFrom(...AgentEvent.Decision.literals)

/** A generated draft from every builder, on inputs of any shape the engine may hand it. */
const anyDraft: fc.Arbitrary<AgentEvent.TurnEventDraft> = fc.oneof(
  anyText.map((text) => EventDraft.turnStarted(text)),
  fc.tuple(anyText, fc.string()).map(([text, queueId]) => EventDraft.turnStarted(text, queueId)),
  anyText.map(EventDraft.turnSteered),
  anyText.map(EventDraft.userMessage),
  fc.record({ instruction: anyNumber, transcript: anyNumber, tools: anyNumber, total: anyNumber }).map(EventDraft.contextBuilt),
  anyText.map(EventDraft.modelDelta),
  fc.record({
    server: fc.string(),
    tools: fc.array(fc.record({ name: fc.string(), description: anyText, inputSchema: fc.jsonValue() as fc.Arbitrary<Json> })),
    hash: fc.string()
  }).map(EventDraft.mcpToolsListed),
  fc.tuple(anyNumber, anyNumber, fc.string()).map(([attempt, delay, code]) => EventDraft.modelRetry(attempt, delay, code)),
  fc.record({ toolCallId: fc.string(), tool: fc.string(), args: fc.anything({ withBigInt: false }) }).map(EventDraft.toolCallRequested),
  fc.record({ toolCallId: fc.string(), tool: fc.string(), risk }).map(EventDraft.permissionRequested),
  fc.record({
    toolCallId: fc.string(),
    decision,
    policy: fc.string(),
    actor: fc.constantFrom("policy" as const, "user" as const),
    remember: fc.boolean(),
    scope: fc.string()
  }, { requiredKeys: ["toolCallId", "decision", "actor"] }).map(EventDraft.permissionResolved),
  fc.tuple(fc.string(), fc.string(), fc.jsonValue()).map(([id, tool, args]) => EventDraft.toolStarted(id, tool, args)),
  fc.tuple(fc.string(), anyText).map(([id, message]) => EventDraft.toolProgress(id, message)),
  fc.tuple(fc.string(), anyText, fc.option(anyNumber, { nil: undefined })).map(([id, result, code]) => EventDraft.toolCompleted(id, result, code)),
  fc.tuple(fc.string(), fc.string(), anyText).map(([id, code, message]) => EventDraft.toolFailed(id, code, message)),
  fc.record({
    stopReason: fc.constantFrom(...AgentEvent.StopReason.literals),
    errorCode: fc.string(),
    usage,
    cost: fc.oneof(anyNumber, fc.constant(null)),
    costUnknown: fc.string()
  }, { requiredKeys: ["stopReason"] }).map(EventDraft.turnCompleted),
  fc.tuple(usage, fc.record({ provider: fc.string(), model: fc.string() }), fc.array(fc.record({ part: fc.string(), source: fc.string(), hash: fc.string() })))
    .map(([u, by, parts]) => EventDraft.modelUsage(u, by, parts)),
  fc.tuple(anyNumber, anyNumber, fc.array(fc.record({ part: fc.string(), source: fc.string() })))
    .map(([before, now, changed]) => EventDraft.cacheBreak(before, now, changed)),
  fc.tuple(fc.string(), fc.constantFrom(...AgentEvent.CompactionReason.literals), anyNumber).map(([id, reason, tokens]) =>
    EventDraft.compactionStarted(id, reason, tokens)),
  fc.record({
    compactionId: fc.string(),
    reason: fc.constantFrom(...AgentEvent.CompactionReason.literals),
    summary: anyText,
    firstKeptSequence: anyNumber,
    tokensBefore: anyNumber,
    tokensAfter: anyNumber
  }).map(EventDraft.sessionCompacted),
  fc.tuple(fc.string(), fc.string(), fc.record({ usage, cost: fc.oneof(anyNumber, fc.constant(null)), costUnknown: fc.string() }, { requiredKeys: [] }))
    .map(([id, code, spent]) => EventDraft.compactionFailed(id, code, spent)),
  fc.record({
    toolCallId: fc.string(),
    childSessionId: fc.string(),
    description: anyText,
    cwd: fc.string(),
    tools: fc.array(fc.string()),
    mode: fc.constantFrom("inherit" as const, "readOnly" as const),
    maxSteps: anyNumber
  }, { requiredKeys: ["toolCallId", "childSessionId", "description", "cwd", "mode"] }).map(EventDraft.subagentStarted),
  fc.tuple(fc.string(), fc.string(), fc.record({ steps: anyNumber, usage, cost: anyNumber }, { requiredKeys: ["steps"] }), fc.option(fc.string(), { nil: undefined }))
    .map(([id, child, used, answered]) => EventDraft.subagentProgress(id, child, used, answered)),
  fc.record({ toolCallId: fc.string(), childSessionId: fc.string(), description: anyText, childToolCallId: fc.string(), tool: fc.string(), args: fc.anything({ withBigInt: false }), risk })
    .map(EventDraft.subagentAsked),
  fc.tuple(fc.string(), fc.string(), fc.constantFrom(...AgentEvent.StopReason.literals), fc.option(fc.string(), { nil: undefined }), fc.record({ steps: anyNumber, usage, cost: anyNumber }, { requiredKeys: ["steps"] }))
    .map(([id, child, outcome, code, used]) => EventDraft.subagentCompleted(id, child, outcome, code, used)),
  fc.tuple(
    fc.string(),
    fc.array(fc.record({
      path: fc.string(),
      before: fc.option(fc.record({ blob: fc.string(), mode: anyNumber }), { nil: undefined }),
      after: fc.option(fc.string(), { nil: undefined })
    }, { requiredKeys: ["path"] })),
    fc.option(fc.string(), { nil: undefined })
  ).map(([id, changes, incomplete]) => EventDraft.workspaceChanged(id, changes, incomplete)),
  anyText.map(EventDraft.thinkingDelta),
  fc.record({ provider: fc.string(), model: fc.string(), signature: fc.string(), redacted: fc.string() }, { requiredKeys: ["provider", "model"] })
    .map(EventDraft.thinkingBlock)
)

/** Controls that must never reach an event from tool output, nor a terminal. */
const forbidden = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/

/** The types that belong to no turn: not drafts of a turn. */
const sessionLevel: ReadonlyArray<string> = ["session.created", "followup.queued", "followup.dropped", "session.forked", "session.titled", "session.rewound"]

describe("event builders", () => {
  it.prop("every builder gives an event the AgentEvent schema decodes and a store encodes", [anyDraft], ([draft]) => {
    expectStorable(draft)
  }, { fastCheck: { numRuns: 2000 } })

  it("there is a builder for every turn event type", () => {
    const built = new Set(fc.sample(anyDraft, { numRuns: 3000, seed: 8 }).map((d) => d.type))
    expect([...built].sort()).toEqual(AgentEvent.eventTypes.filter((t) => !sessionLevel.includes(t)).sort())
  })

  it.prop("tool output is escaped: no NUL, ESC or other control but tab, newline and return; nothing else changes", [anyText], ([text]) => {
    const { payload } = EventDraft.toolCompleted("call_1", text)
    expect(payload.result).not.toMatch(forbidden)
    expect(EventDraft.toolProgress("call_1", text).payload.message).not.toMatch(forbidden)
    expect(EventDraft.toolFailed("call_1", "tool_error", text).payload.message).not.toMatch(forbidden)
    if (!forbidden.test(text)) expect(payload.result).toBe(text)
  })

  it("a NUL byte and a terminal escape become visible escapes", () => {
    expect(EventDraft.toolCompleted("call_1", "a\0b\x1b[2J\tc\r\n").payload.result).toBe("a\\x00b\\x1b[2J\tc\r\n")
  })
})

describe("the retry schedule", () => {
  const failure = (reason: ProviderFailureReason, retryAfterMs: number | undefined) =>
    ProviderFailure.of(reason, "test", retryAfterMs === undefined ? {} : { retryAfterMs })
  const reason = fc.constantFrom<ProviderFailureReason>("rate_limited", "overloaded", "server", "network")
  const retryAfter = fc.option(fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 120_000 })), { nil: undefined })

  /** Runs a policy over a sequence of failures, as the engine does, collecting the `model.retry` drafts. */
  const retries = (policy: Retry.Policy, failures: ReadonlyArray<ProviderFailure>) =>
    Effect.gen(function*() {
      const attempts = yield* Retry.start(policy)
      const out: Array<{ readonly wait: number; readonly draft: AgentEvent.TurnEventDraft }> = []
      for (const [i, f] of failures.entries()) {
        const wait = yield* attempts.next(f)
        if (Option.isNone(wait)) break
        out.push({ wait: wait.value, draft: EventDraft.modelRetry(i + 1, wait.value, f.reason) })
      }
      return out
    })

  it.effect.prop(
    "every wait is whole milliseconds (retry-after: 1 and jitter included), and every model.retry decodes",
    [fc.array(fc.tuple(reason, retryAfter), { minLength: 1, maxLength: 8 })],
    ([cases]) =>
      Effect.gen(function*() {
        const produced = yield* retries(Retry.defaultPolicy, cases.map(([r, after]) => failure(r, after)))
        for (const { draft, wait } of produced) {
          expect(Number.isSafeInteger(wait) && wait >= 0, `wait ${wait}`).toBe(true)
          expect(draft.payload).toMatchObject({ delayMs: wait })
          expectStorable(draft)
        }
      }),
    { fastCheck: { numRuns: 300 } }
  )

  it.effect("the reproduction: retry-after 1 s against a jittered 1 s backoff gives whole milliseconds, 12 times out of 12", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 12; i++) {
        const [first] = yield* retries(Retry.defaultPolicy, [failure("rate_limited", 1000)])
        expect(Number.isInteger(first!.wait)).toBe(true)
        expect(first!.wait).toBeGreaterThanOrEqual(1000)
      }
    }))

  it.effect("a custom schedule with a fractional delay is rounded too", () =>
    Effect.gen(function*() {
      const produced = yield* retries(Schedule.spaced("1166.2 millis").pipe(Schedule.intersect(Schedule.recurs(2))), [
        failure("network", undefined),
        failure("network", 1000),
        failure("network", undefined)
      ])
      expect(produced.map((p) => p.wait)).toEqual([1166, 1166])
    }))
})

describe("the engine's event sites", () => {
  it("the turn driver and the tool phase build events only through EventDraft", async () => {
    const { readFileSync } = await import("node:fs")
    for (const file of ["TurnDriver.ts", "StepRequest.ts", "ModelResponse.ts", "ToolPhase.ts"]) {
      const source = readFileSync(new URL(`../../src/engine/${file}`, import.meta.url), "utf8")
      // An event literal is a `type: "<event>"` next to its payload; EventDraft's builders are the only place for one.
      expect(source, file).not.toMatch(/type:\s*"(?:turn|user|context|model|permission|tool)\.[a-z_]+"/)
    }
  })
})
