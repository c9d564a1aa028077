/**
 * Turns another process wrote reach an engine as events read back from the store, folded by the
 * same reducer as its own (a hydration: `SessionState.reduce` from `session.created`; a cluster read:
 * `SessionState.replayStream`). Their open calls are kept in the reducer's tables (OpenCalls): no
 * event rebuilds a table from a turn's array (`OpenCalls.of`, O(open calls) each, which would make a
 * long session of such turns O(N²) over its log). Counted, not timed: the calls a rebuild would
 * visit, for N turns and for 4N.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import * as Either from "effect/Either"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { OpenCalls } from "../../src/domain/OpenCalls.js"
import * as SessionState from "../../src/domain/SessionState.js"

/** A log of `turns` turns, each with `calls` tool calls open together, as another process writes it. */
const logOf = (turns: number, calls: number): Array<AgentEvent> => {
  const events: Array<{ type: string; turnId?: string; payload: object }> = [{ type: "session.created", payload: { cwd: "/w", client: "other" } }]
  for (let t = 0; t < turns; t++) {
    const turnId = `t${t}`
    const ids = Array.from({ length: calls }, (_, i) => `call_${t}_${i}`)
    events.push({ type: "turn.started", turnId, payload: { promptPreview: "go" } }, { type: "user.message", turnId, payload: { content: "go" } })
    for (const toolCallId of ids) events.push({ type: "model.tool_call_requested", turnId, payload: { toolCallId, tool: "read_file", args: {} } })
    for (const toolCallId of ids) {
      events.push({ type: "permission.requested", turnId, payload: { toolCallId, tool: "read_file", risk: "read" } })
      events.push({ type: "permission.resolved", turnId, payload: { toolCallId, decision: "allow", actor: "policy" } })
      events.push({ type: "tool.started", turnId, payload: { toolCallId, tool: "read_file", args: {} } })
    }
    for (const toolCallId of ids) events.push({ type: "tool.completed", turnId, payload: { toolCallId, result: "ok" } })
    events.push({ type: "turn.completed", turnId, payload: { stopReason: "final" } })
  }
  return events.map((e, i) => ({ id: `evt_${i + 1}`, sessionId: "sess_1", sequence: i + 1, timestamp: "t", ...e }) as unknown as AgentEvent)
}

/** The open calls `OpenCalls.of` rebuilt tables from while `run` ran. */
const rebuilt = (run: () => void): number => {
  let calls = 0
  const of = OpenCalls.of.bind(OpenCalls)
  vi.spyOn(OpenCalls, "of").mockImplementation((open) => {
    calls += open.length
    return of(open)
  })
  run()
  return calls
}

afterEach(() => vi.restoreAllMocks())

describe("turns read back from the store", () => {
  it("fold without rebuilding a call table: none for 50 turns of 8 open calls, none for 200", () => {
    for (const turns of [50, 200]) {
      const log = logOf(turns, 8)
      expect(rebuilt(() => {
        const state = Either.getOrThrow(SessionState.replay(log))
        expect(state?.turnCount).toBe(turns)
      })).toBe(0)
    }
  })

  it("the spy sees a rebuild: a turn cloned without its table rebuilds it once", () => {
    const log = logOf(1, 8)
    // The log up to the last call started: eight calls open.
    const open = log.findLastIndex((e) => e.type === "tool.started") + 1
    const state = Either.getOrThrow(SessionState.replay(log.slice(0, open)))!
    const cloned = { ...state, openTurn: { ...state.openTurn!, toolCalls: state.openTurn!.toolCalls } }
    expect(rebuilt(() => Either.getOrThrow(SessionState.reduce(cloned, log[open]!)))).toBe(8)
  })
})
