/**
 * `effect-agent serve --subagents` as a real subprocess, killed (SIGKILL) or stopped (SIGTERM) while a
 * subagent waits for approval, and started again over the same data dir: the parent is still paused, its
 * `pendingApprovals` lists the subagent's ask (labelled with it); approving it at the subagent's
 * approval route resumes the tree, and the parent's turn ends with the subagent's answer as its
 * `task` call's result.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { expectWellFormedLog } from "../helpers.js"
import type { Running } from "../cli/subprocess.js"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-serve-subagents-")))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

/** `serve --subagents` on a free port over `dataDir`, with a scripted model. */
const launch = async (cwd: string, dataDir: string, name: string, script: unknown) => {
  const file = join(cwd, "..", `${name}.json`)
  writeFileSync(file, JSON.stringify(script))
  const { server, token, url } = await startServe(["--subagents", "--script", file, "--data-dir", dataDir], { cwd })
  running.push(server)
  const call = async <A>(path: string, init: { readonly method?: string; readonly body?: unknown } = {}): Promise<A> => {
    const response = await fetch(`${url}${path}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    expect(response.status, `${init.method ?? "GET"} ${path}`).toBeLessThan(300)
    return await response.json() as A
  }
  return { server, url, token, call }
}

describe("serve --subagents, restarted", () => {
  it.each(["SIGKILL", "SIGTERM"] as const)("%s while a subagent waits; after the restart the parent is paused on it, lists its ask, and approving it completes the parent", async (signal) => {
    const cwd = join(dir, signal, "ws")
    mkdirSync(cwd, { recursive: true })
    const dataDir = join(dir, signal, "data")
    const first = await launch(cwd, dataDir, "one", {
      responses: [{ toolCalls: [{ tool: "task", args: { description: "write a.txt", prompt: "child: write" }, id: "t1" }] }],
      subagents: { "child: write": [{ toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "child" }, id: "w1" }] }] }
    })
    const session = await first.call<{ sessionId: string }>("/sessions", { method: "POST", body: { cwd } })
    await first.call(`/sessions/${session.sessionId}/turns`, { method: "POST", body: { message: "delegate" } })
    const asked = await liveUntil(`${first.url}/sessions/${session.sessionId}/live`, { token: first.token }, (e) => e.type === "subagent.asked")
    const { childSessionId } = asked.at(-1)!.payload as { childSessionId: string }
    first.server.child.kill(signal)
    await first.server.done

    const second = await launch(cwd, dataDir, "two", {
      responses: [{ chunks: ["The child wrote a.txt."] }],
      subagents: { "child: write": [{ chunks: ["wrote it"] }] }
    })
    const state = await second.call<{ phase: string; pendingApprovals: ReadonlyArray<unknown>; openCalls: ReadonlyArray<{ toolCallId: string; status: string }> }>(
      `/sessions/${session.sessionId}`
    )
    expect(state.phase).toBe("paused")
    expect(state.openCalls.map((c) => [c.toolCallId, c.status])).toEqual([["t1", "running"]])
    expect(state.pendingApprovals).toEqual([{
      toolCallId: "w1",
      tool: "write_file",
      args: { path: "a.txt", content: "child" },
      status: "awaiting_approval",
      risk: "write",
      subagent: { sessionId: childSessionId, description: "write a.txt" }
    }])
    const seen = (await second.call<ReadonlyArray<AgentEvent>>(`/sessions/${session.sessionId}/events`)).at(-1)!.sequence
    await second.call(`/sessions/${childSessionId}/approvals/w1`, { method: "POST", body: { decision: "allow" } })
    const rest = await liveUntil(`${second.url}/sessions/${session.sessionId}/live`, { token: second.token, after: seen }, (e) => e.type === "turn.completed")
    expect(rest.filter((e) => e.type === "tool.completed").map((e) => e.payload)).toEqual([{ toolCallId: "t1", result: "wrote it" }])
    expect(rest.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("child")

    const parent = await second.call<ReadonlyArray<AgentEvent>>(`/sessions/${session.sessionId}/events`)
    const child = await second.call<ReadonlyArray<AgentEvent>>(`/sessions/${childSessionId}/events`)
    expectWellFormedLog(parent)
    expectWellFormedLog(child)
    expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { actor: string }).actor)).toEqual(["policy", "user"])
    expect((await second.call<{ phase: string; pendingApprovals: ReadonlyArray<unknown> }>(`/sessions/${session.sessionId}`)).pendingApprovals).toEqual([])
    second.server.child.kill("SIGINT")
    await second.server.done
  })
})
