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
import * as FastCheck from "effect/FastCheck"
import * as SessionView from "../../src/domain/SessionView.js"
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
    // A command's snapshot recorded both (kernel45): whoever changed them while it ran is not known, and the plan says so.
    expect(planned.observed).toEqual(["f.txt", "new.txt"])
    // The same records of a file tool's call are the agent's own writes.
    const byFileTool = log.map((e) => e.type === "model.tool_call_requested" ? { ...e, payload: { ...e.payload, tool: "write_file" } } : e) as Array<AgentEvent>
    expect(Either.getOrThrow(Rewind.plan(byFileTool, 5)).observed).toEqual([])
    expect(Either.isLeft(Rewind.plan(log, 7))).toBe(true)
    // Folded as the log is read, the plan is the one made from the collected log, at every point.
    for (let toSequence = 0; toSequence <= log.length + 1; toSequence++) {
      expect(Rewind.plan(log, toSequence), `rewind to ${toSequence}`).toEqual(referenceRewindPlan(log, toSequence))
    }
  })
})

/**
 * The conversation at every rewind, the slow way: every entry the log began (as last held) that is
 * on the branch at the rewind's target (`Transcript.onBranch`), in sequence order — what
 * `Transcript.rewound` must give, however it gets there.
 */
const referenceReplay = (events: ReadonlyArray<AgentEvent>): ReadonlyArray<Transcript.TranscriptEntry> => {
  let transcript: Transcript.Transcript = Transcript.empty
  let out: Array<Transcript.TranscriptEntry> = []
  let rewinds: Array<readonly [number, number]> = []
  for (const event of events) {
    if (event.type === "session.rewound") {
      const to = event.payload.toSequence
      rewinds.push([event.sequence, to])
      const pool = [...out, ...Transcript.all(transcript)]
      const on = (e: Transcript.TranscriptEntry) => e.role === "summary" || ((e.sequence ?? 0) <= to && Transcript.onBranch(e.sequence ?? 0, to, rewinds))
      const entries = pool.filter(on).sort((a, b) => (a.role === "summary" ? -1 : b.role === "summary" ? 1 : (a.sequence ?? 0) - (b.sequence ?? 0)))
      out = pool.filter((e) => !on(e))
      transcript = { entries, open: undefined }
      continue
    }
    if (event.type === "session.compacted") {
      out = []
      rewinds = []
    }
    transcript = Transcript.reduce({ entries: transcript.entries, open: transcript.open }, event)
  }
  return Transcript.all(transcript)
}

describe("rewinds onto branches of branches", () => {
  it("a rewind to a point on a branch that hangs off a branch an earlier rewind came back from keeps only that branch's entries (main kept the other one's too)", () => {
    // a, b, c end at 5, 9, 13; back to 5 (#14); d, e end at 18, 22; back to 9 (#23, the abandoned b); f ends at 27; back to 18 (the end of d).
    const events = logOf([{ turn: "a" }, { turn: "b" }, { turn: "c" }, { rewindTo: 5 }, { turn: "d" }, { turn: "e" }, { rewindTo: 9 }, { turn: "f" }, { rewindTo: 18 }])
    expect(contents(events.slice(0, 27))).toEqual(["a", "re a", "b", "re b", "f", "re f"])
    // The branch at 18 is 18..15, the rewind #14, then 5..1: a and d, not b (on the branch at 9 only).
    expect(contents(events)).toEqual(["a", "re a", "d", "re d"])
    expect(Transcript.all(Transcript.replay(events))).toEqual(referenceReplay(events))
    expect(LiveTranscript.of(events).snapshot()).toEqual(Transcript.replay(events))
  })

  /** A log of turns and rewinds, each rewind to a point between turns chosen by `pick` among those so far. */
  const randomLog = (steps: ReadonlyArray<number | "turn" | "calls">): Array<AgentEvent> => {
    const events: Array<AgentEvent> = []
    const base = (type: string) => ({ id: `evt_${events.length + 1}`, sessionId: "sess_1", sequence: events.length + 1, timestamp: "1970-01-01T00:00:00.000Z", type })
    events.push({ ...base("session.created"), payload: { cwd: "/tmp", client: "test" } } as AgentEvent)
    const points = [1]
    let n = 0
    for (const step of steps) {
      if (typeof step === "number") {
        if (events.length < 2) continue
        events.push({ ...base("session.rewound"), payload: { toSequence: points[step % points.length]!, changes: [] } } as AgentEvent)
        points.push(events.length)
        continue
      }
      const turnId = `turn_${++n}`
      events.push({ ...base("turn.started"), turnId, payload: { promptPreview: `t${n}` } } as AgentEvent)
      events.push({ ...base("user.message"), turnId, payload: { content: `t${n}` } } as AgentEvent)
      events.push({ ...base("model.delta"), turnId, payload: { text: `re t${n}` } } as AgentEvent)
      if (step === "calls") {
        events.push({ ...base("model.tool_call_requested"), turnId, payload: { toolCallId: `c${n}`, tool: "look", args: {} } } as AgentEvent)
        events.push({ ...base("tool.completed"), turnId, payload: { toolCallId: `c${n}`, result: `r${n}` } } as AgentEvent)
        events.push({ ...base("model.delta"), turnId, payload: { text: `after r${n}` } } as AgentEvent)
      }
      events.push({ ...base("turn.completed"), turnId, payload: { stopReason: "final" } } as AgentEvent)
      points.push(events.length)
    }
    return events
  }

  it("property: over turns and rewinds to any point between turns (rewinds of rewinds, branches of branches), the replay is the reference's and the live transcript the replay's, at every rewind", () =>
    FastCheck.assert(FastCheck.property(
      FastCheck.array(FastCheck.oneof(FastCheck.constant("turn" as const), FastCheck.constant("calls" as const), FastCheck.nat(1000)), { maxLength: 40 }),
      (steps) => {
        const events = randomLog(steps)
        const live = new LiveTranscript()
        for (let i = 0; i < events.length; i++) {
          live.add(events[i]!)
          if (events[i]!.type !== "session.rewound" && i !== events.length - 1) continue
          const prefix = events.slice(0, i + 1)
          const replayed = Transcript.replay(prefix)
          expect(Transcript.all(replayed)).toEqual(referenceReplay(prefix))
          expect(live.snapshot()).toEqual(replayed)
          expect(live.rendered()).toEqual(Transcript.rendered(replayed))
        }
      }
    )))
})

describe("the cost of a rewind", () => {
  /**
   * Entries whose `sequence` counts its reads: every comparison a rewind makes reads it (main's
   * filtered and sorted every entry any rewind had taken out, at each rewind, and walked every
   * rewind for each of them).
   */
  let reads = 0
  const counted = (turnId: string, content: string, sequence: number): Transcript.TranscriptEntry => {
    const entry = { role: "user" as const, turnId, content }
    Object.defineProperty(entry, "sequence", { enumerable: true, get: () => (reads++, sequence) })
    return entry as Transcript.TranscriptEntry
  }

  it("a log of 500 retries (a turn, then a rewind back before it) reads each entry's sequence a bounded number of times: linear, not the square", () => {
    reads = 0
    let transcript: Transcript.Transcript = Transcript.empty
    let sequence = 1
    let lastKept = 1
    const retries = 500
    for (let i = 0; i < retries; i++) {
      // Two turns' entries (each a user message), then a rewind to before the second: one is kept every time.
      transcript = { ...transcript, entries: [...transcript.entries, counted(`turn_${i}`, `kept ${i}`, ++sequence)] }
      lastKept = ++sequence
      transcript = { ...transcript, entries: [...transcript.entries, counted(`turn_${i}b`, `retried ${i}`, ++sequence)] }
      transcript = Transcript.rewound(transcript, { sequence: ++sequence, toSequence: lastKept })
    }
    expect(transcript.entries.map((e) => e.content)).toEqual(Array.from({ length: retries }, (_, i) => `kept ${i}`))
    // A rewind reads what it leaves and a binary search's worth: about 2 × log2(1,000) + a few a rewind.
    // Main read every entry taken out so far at every rewind, and sorted: over 250,000 here.
    expect(reads).toBeLessThan(retries * 40)
  })

  it("the viewer's fold of 500 retries reads each turn's start a bounded number of times (main read every turn's at every rewind)", () => {
    let startReads = 0
    const retries = 500
    const view = SessionView.empty()
    let sequence = 0
    const event = (type: string, turnId: string | undefined, payload: object) =>
      SessionView.step(view, { id: `evt_${++sequence}`, sessionId: "sess_1", sequence, timestamp: "1970-01-01T00:00:00.000Z", type, ...(turnId === undefined ? {} : { turnId }), payload } as unknown as AgentEvent)
    const turn = (turnId: string, content: string) => {
      event("turn.started", turnId, { promptPreview: content })
      // Count the reads of its start from now on.
      const shown = view.turns.at(-1)!
      const startedAt = shown.startedAt
      Object.defineProperty(shown, "startedAt", { enumerable: true, get: () => (startReads++, startedAt) })
      event("user.message", turnId, { content })
      event("turn.completed", turnId, { stopReason: "final" })
      return sequence
    }
    event("session.created", undefined, { cwd: "/tmp", client: "test" })
    for (let i = 0; i < retries; i++) {
      // A turn kept, a turn retried: the rewind goes back to the end of the kept one.
      const kept = turn(`turn_${i}`, `kept ${i}`)
      turn(`turn_${i}b`, `retried ${i}`)
      event("session.rewound", undefined, { toSequence: kept, changes: [] })
    }
    expect(view.turns.filter((t) => t.abandoned !== true).map((t) => t.user)).toEqual(Array.from({ length: retries }, (_, i) => `kept ${i}`))
    expect(view.turns.filter((t) => t.abandoned === true)).toHaveLength(retries)
    // Main: every turn's at every rewind, 250,000 here.
    expect(startReads).toBeLessThan(retries * 40)
  })
})

describe("a snapshot handed out", () => {
  it("stays what it was when later rewinds fold in more (the live transcript's folds share their lists: a snapshot holds its own)", () => {
    // a, b, c end at 5, 9, 13; back to 5 (#14); d ends at 18; back to 9 (#19); e ends at 23; back to 18 (#24).
    const events = logOf([{ turn: "a" }, { turn: "b" }, { turn: "c" }, { rewindTo: 5 }, { turn: "d" }, { rewindTo: 9 }, { turn: "e" }, { rewindTo: 18 }])
    const live = new LiveTranscript()
    const snapshots: Array<readonly [number, Transcript.Transcript]> = []
    for (const [i, event] of events.entries()) {
      live.add(event)
      if (event.type === "session.rewound") snapshots.push([i + 1, live.snapshot()])
    }
    for (const [length, snapshot] of snapshots) expect(snapshot).toEqual(Transcript.replay(events.slice(0, length)))
  })
})
