/**
 * The CLI's shell tool, as a real process: its keys are out of a command's reach (even through
 * /proc), and a command does not outlive the CLI when it is killed with SIGKILL.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { holders } from "../fifo.js"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-sandbox-"))
/** Markers of the commands a test started: whatever still runs with one is killed after the file. */
const markers: Array<string> = []
afterAll(() => {
  for (const pid of markers.flatMap(sleepsRunning)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone, as it should be
    }
  }
  rmSync(dir, { recursive: true, force: true })
})

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

/** Every file under `root`, as text. */
const allText = (root: string): string =>
  readdirSync(root).map((name) => {
    const file = join(root, name)
    return statSync(file).isDirectory() ? allText(file) : readFileSync(file, "latin1")
  }).join("\n")

/** Pids of live `sleep` processes whose argument is `marker`. */
const sleepsRunning = (marker: string) =>
  readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => {
    try {
      const [program, argument] = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
      return program!.split("/").at(-1) === "sleep" && argument === marker &&
        !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1)!.startsWith("Z")
    } catch {
      return false
    }
  })

describe("the CLI's shell tool", () => {
  it("the agent's keys are not readable by a command: not in its environment, not through /proc/$PPID/environ, not in the log", async () => {
    const cwd = join(dir, "probe")
    mkdirSync(cwd)
    const dataDir = join(dir, "data-probe")
    const secrets = {
      ANTHROPIC_API_KEY: `sk-test-secret-${process.pid}`,
      GITHUB_TOKEN: `ghp-test-secret-${process.pid}`,
      AWS_SECRET_ACCESS_KEY: `aws-test-secret-${process.pid}`
    }
    const probes = [
      `sh -c 'tr "\\0" "\\n" < /proc/$PPID/environ'`,
      `sh -c 'for f in /proc/[0-9]*/environ; do echo "$f"; tr "\\0" "\\n" < "$f"; done'`,
      "env"
    ]
    const finished = await run(["run", "probe", "--mode", "bypass", "--data-dir", dataDir, "--script", writeScript("probe.json", {
      responses: [{ toolCalls: probes.map((command) => ({ tool: "shell", args: { command } })) }, { chunks: ["done"] }]
    })], { cwd, env: secrets })
    expect(finished.code).toBe(0)
    const sessionId = /session (\S+)/.exec(finished.stderr)?.[1]
    const log = (await run(["replay", sessionId!, "--json", "--data-dir", dataDir])).stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)
    // The probes ran: three results, one of them the command's own environment.
    // Calls of one response run concurrently and complete in any order: the env probe is found by its call id.
    const completed = log.flatMap((e) => (e.type === "tool.completed" ? [e.payload] : []))
    expect(completed).toHaveLength(3)
    expect(completed.find((c) => c.toolCallId === "call_3")?.result).toContain("PATH=")
    for (const secret of Object.values(secrets)) {
      expect(finished.stdout).not.toContain(secret)
      expect(finished.stderr).not.toContain(secret)
      expect(JSON.stringify(log)).not.toContain(secret)
      expect(allText(dataDir)).not.toContain(secret)
    }
  })

  it("SIGKILL the CLI while a shell command runs: no child is left running", async () => {
    const cwd = join(dir, "kill")
    mkdirSync(cwd)
    const marker = `31.${process.pid}${Date.now() % 100000}`
    // The command holds a pipe while it runs (test/fifo.ts): the kernel says when it started and when it is gone.
    const command = holders(join(cwd, "held"))
    markers.push(marker)
    const running = start(["run", "wait", "--mode", "bypass", "--data-dir", join(dir, "data-kill"), "--script", writeScript("kill.json", {
      responses: [{ toolCalls: [{ tool: "shell", args: { command: `sh -c 'exec sleep ${marker} >held'` } }] }]
    })], { cwd })
    await command.opened
    running.child.kill("SIGKILL")
    await running.done
    await command.closed
    expect(sleepsRunning(marker)).toEqual([])
  })
})
