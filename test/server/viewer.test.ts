/**
 * The viewer's fold (src/server/viewer/viewer.js, hand-written so the page needs no build) against
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
import { liveUntil, start, storedEvents, workspace } from "./harness.js"

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
      const { cwd, dataDir } = workspace()
      const write = (path: string) => ({ tool: "write_file", args: { path, content: path } })
      const server = yield* start({
        cwd,
        dataDir,
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
})
