/**
 * Subagents over HTTP, a real server and its typed client: a turn's `budget` field, and a
 * subagent's ask shown in its top session's `pendingApprovals` (labelled with the subagent's session
 * and task), answered at the subagent's approval route, recorded in the subagent's log.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { liveUntil, startIn, storedEvents } from "./harness.js"

describe("subagents over HTTP", () => {
  it.scopedLive("a subagent's ask is in the parent's pendingApprovals; approving it on the subagent's session runs the call", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        responses: [
          { toolCalls: [{ tool: "task", args: { description: "write a.txt", prompt: "child: write" } }] },
          { chunks: ["Delegated."] }
        ],
        subagents: {
          "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "child" } }] }, { chunks: ["Written."] }]
        }
      })
      const { client } = server
      const session = yield* client.sessions.create({ payload: { cwd } })
      yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "delegate" } })
      const asked = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "subagent.asked")
      )
      const ask = asked.at(-1)!.payload as { childSessionId: string; childToolCallId: string }
      const state = yield* client.sessions.get({ path: { id: session.sessionId } })
      expect(state.phase).toBe("paused")
      expect(state.pendingApprovals).toEqual([{
        toolCallId: ask.childToolCallId,
        tool: "write_file",
        args: { path: "a.txt", content: "child" },
        status: "awaiting_approval",
        risk: "write",
        subagent: { sessionId: ask.childSessionId, description: "write a.txt" }
      }])
      yield* client.sessions.approve({ path: { id: ask.childSessionId, toolCallId: ask.childToolCallId }, payload: { decision: "allow" } })
      const rest = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token, after: asked.at(-1)!.sequence }, (e) => e.type === "turn.completed")
      )
      expect(rest.at(-1)).toMatchObject({ payload: { stopReason: "final" } })
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("child")
      const child = yield* storedEvents(server, ask.childSessionId)
      expect(child[0]).toMatchObject({ type: "session.created", payload: { parent: { sessionId: session.sessionId } } })
      expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { actor: string }).actor)).toEqual(["policy", "user"])
      // The subagent is a session of the server's listing.
      expect((yield* client.sessions.list()).map((s) => s.sessionId)).toContain(ask.childSessionId)
      expect((yield* client.sessions.get({ path: { id: session.sessionId } })).pendingApprovals).toEqual([])
    }))

  it.scopedLive("a turn's budget field stops the tree (budget_exceeded); a budget that is not positive is a 400", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        responses: [{ toolCalls: [{ tool: "task", args: { description: "spend", prompt: "child: spend" } }] }, { chunks: ["never"] }],
        subagents: { "child: spend": [{ toolCalls: [{ tool: "list_dir", args: { path: "." } }], usage: { inputTokens: 500, outputTokens: 10 } }, { chunks: ["never"] }] }
      })
      const { client } = server
      const session = yield* client.sessions.create({ payload: { cwd } })
      const refused = yield* Effect.flip(client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "x", budget: { maxTokens: 0 } } }))
      expect(refused).toMatchObject({ error: "BadRequest" })
      yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "spend it", budget: { maxTokens: 100 } } })
      const events = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed")
      )
      expect(events.at(-1)).toMatchObject({ payload: { stopReason: "error", errorCode: "budget_exceeded" } })
      expect(events.filter((e) => e.type === "subagent.progress").length).toBeGreaterThan(0)
    }))
  it.scopedLive("a turn's budget.maxSteps stops the tree once it has made that many model requests (budget_exceeded); 0 is a 400", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        responses: [{ toolCalls: [{ tool: "task", args: { description: "loop", prompt: "child: loop" } }] }, { chunks: ["never"] }],
        subagents: { "child: loop": [{ toolCalls: [{ tool: "list_dir", args: { path: "." } }] }, { chunks: ["never"] }] }
      })
      const { client } = server
      const session = yield* client.sessions.create({ payload: { cwd } })
      const refused = yield* Effect.flip(client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "x", budget: { maxSteps: 0 } } }))
      expect(refused).toMatchObject({ error: "BadRequest" })
      yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "loop", budget: { maxSteps: 2 } } })
      const events = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed")
      )
      expect(events.at(-1)).toMatchObject({ payload: { stopReason: "error", errorCode: "budget_exceeded" } })
      expect(events.find((e) => e.type === "subagent.completed")).toMatchObject({ payload: { errorCode: "budget_exceeded" } })
    }))
})
