/**
 * Tool call ids the vendors take (`^[A-Za-z0-9_-]{1,40}$`) that are also names every object has:
 * `__proto__`, `constructor`, `valueOf`. The viewer's fold keys its calls by id; on a plain object a
 * call `__proto__` became the map's prototype (so every other id not yet seen read as one of its
 * fields), and an event for an id not seen changed a builtin shared by the whole page.
 */
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionView from "../../src/domain/SessionView.js"

const log = (requested: ReadonlyArray<string>, failed: ReadonlyArray<string>): Array<AgentEvent> => {
  const events: Array<{ type: string; turnId?: string; payload: object }> = [
    { type: "session.created", payload: { cwd: "/w", client: "test" } },
    { type: "turn.started", turnId: "t1", payload: { promptPreview: "go" } }
  ]
  for (const toolCallId of requested) events.push({ type: "model.tool_call_requested", turnId: "t1", payload: { toolCallId, tool: "read_file", args: {} } })
  for (const toolCallId of failed) events.push({ type: "tool.failed", turnId: "t1", payload: { toolCallId, errorCode: "x", message: `failed ${toolCallId}` } })
  return events.map((e, i) => ({ id: `evt_${i + 1}`, sessionId: "sess_1", sequence: i + 1, timestamp: "t", ...e }) as unknown as AgentEvent)
}

describe("the viewer's calls by id", () => {
  it("a call __proto__ is a call like any other, and call_A is not call_a", () => {
    const ids = ["__proto__", "constructor", "call_A", "call_a"]
    const view = SessionView.fold(log(ids, ids))
    expect(Object.keys(view.calls).sort()).toEqual([...ids].sort())
    for (const id of ids) expect(view.calls[id]).toMatchObject({ toolCallId: id, status: "failed", message: `failed ${id}` })
  })

  it("an event for an id never requested changes nothing, not even a builtin", () => {
    const view = SessionView.fold(log(["call_1"], ["valueOf", "__proto__", "toString"]))
    expect(Object.keys(view.calls)).toEqual(["call_1"])
    expect(Object.prototype.valueOf).not.toHaveProperty("status")
    expect(Object.prototype).not.toHaveProperty("status")
    expect(view.turns[0]!.items).toHaveLength(1)
  })
})
