/**
 * Sessions outlive the CLI process: killed mid-turn (SIGKILL) or while waiting for approval, a
 * session is picked up by a new process from the log alone.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent, ModelProvider } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-durable-"))
const leftovers: Array<number> = []
afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true })
})

const events = (stdout: string): Array<AgentEvent.AgentEvent> => stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)
const sessionOf = (stderr: string) => /session (\S+)/.exec(stderr)?.[1]

/** Pids of running processes whose command line contains `text`. */
const pidsRunning = (text: string) =>
  readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(text) && !readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2]!.startsWith("Z")
    } catch {
      return false
    }
  })

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((done) => setImmediate(done))
}

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

for (const store of ["jsonl", "sqlite"] as const) {
  describe(`the CLI across processes (${store} store)`, () => {
    const dataDir = join(dir, `data-${store}`)
    const common = ["--data-dir", dataDir, "--store", store]

    it("SIGKILL mid-turn with a running shell tool: a new process lists, repairs and continues the session", async () => {
      const cwd = join(dir, `kill-${store}`)
      mkdirSync(cwd, { recursive: true })
      const marker = `sleep 600.${store === "jsonl" ? 1 : 2}${process.pid % 1000}`
      const first = start(["run", "start the build", "--mode", "bypass", ...common, "--script", writeScript(`kill-${store}.json`, {
        responses: [{ chunks: ["Running the build."], toolCalls: [{ tool: "shell", args: { command: marker } }] }]
      })], { cwd })
      await until(() => pidsRunning(marker).length > 0)
      leftovers.push(...pidsRunning(marker))
      first.child.kill("SIGKILL")
      await first.done

      const listed = await run(["sessions", ...common])
      const sessionId = listed.stdout.split(/\s+/)[0]!
      expect(sessionId).toMatch(/^sess_/)
      const before = events((await run(["replay", sessionId, "--json", ...common])).stdout)
      expect(before.at(-1)?.type).toBe("tool.started")

      const requests = join(dir, `requests-${store}.jsonl`)
      const next = await run(["run", "what happened?", "--session", sessionId, ...common, "--record-requests", requests, "--script", writeScript(`next-${store}.json`, {
        responses: [{ chunks: ["The build was interrupted."] }]
      })], { cwd })
      expect(next.code).toBe(0)
      expect(next.stdout).toBe("The build was interrupted.\n")

      const log = events((await run(["replay", sessionId, "--json", ...common])).stdout)
      expectWellFormedLog(log)
      const repaired = log.slice(before.length, before.length + 2)
      expect(repaired.map((e) => [e.type, e.payload])).toEqual([
        ["tool.failed", { toolCallId: "call_1", errorCode: "interrupted", message: "The tool call did not finish: interrupted." }],
        ["turn.completed", { stopReason: "error", errorCode: "interrupted" }]
      ])
      const [request] = readFileSync(requests, "utf8").trim().split("\n").map((l) => JSON.parse(l) as ModelProvider.ModelRequest)
      expect(request!.messages).toEqual([
        { role: "user", content: "start the build" },
        { role: "assistant", content: "Running the build.", toolCalls: [{ toolCallId: "call_1", tool: "shell", args: { command: marker } }] },
        { role: "tool", toolCallId: "call_1", tool: "shell", content: "The tool call did not finish: interrupted.", isError: true },
        { role: "user", content: "what happened?" }
      ])
    })

    it("pause on ask, kill the process, approve from a new one: the turn resumes, the tool runs once", async () => {
      const cwd = join(dir, `approve-${store}`)
      mkdirSync(cwd, { recursive: true })
      const first = start(["run", "write the notes", ...common, "--script", writeScript(`ask-${store}.json`, {
        responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] }]
      })], { cwd })
      await first.waitForStderr(/\[y\]es \/ \[n\]o \/ \[a\]lways/)
      const sessionId = sessionOf((await first.child.kill("SIGKILL"), await first.done).stderr)!

      const pending = await run(["pending", ...common])
      expect(pending.stdout).toBe(`${sessionId}  call_1  write_file notes.txt  (write)\n`)
      const busy = await run(["run", "something else", "--session", sessionId, ...common], { cwd })
      expect(busy.code).toBe(1)
      expect(busy.stderr).toContain("already has a running turn")

      const approved = await run(["approve", sessionId, "call_1", ...common, "--script", writeScript(`after-${store}.json`, {
        responses: [{ chunks: ["Done."] }]
      })], { cwd })
      expect(approved.code).toBe(0)
      expect(approved.stdout).toBe("Done.\n")
      expect(approved.stderr).toContain("✓ Wrote 3 bytes to notes.txt")
      expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("v1\n")

      const log = events((await run(["replay", sessionId, "--json", ...common])).stdout)
      expectWellFormedLog(log)
      expect(log.filter((e) => e.type === "tool.started")).toHaveLength(1)
      expect(log.filter((e) => e.type === "permission.resolved").map((e) => [e.payload.decision, e.payload.actor])).toEqual([
        ["ask", "policy"],
        ["allow", "user"]
      ])
      expect(log.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect((await run(["pending", ...common])).stderr).toContain("No tool calls are waiting")
      expect(existsSync(cwd)).toBe(true)
    })
  })
}
