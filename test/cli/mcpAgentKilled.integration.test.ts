/**
 * reach44: a stdio MCP server started through a wrapper (`sh -c 'node server.mjs; …'`: the server
 * is the agent's grandchild) is stopped when the agent is SIGKILLed, which closes nothing itself.
 * Failed on main: the servers run in a process group of their own, stopped only by close(), so a
 * server that outlives its stdin's end ran on with its wrapper (this test waited for good). Now the
 * group's leader is a guardian that stops the group once the agent's end of its socket closes.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it, onTestFinished } from "vitest"
import { alive } from "../processes.js"
import { start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-mcp-killed-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/holding.mjs")

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20))
}

describe("an agent SIGKILLed with a stdio MCP server running", () => {
  it("the server a wrapper started, and the wrapper, are stopped", async () => {
    const root = join(dir, "killed")
    const p = { cwd: join(root, "repo"), config: join(root, "config"), markers: join(root, "markers"), data: join(root, "data") }
    for (const d of [p.cwd, p.config, p.markers]) mkdirSync(d, { recursive: true })
    const script = join(root, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: [{ tool: "mcp__holding__hold", args: {} }] }, { chunks: ["done"] }] }))
    const mcpConfig = join(root, "mcp.json")
    // `; exit $?` keeps the shell as the server's parent (a lone command is exec'd by some shells).
    const wrapper = `"${process.execPath}" "${serverScript}"; exit $?`
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { holding: { command: "sh", args: ["-c", wrapper], env: { MARKER_DIR: p.markers } } } }))
    const pidsFile = join(p.markers, "pids")
    let pids: { server: number; wrapper: number } | undefined
    // The wrapper's parent (the 4th field of its /proc stat): the agent's child, the group's leader.
    let leader: number | undefined
    // However the test ends, nothing it started outlives it.
    onTestFinished(() => {
      for (const pid of [pids?.server, pids?.wrapper, leader]) if (pid !== undefined && alive(pid)) process.kill(pid, "SIGKILL")
    })
    const agent = start(["run", "go", "--script", script, "--data-dir", p.data, "--mcp-config", mcpConfig, "--allow", "mcp__holding__hold"], {
      cwd: p.cwd,
      env: { EFFECT_AGENT_CONFIG_DIR: p.config }
    })
    agent.child.stdin!.end()
    // The server runs and the agent waits on its tool's answer.
    await until(() => existsSync(join(p.markers, "called")))
    pids = JSON.parse(readFileSync(pidsFile, "utf8"))
    leader = Number(readFileSync(`/proc/${pids!.wrapper}/stat`, "utf8").split(") ")[1]!.split(" ")[1])
    expect(alive(pids!.server) && alive(pids!.wrapper)).toBe(true)
    agent.child.kill("SIGKILL")
    expect((await agent.done).signal).toBe("SIGKILL")
    await until(() => !alive(pids!.server) && !alive(pids!.wrapper) && !alive(leader!))
  }, 60_000)
})
