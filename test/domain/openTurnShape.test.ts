/**
 * The open turn the reducer builds while calls are open has the shape of the literal `{ turnId,
 * status, get toolCalls(), toolCallCount }`: the same keys in the same order, `toolCalls` an own
 * enumerable getter (so JSON, spreads, `Object.keys` and `toEqual` see it as before), and no other
 * enumerable key. Pins what the reducer's cheaper construction of such turns must keep (step21).
 */
import { describe, expect, it } from "vitest"
import * as Either from "effect/Either"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"

const events = ([
  { type: "session.created", payload: { cwd: "/w", client: "test" } },
  { type: "turn.started", turnId: "t1", payload: { promptPreview: "go" } },
  { type: "user.message", turnId: "t1", payload: { content: "go" } },
  { type: "model.tool_call_requested", turnId: "t1", payload: { toolCallId: "call_1", tool: "read_file", args: { path: "a" } } },
  { type: "model.tool_call_requested", turnId: "t1", payload: { toolCallId: "call_2", tool: "read_file", args: { path: "b" } } },
  { type: "permission.requested", turnId: "t1", payload: { toolCallId: "call_1", tool: "read_file", risk: "read" } }
] as Array<{ type: string; turnId?: string; payload: object }>).map((e, i) => ({ id: `evt_${i + 1}`, sessionId: "sess_1", sequence: i + 1, timestamp: "t", ...e }) as unknown as AgentEvent)

const stateAfter = (count: number) => Either.getOrThrow(SessionState.replay(events.slice(0, count)))!

describe("an open turn with calls open", () => {
  it("has the literal's keys, order and attributes, and reads its calls", () => {
    const turn = stateAfter(events.length).openTurn!
    expect(Object.keys(turn)).toEqual(["turnId", "status", "toolCalls", "toolCallCount"])
    const descriptors = Object.getOwnPropertyDescriptors(turn)
    expect(typeof descriptors.toolCalls!.get).toBe("function")
    expect(descriptors.toolCalls).toMatchObject({ enumerable: true, configurable: true, set: undefined })
    expect(descriptors.toolCallCount).toEqual({ value: 2, enumerable: true, configurable: true, writable: true })
    expect(Object.getOwnPropertySymbols(turn).every((key) => !Object.prototype.propertyIsEnumerable.call(turn, key))).toBe(true)
    expect(turn.toolCalls.map((c) => [c.toolCallId, c.status])).toEqual([["call_1", "permission_pending"], ["call_2", "requested"]])
    const json = JSON.parse(JSON.stringify(turn))
    expect(Object.keys(json)).toEqual(["turnId", "status", "toolCalls", "toolCallCount"])
    expect(json.toolCalls.map((c: { toolCallId: string }) => c.toolCallId)).toEqual(["call_1", "call_2"])
    const spread = { ...turn }
    expect(spread).toEqual({ turnId: "t1", status: turn.status, toolCalls: turn.toolCalls, toolCallCount: 2 })
    expect(turn).toEqual(spread)
  })

  it("each state keeps its own calls: an earlier turn reads what it held", () => {
    const earlier = stateAfter(events.length - 2).openTurn!
    const later = stateAfter(events.length).openTurn!
    expect(earlier.toolCalls.map((c) => c.toolCallId)).toEqual(["call_1"])
    expect(later.toolCalls.map((c) => c.toolCallId)).toEqual(["call_1", "call_2"])
    const destructured = (({ toolCalls }) => toolCalls)(earlier)
    expect(destructured.map((c) => c.status)).toEqual(["requested"])
  })
})
