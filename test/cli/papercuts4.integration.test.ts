/**
 * Papercuts of the daily surfaces, round 4, through the built CLI as a new user meets them: what
 * `serve` and `acp` say at start, the root `--help` as an overview, and the README's and
 * docs/cli.md's commands walked in order. Each case failed on the CLI before (`EFFECT_AGENT_TEST_BIN`).
 */
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { startServe } from "../server/serveProcess.js"
import { folders, runClosed, start } from "./subprocess.js"

const { folder } = folders("papercuts4")
/** `effect-agent <args>` in `cwd`, stdin closed at once, no API key (the echo model unless a script answers). */
const cli = runClosed

const echoNotice = "effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model."

// Both printed the echo model's notice as a line of its own at start, before anything was asked.
describe("what serve and acp say at start", () => {
  it("serve names the model in its start banner, under the address, not as a notice before it", async () => {
    const cwd = folder("serve")
    const { server, stderr } = await startServe(["--data-dir", join(cwd, "data")], { cwd })
    try {
      const lines = stderr().split("\n")
      expect(lines[0]).toMatch(/^effect-agent serve: listening on http:\/\/127\.0\.0\.1:\d+ \(sessions in /)
      expect(lines[1]).toBe("  model: the built-in echo model (no API key set: ANTHROPIC_API_KEY, OPENAI_API_KEY)")
      expect(lines[2]).toMatch(/^ {2}token: /)
      expect(stderr()).not.toContain(echoNotice)
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })

  it("acp says nothing before the first model request, then the model once on stderr; stdout is JSON-RPC alone", async () => {
    const cwd = folder("acp")
    const agent = start(["acp", "--data-dir", join(cwd, "data")], { cwd })
    const send = (id: number, method: string, params: object) =>
      agent.child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    const answered = (id: number) => new RegExp(`"id":${id},"result"`)
    let stdout = ""
    let stderr = ""
    agent.child.stdout!.on("data", (chunk: string) => (stdout += chunk))
    agent.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
    send(1, "initialize", { protocolVersion: 1, clientCapabilities: {} })
    await agent.waitForStdout(answered(1))
    send(2, "session/new", { cwd, mcpServers: [] })
    await agent.waitForStdout(answered(2))
    // An editor starts the agent for a thread before the user types: nothing in its log yet.
    expect(stderr).toBe("")
    const sessionId = /"sessionId":"(sess_[^"]+)"/.exec(stdout)![1]!
    send(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] })
    await agent.waitForStdout(answered(3))
    send(4, "session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] })
    await agent.waitForStdout(answered(4))
    agent.child.stdin!.end()
    const done = await agent.done
    expect(done.code, done.stderr).toBe(0)
    expect(done.stderr).toBe(`${echoNotice}\n`)
    const lines = done.stdout.split("\n")
    expect(lines.pop()).toBe("")
    for (const line of lines) expect((JSON.parse(line) as { jsonrpc?: string }).jsonrpc, line).toBe("2.0")
  })
})

// The root's --help was @effect/cli's: 153 lines, every command with all its flags, @effect/cli's
// own flags each in five lines, and `run` first seen on line 69.
describe("effect-agent --help is an overview", () => {
  const commands = ["run", "chat", "replay", "export-script", "fork", "rewind", "compact", "watch", "sessions", "pending", "approve", "deny", "trust", "adopt", "mcp", "acp", "serve", "repair"]

  it("the usage, each command in one line, the global flags and where to read more, in a screen", async () => {
    const cwd = folder("help")
    const help = await cli(cwd, ["--help"])
    expect(help.code).toBe(0)
    expect(help.stderr).toBe("")
    const lines = help.stdout.split("\n")
    expect(lines.length).toBeLessThanOrEqual(45)
    expect(help.stdout).toContain("$ effect-agent <command> [options] [arguments]")
    for (const name of commands) expect(lines.filter((line) => line.startsWith(`  ${name} `)), name).toHaveLength(1)
    // No command's flags: those are in `effect-agent <command> --help`.
    expect(help.stdout).not.toContain("--data-dir")
    expect(help.stdout).toContain("effect-agent <command> --help")
    expect(help.stdout).toContain("docs/cli.md")
    for (const flag of ["--help", "--version", "--completions"]) expect(help.stdout).toContain(flag)
    // -h, and nothing at all, print the same.
    expect((await cli(cwd, ["-h"])).stdout).toBe(help.stdout)
    expect((await cli(cwd, [])).stdout).toBe(help.stdout)
  })

  it("each command's own --help keeps its flags", async () => {
    const help = await cli(folder("help"), ["rewind", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("--to integer")
  })
})

describe("the README's and docs/cli.md's commands, walked as a new user", () => {
  // @effect/cli's own errors were bare and followed by a blank line (`Missing argument <sessionId>\n\n`),
  // where every other error of the CLI is one line naming the program; a missing argument named no command.
  it.each([
    [["replay"], "effect-agent: replay: missing argument <sessionId>; effect-agent replay --help lists the arguments"],
    [["sessions", "rename", "sess_x"], "effect-agent: sessions rename: missing argument <title>; effect-agent sessions rename --help lists the arguments"],
    [["rewind", "sess_x"], "effect-agent: rewind: --to is required; effect-agent rewind --help says what it takes"],
    [["run", "hi", "--max-cost", "abc"], `effect-agent: --max-cost: "abc" is not a number`],
    [["run", "hi", "--mcp-config", "mcp.json"], `effect-agent: --mcp-config "mcp.json": no such file`]
  ] as const)("%j: one line naming the program (and the command), exit 1", async (args, line) => {
    const done = await cli(folder("usage"), args)
    expect(done.code).toBe(1)
    expect(done.stdout).toBe("")
    expect(done.stderr).toBe(`${line}\n`)
  })

  it("compact's echo summary of one item says it in the singular", async () => {
    const cwd = folder("compact")
    const data = join(cwd, "data")
    const first = await cli(cwd, ["run", "one", "--data-dir", data])
    const id = /session (sess_\S+)/.exec(first.stderr)![1]!
    for (const message of ["two", "three"]) expect((await cli(cwd, ["run", message, "--session", id, "--data-dir", data])).code).toBe(0)
    expect((await cli(cwd, ["compact", id, "--data-dir", data])).code).toBe(0)
    // Compacted again at once: the summary before, one item, is all it summarises.
    const done = await cli(cwd, ["compact", id, "--data-dir", data, "--keep-recent-tokens", "1"])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout.trimEnd().split("\n").at(-1)).toBe("Echo summary: 1 earlier item was compacted.")
  })
})
