/**
 * review58b: an editor's `session/new` (or `session/load`) with cwd `/proc`, `/dev` or a folder
 * below them was accepted — every process's memory and environment, every device, every kernel
 * switch was then a file "inside the workspace". Such a cwd (`/sys` too, and a link that leads
 * there) is now refused with invalid params saying why, and so is `run` started there. Through the
 * built CLI, with the ACP SDK's own client.
 */
import * as acp from "@agentclientprotocol/sdk"
import { existsSync, readdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run } from "../cli/subprocess.js"
import { acpScratch } from "./client.js"

const scratch = acpScratch("acp-kernel-cwd")

const refusal = (error: unknown) => {
  expect(error).toBeInstanceOf(acp.RequestError)
  const { code, data, message } = error as acp.RequestError
  return { code, data, message }
}

describe("a session's cwd in the kernel's own folders is refused", () => {
  it("session/new and session/load: /proc, /proc/self, /dev, /sys and a link to /proc are invalid params naming why", async () => {
    const p = scratch.project({ responses: [{ chunks: ["hi"] }] })
    symlinkSync("/proc", join(p.root, "to-proc"))
    const agent = scratch.launch(["--script", p.scriptFile, ...p.storage], { cwd: p.cwd })
    await agent.initialize()
    const kernel = ["/proc", "/proc/self", "/dev", join(p.root, "to-proc"), ...["/dev/shm", "/sys", "/sys/kernel"].filter((dir) => existsSync(dir))]
    for (const cwd of kernel) {
      const error = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }).then(() => undefined, (e: unknown) => e)
      expect(refusal(error), cwd).toEqual({
        code: -32602,
        data: { errorCode: "invalid_input", field: "cwd" },
        message: expect.stringMatching(/^Invalid params: cwd is in the (kernel's view of (processes \(\/proc\)|devices and drivers \(\/sys\))|machine's devices \(\/dev\)), not a project folder/)
      })
    }
    // A project folder is fine; loading it with a kernel folder as its cwd says why, not "cwd mismatch".
    const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd: p.cwd, mcpServers: [] })
    for (const cwd of ["/proc", "/dev"]) {
      const error = await agent.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }).then(() => undefined, (e: unknown) => e)
      expect(refusal(error), cwd).toMatchObject({ code: -32602, data: { errorCode: "invalid_input", field: "cwd" }, message: expect.stringContaining("not a project folder") })
    }
    await agent.agent.request(acp.methods.agent.session.load, { sessionId, cwd: p.cwd, mcpServers: [] })
    agent.child.stdin.end()
    await agent.exited
  })

  it("run started in /proc: one line saying why, exit 1, no session stored", async () => {
    const p = scratch.project({ responses: [{ chunks: ["hi"] }] })
    const { code, stderr } = await run(["run", "hello", "--script", p.scriptFile, ...p.storage], { cwd: "/proc" })
    expect(code).toBe(1)
    expect(stderr).toContain("Invalid cwd: is in the kernel's view of processes (/proc), not a project folder")
    const sessions = join(p.root, "data", "sessions")
    expect(existsSync(sessions) ? readdirSync(sessions).filter((f) => f.endsWith(".jsonl")) : []).toEqual([])
  })
})
