/**
 * The viewer's fold (the domain's SessionView, which the page bundles; src/server/viewer/viewer.ts) against
 * the package's projections, at every prefix of real logs: the golden logs and one the server
 * writes with a retry, an approval, a denial, a remembered answer and a cancel. What the timeline shows as
 * of sequence N is what SessionState and Transcript say of the log's first N events.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { readFileSync } from "node:fs"
import { AgentEvent, SessionState, Transcript } from "../../src/index.js"
import * as Viewer from "../../src/server/viewer/viewer.js"
import * as LongSession from "../longSessionLog.js"
import { liveUntil, startIn, storedEvents } from "./harness.js"

const fromFile = (file: string): Array<AgentEvent.AgentEvent> =>
  readFileSync(file, "utf8").trim().split("\n").filter((line) => !line.startsWith('{"format"')).map((line) =>
    Either.getOrThrow(AgentEvent.decodeJson(line))
  )

/** The view and the projections agree on every prefix. */
const expectSameAtEveryPrefix = (log: ReadonlyArray<AgentEvent.AgentEvent>) => {
  for (let n = 1; n <= log.length; n++) {
    const prefix = log.slice(0, n)
    const view = Viewer.fold(prefix)
    const state = Either.getOrThrow(SessionState.replay(prefix))!
    const where = `as of #${n} (${log[n - 1]!.type})`
    expect(view.lastSequence, where).toBe(state.lastSequence)
    expect(view.turns.length, where).toBe(state.turnCount)
    expect(view.openTurn?.turnId, where).toBe(state.openTurn?.turnId)
    expect(Viewer.openCalls(view).map((c) => [c.toolCallId, c.status]), where).toEqual(
      (state.openTurn?.toolCalls ?? []).map((c) => [c.toolCallId, c.status])
    )
    expect(Viewer.pendingApprovals(view).map((c) => c.toolCallId), where).toEqual(SessionState.pendingApprovals(state).map((c) => c.toolCallId))
    const transcript = Transcript.all(Transcript.replay(prefix))
    for (const turn of view.turns) {
      const entries = transcript.filter((e) => e.turnId === turn.turnId)
      expect(turn.user, where).toBe(entries.find((e) => e.role === "user")?.content ?? turn.user)
      const assistant = entries.filter((e): e is Transcript.AssistantEntry => e.role === "assistant")
      const text = turn.items.filter((i) => i.kind === "text").map((i) => (i as { text: string }).text).join("")
      expect(text, where).toBe(assistant.map((e) => e.content).join(""))
      expect(turn.items.filter((i) => i.kind === "call").map((c) => (c as Viewer.ViewCall).toolCallId), where).toEqual(
        assistant.flatMap((e) => e.toolCalls.map((c) => c.toolCallId))
      )
    }
  }
}

describe("the viewer's fold", () => {
  it("matches SessionState and Transcript at every prefix of the golden logs", () => {
    for (const name of ["minimal", "tools"]) expectSameAtEveryPrefix(fromFile(`fixtures/golden/${name}.jsonl`))
  })

  it.scopedLive("matches them on a log with a retry, an approval, a denial, a remembered answer and a cancel", () =>
    Effect.gen(function*() {
      const write = (path: string) => ({ tool: "write_file", args: { path, content: path } })
      const { server } = yield* startIn({
        responses: [
          { failure: { reason: "overloaded", retryAfterMs: 1 } },
          { chunks: ["Two writes."], toolCalls: [write("a.txt"), write("b.txt")] },
          { chunks: ["One allowed, one denied."] },
          { chunks: ["Again."], toolCalls: [write("c.txt")] },
          { chunks: ["Remembered."] },
          { chunks: ["slow", "slower"], delay: "10 seconds" }
        ]
      })
      const session = yield* server.client.sessions.create({ payload: {} })
      const id = session.sessionId
      const url = `${server.url}/sessions/${id}/live`
      const asks = (after: number, count: number) =>
        Effect.promise(() => {
          let seen = 0
          return liveUntil(url, { token: server.token, after }, (e) => e.type === "permission.resolved" && e.payload.decision === "ask" && ++seen === count)
        })
      const ended = (after: number) => Effect.promise(() => liveUntil(url, { token: server.token, after }, (e) => e.type === "turn.completed"))

      yield* server.client.sessions.startTurn({ path: { id }, payload: { message: "write two" } })
      const first = yield* asks(0, 1)
      const callOf = (e: AgentEvent.AgentEvent) => (e.payload as { toolCallId: string }).toolCallId
      yield* server.client.sessions.approve({ path: { id, toolCallId: callOf(first.at(-1)!) }, payload: { decision: "allow" } })
      const second = yield* asks(first.at(-1)!.sequence, 1)
      yield* server.client.sessions.approve({ path: { id, toolCallId: callOf(second.at(-1)!) }, payload: { decision: "deny" } })
      const one = yield* ended(second.at(-1)!.sequence)
      yield* server.client.sessions.startTurn({ path: { id }, payload: { message: "write again" } })
      const third = yield* asks(one.at(-1)!.sequence, 1)
      yield* server.client.sessions.approve({ path: { id, toolCallId: callOf(third.at(-1)!) }, payload: { decision: "allow", remember: true } })
      const two = yield* ended(third.at(-1)!.sequence)
      yield* server.client.sessions.startTurn({ path: { id }, payload: { message: "slowly" } })
      yield* Effect.promise(() => liveUntil(url, { token: server.token, after: two.at(-1)!.sequence }, (e) => e.type === "context.built"))
      yield* server.client.sessions.cancel({ path: { id } })
      const log = yield* storedEvents(server, id)
      expect(log.map((e) => e.type)).toContain("tool.failed")
      // A retry is shown where it happened, with its cause.
      expect(log.map((e) => e.type)).toContain("model.retry")
      expect(Viewer.fold(log).turns[0]!.items[0]).toEqual({ kind: "note", text: expect.stringMatching(/^retry 1: overloaded, again in \d+ ms$/) })
      expect(log.at(-1)!.payload).toMatchObject({ stopReason: "cancelled" })
      expectSameAtEveryPrefix(log)
    }))

  it("names the instructions files of the last turn's prompt (none before a turn; none when it had none)", () => {
    const log = fromFile("fixtures/golden/tools.jsonl")
    expect(Viewer.fold(log.slice(0, 1)).instructions).toBeUndefined()
    const built = log.findIndex((e) => e.type === "context.built")
    expect(Viewer.fold(log.slice(0, built + 1)).instructions).toEqual([])
    const part = { name: "AGENTS.md", source: "project" as const, path: "AGENTS.md", sha256: "ab".repeat(32), tokens: 42 }
    const withInstructions = log.map((e) => e.type === "context.built" ? { ...e, payload: { ...e.payload, instructions: [part] } } : e)
    expect(Viewer.fold(withInstructions).instructions).toEqual([part])
  })

  it("shows steers, follow-ups, a fork and compactions readably, where they happened; matches the projections on them", () => {
    const log = LongSession.steerAndFollowUps
    expectSameAtEveryPrefix(log)
    const view = Viewer.fold(log)
    const [first, second] = view.turns
    expect(first!.items).toEqual([
      { kind: "note", event: "followup.queued", text: "follow-up queued: then tidy up" },
      { kind: "steer", text: "also mention the weather" },
      { kind: "text", text: "sunny" }
    ])
    expect(second).toMatchObject({ user: "then tidy up", queueId: "fup_1" })
    // Between turns: session-level lines, with where they sit in the log.
    expect(view.notes).toEqual([
      { kind: "note", event: "followup.queued", text: "follow-up queued: never mind", sequence: 11 },
      { kind: "note", event: "followup.dropped", text: "1 queued follow-up dropped", sequence: 12 },
      { kind: "note", event: "session.forked", text: "forked from sess_0 at #3", sequence: 13 }
    ])
    // The queue as of each point: one waiting during turn 1, none once it ran; one again, none once dropped.
    expect(Viewer.fold(log.slice(0, 4)).followUps).toEqual([{ queueId: "fup_1", content: "then tidy up" }])
    expect(Viewer.fold(log.slice(0, 8)).followUps).toEqual([])
    expect(Viewer.fold(log.slice(0, 11)).followUps).toEqual([{ queueId: "fup_2", content: "never mind" }])
    expect(view.followUps).toEqual([])

    const [started, compacted] = LongSession.compactions
    const compacting = Viewer.fold([...log, started!])
    expect(Viewer.phase(compacting)).toBe("compacting")
    expect(compacting.notes.at(-1)).toMatchObject({ event: "compaction.started", text: "compacting the conversation (threshold, 9000 tokens)…" })
    const done = Viewer.fold([...log, started!, compacted!])
    expect(Viewer.phase(done)).toBe("idle")
    expect(done.contextTokens).toBe(1200)
    expect(done.notes.at(-1)).toEqual({
      kind: "note",
      event: "session.compacted",
      text: "conversation compacted (threshold): 9000 → 1200 tokens, events before #9 summarized",
      detail: "We renamed foo.",
      sequence: 15
    })
    const all = Viewer.fold([...log, ...LongSession.compactions])
    expect(Viewer.phase(all)).toBe("idle")
    expect(all.notes.filter((n) => n.event === "compaction.failed").map((n) => n.text)).toEqual([
      "compaction failed: rate_limited; the conversation is unchanged",
      "compaction cancelled; the conversation is unchanged"
    ])
  })
})
