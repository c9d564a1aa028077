/**
 * One response of many tool calls: the session state's reducer and the live transcript fold each
 * tool event in O(1) amortized — before, each scanned and copied the open calls (one response of
 * 3,200 calls: 11 s in the reducer). Counted, not timed: the elements the folds' array scans and
 * copies visit, for N calls and for 4N. And the states stay values: an earlier state reads its own
 * calls after later events, and reducing it again (a fork) leaves the later one as it was.
 */
import { describe, expect, it } from "vitest"
import * as Either from "effect/Either"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionView from "../../src/domain/SessionView.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { LiveTranscript } from "../../src/engine/LiveTranscript.js"

const wideTurn = (calls: number): Array<AgentEvent> => {
  const events: Array<{ type: string; turnId?: string; payload: object }> = [
    { type: "session.created", payload: { cwd: "/w", client: "test" } },
    { type: "turn.started", turnId: "t1", payload: { promptPreview: "go" } },
    { type: "user.message", turnId: "t1", payload: { content: "go" } }
  ]
  const ids = Array.from({ length: calls }, (_, i) => `call_${i}`)
  for (const toolCallId of ids) events.push({ type: "model.tool_call_requested", turnId: "t1", payload: { toolCallId, tool: "read_file", args: { path: toolCallId } } })
  for (const toolCallId of ids) {
    events.push({ type: "permission.requested", turnId: "t1", payload: { toolCallId, tool: "read_file", risk: "read" } })
    events.push({ type: "permission.resolved", turnId: "t1", payload: { toolCallId, decision: "allow", actor: "policy" } })
    events.push({ type: "tool.started", turnId: "t1", payload: { toolCallId, tool: "read_file", args: { path: toolCallId } } })
  }
  // Completion order is not call order.
  for (const toolCallId of [...ids].reverse()) events.push({ type: "tool.completed", turnId: "t1", payload: { toolCallId, result: "ok" } })
  events.push({ type: "model.delta", turnId: "t1", payload: { text: "done" } })
  events.push({ type: "turn.completed", turnId: "t1", payload: { stopReason: "final" } })
  return events.map((e, i) => ({ id: `evt_${i + 1}`, sessionId: "sess_1", sequence: i + 1, timestamp: "t", ...e }) as unknown as AgentEvent)
}

/**
 * The array elements scanned or copied by `Array.prototype`'s methods while `run` runs; with
 * `spreads`, also those a spread or `for…of` over an array reads (its iterator) and `with` copies.
 */
const elementsVisited = (run: () => void, spreads = false): number => {
  const methods: Array<string | symbol> = ["find", "findIndex", "some", "every", "filter", "map", "flatMap", "slice", "includes", "indexOf", "concat"]
  if (spreads) methods.push("with", Symbol.iterator)
  const proto = Array.prototype as unknown as Record<string | symbol, (...args: Array<unknown>) => unknown>
  const saved = methods.map((m) => proto[m]!)
  let visited = 0
  methods.forEach((m, i) => {
    const original = saved[i]!
    proto[m] = function(this: Array<unknown>, ...args: Array<unknown>) {
      visited += this.length
      return original.apply(this, args)
    }
  })
  try {
    run()
  } finally {
    methods.forEach((m, i) => (proto[m] = saved[i]!))
  }
  return visited
}

const fold = (events: ReadonlyArray<AgentEvent>) => {
  const folder = new SessionState.Folder(Either.getOrThrow(SessionState.start(events[0]!)))
  const transcript = LiveTranscript.of([events[0]!])
  for (const event of events.slice(1)) {
    folder.add(event)
    transcript.add(event)
  }
  return { state: folder.state, transcript }
}

describe("a wide response", () => {
  it("folds each tool event in O(1) amortized: 4× the calls is about 4× the work, not 16×", () => {
    const small = wideTurn(200)
    const large = wideTurn(800)
    const work = (events: ReadonlyArray<AgentEvent>) => elementsVisited(() => {
      fold(events)
      Either.getOrThrow(SessionState.replay(events))
    })
    const ratio = work(large) / work(small)
    expect(ratio).toBeLessThan(6)
    // The fold still ends where it should.
    expect(fold(large).state.openTurn).toBeUndefined()
    expect(fold(large).transcript.snapshot().entries.at(-1)).toMatchObject({ role: "assistant", content: "done" })
  })

  it("keeps each state a value: its calls read later equal its calls read at once, and a fork leaves the later states as they were", () => {
    const events = wideTurn(20)
    let state = Either.getOrThrow(SessionState.start(events[0]!))
    const states: Array<SessionState.SessionState> = [state]
    const readAtOnce: Array<ReadonlyArray<SessionState.OpenToolCall>> = [[]]
    for (const event of events.slice(1)) {
      state = Either.getOrThrow(SessionState.reduce(state, event))
      states.push(state)
      readAtOnce.push(state.openTurn?.toolCalls.slice() ?? [])
    }
    // Read each state's calls again now, most after later events.
    expect(states.map((s) => s.openTurn?.toolCalls ?? [])).toEqual(readAtOnce)
    // Reduce a middle state again with another event (call_3 fails rather than asks): a fork.
    const at = events.findIndex((e) => e.type === "permission.requested" && (e.payload as { toolCallId: string }).toolCallId === "call_3")
    const before = states[at - 1]!
    const forked = Either.getOrThrow(SessionState.reduce(before, { ...events[at]!, type: "tool.failed", payload: { toolCallId: "call_3", errorCode: "x", message: "no" } } as AgentEvent))
    expect(forked.openTurn!.toolCalls.map((c) => c.toolCallId)).not.toContain("call_3")
    expect(SessionState.openCall(forked, "call_3")).toBeUndefined()
    expect(SessionState.openCall(states[at]!, "call_3")?.status).toBe("permission_pending")
    // The fork goes on in its own log; the original's states are unchanged.
    const forkedNext = Either.getOrThrow(SessionState.reduce(forked, { ...events[at + 1]!, payload: { toolCallId: "call_4", tool: "read_file", risk: "read" }, type: "permission.requested" } as AgentEvent))
    expect(SessionState.openCall(forkedNext, "call_4")?.status).toBe("permission_pending")
    expect(states.map((s) => s.openTurn?.toolCalls ?? [])).toEqual(readAtOnce)
    // A state whose turn was built elsewhere (a plain object, as a clone is) reduces as well.
    const cloned = JSON.parse(JSON.stringify(states[at]!)) as SessionState.SessionState
    expect(cloned.openTurn!.toolCalls).toEqual(readAtOnce[at])
    const next = Either.getOrThrow(SessionState.reduce(cloned, events[at + 1]!))
    expect(next.openTurn!.toolCalls).toEqual(readAtOnce[at + 1])
  })

  it("leaves a transcript snapshot given out before the results as it was", () => {
    const events = wideTurn(10)
    const firstResult = events.findIndex((e) => e.type === "tool.completed")
    const transcript = LiveTranscript.of(events.slice(0, firstResult))
    const before = transcript.snapshot()
    const copy = JSON.parse(JSON.stringify(before))
    for (const event of events.slice(firstResult)) transcript.add(event)
    expect(JSON.parse(JSON.stringify(before))).toEqual(copy)
    expect(transcript.snapshot().entries.flatMap((e) => e.role === "assistant" ? e.toolCalls.map((c) => c.result?.content) : [])).toEqual([...Array(10).fill("ok")])
  })
})

/**
 * The pure folds a UI or a replay runs over a whole log: `Transcript.replay` copied the open
 * response's calls at each call and scanned and copied them again at each result (and the entries at
 * each response's end); the viewer's fold changes its view in place. Counted as above, spreads and
 * `for…of` included.
 */
describe("a wide response, replayed by the pure folds", () => {
  const work = (fold: (events: ReadonlyArray<AgentEvent>) => unknown, calls: number) => {
    const events = wideTurn(calls)
    return elementsVisited(() => fold(events), true)
  }
  const folds = {
    "Transcript.replay": (events: ReadonlyArray<AgentEvent>) => Transcript.replay(events),
    "SessionView.fold": (events: ReadonlyArray<AgentEvent>) => SessionView.fold(events)
  }
  for (const [name, fold] of Object.entries(folds)) {
    it(`${name}: 4× the calls is about 4× the work, not 16×`, () => {
      expect(work(fold, 800) / work(fold, 200)).toBeLessThan(6)
    })
  }

  it("Transcript.replay: every call has its result, in call order", () => {
    const transcript = Transcript.replay(wideTurn(800))
    const [, calls] = transcript.entries
    expect(calls).toMatchObject({ role: "assistant", content: "" })
    expect((calls as Transcript.AssistantEntry).toolCalls.map((c) => [c.toolCallId, c.result?.content])).toEqual(
      Array.from({ length: 800 }, (_, i) => [`call_${i}`, "ok"])
    )
    expect(transcript.entries.at(-1)).toMatchObject({ role: "assistant", content: "done", toolCalls: [] })
  })
})
