/**
 * The folds over rewinds: the transcript at a rewind is the conversation as it was at its target,
 * rebuilt from the entries held and those earlier rewinds took out — rewinds of rewinds included —
 * and the engine's live transcript equals the replay at every prefix.
 */
import { describe, expect, it } from "@effect/vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { LiveTranscript } from "../../src/engine/LiveTranscript.js"
import * as Rewind from "../../src/engine/Rewind.js"
import * as Either from "effect/Either"
import { referenceRewindPlan } from "../engine/forkReference.js"

/** A log of turns (each a user message and an answer), with rewinds where `rewindTo` says. */
const logOf = (steps: ReadonlyArray<{ readonly turn: string } | { readonly rewindTo: number }>): Array<AgentEvent> => {
  const events: Array<AgentEvent> = []
  const base = (type: string) => ({ id: `evt_${events.length + 1}`, sessionId: "sess_1", sequence: events.length + 1, timestamp: "1970-01-01T00:00:00.000Z", type })
  events.push({ ...base("session.created"), payload: { cwd: "/tmp", client: "test" } } as AgentEvent)
  let n = 0
  for (const step of steps) {
    if ("rewindTo" in step) {
      events.push({ ...base("session.rewound"), payload: { toSequence: step.rewindTo, changes: [] } } as AgentEvent)
      continue
    }
    const turnId = `turn_${++n}`
    events.push({ ...base("turn.started"), turnId, payload: { promptPreview: step.turn } } as AgentEvent)
    events.push({ ...base("user.message"), turnId, payload: { content: step.turn } } as AgentEvent)
    events.push({ ...base("model.delta"), turnId, payload: { text: `re ${step.turn}` } } as AgentEvent)
    events.push({ ...base("turn.completed"), turnId, payload: { stopReason: "final" } } as AgentEvent)
  }
  return events
}

const contents = (events: ReadonlyArray<AgentEvent>) => Transcript.messages(Transcript.replay(events)).map((m) => m.content)

describe("the transcript over rewinds", () => {
  // Turns end at 5 (a), 9 (b), 13 (c); the rewind to 5 is #14; d ends at 18; the rewind to 13 (before the first rewind) is #19.
  const events = logOf([{ turn: "a" }, { turn: "b" }, { turn: "c" }, { rewindTo: 5 }, { turn: "d" }, { rewindTo: 13 }, { turn: "e" }, { rewindTo: 9 }])

  it("a rewind goes back to its target; a rewind to before an earlier rewind brings that branch back; the branch is told by onBranch", () => {
    expect(contents(events.slice(0, 14))).toEqual(["a", "re a"])
    expect(contents(events.slice(0, 18))).toEqual(["a", "re a", "d", "re d"])
    expect(contents(events.slice(0, 19))).toEqual(["a", "re a", "b", "re b", "c", "re c"])
    expect(contents(events.slice(0, 23))).toEqual(["a", "re a", "b", "re b", "c", "re c", "e", "re e"])
    expect(contents(events)).toEqual(["a", "re a", "b", "re b"])
    const rewinds = [[14, 5], [19, 13], [24, 9]] as const
    expect(Transcript.onBranch(7, 24, rewinds)).toBe(true)
    expect(Transcript.onBranch(11, 24, rewinds)).toBe(false)
    expect(Transcript.onBranch(16, 24, rewinds)).toBe(false)
    expect(Transcript.onBranch(16, 18, rewinds)).toBe(true)
    expect(Transcript.onBranch(11, 19, rewinds)).toBe(true)
  })

  it("the live transcript equals the replay at every prefix", () => {
    for (let i = 1; i <= events.length; i++) {
      expect(LiveTranscript.of(events.slice(0, i)).snapshot(), `prefix ${i}`).toEqual(Transcript.replay(events.slice(0, i)))
    }
  })
})

describe("a rewind's plan", () => {
  it("each file's first change after the point is its target, its last the hash expected; an incomplete snapshot is named", () => {
    const events = logOf([{ turn: "a" }, { turn: "b" }])
    // Two changes of one file and a created one inside turn b (events 6..9), recorded with a snapshot past its cap.
    const changed = (sequence: number, changes: ReadonlyArray<unknown>, incomplete?: string) =>
      ({ id: `evt_x${sequence}`, sessionId: "sess_1", turnId: "turn_2", sequence, timestamp: "", type: "workspace.changed", payload: { toolCallId: "c", changes, ...(incomplete === undefined ? {} : { incomplete }) } }) as unknown as AgentEvent
    const turn = (type: string, payload: unknown) => ({ id: "e", sessionId: "sess_1", turnId: "turn_2", sequence: 0, timestamp: "", type, payload }) as unknown as AgentEvent
    const log = [
      ...events.slice(0, 7),
      turn("model.tool_call_requested", { toolCallId: "c", tool: "shell", args: {} }),
      turn("permission.requested", { toolCallId: "c", tool: "shell", risk: "write" }),
      turn("permission.resolved", { toolCallId: "c", decision: "allow", actor: "policy" }),
      turn("tool.started", { toolCallId: "c", tool: "shell", args: {} }),
      changed(0, [{ path: "f.txt", before: { blob: "b0", mode: 420 }, after: "h1" }, { path: "new.txt", after: "n1" }]),
      changed(0, [{ path: "f.txt", before: { blob: "b1", mode: 420 }, after: "h2" }], "more than 2 files in the working directory"),
      turn("tool.completed", { toolCallId: "c", result: "" }),
      turn("turn.completed", { stopReason: "final" })
    ].map((e, i) => ({ ...e, sequence: i + 1 })) as Array<AgentEvent>
    const planned = Either.getOrThrow(Rewind.plan(log, 5))
    expect(planned.files).toEqual([
      { path: "f.txt", target: { blob: "b0", mode: 420 }, expected: "h2" },
      { path: "new.txt", expected: "n1" }
    ])
    expect(planned.incomplete).toEqual(["more than 2 files in the working directory"])
    expect(Either.isLeft(Rewind.plan(log, 7))).toBe(true)
    // Folded as the log is read, the plan is the one made from the collected log, at every point.
    for (let toSequence = 0; toSequence <= log.length + 1; toSequence++) {
      expect(Rewind.plan(log, toSequence), `rewind to ${toSequence}`).toEqual(referenceRewindPlan(log, toSequence))
    }
  })
})
