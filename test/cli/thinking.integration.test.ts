/**
 * `--thinking-budget` through the built CLI against the wire server: a budget the API refuses is a
 * usage error before any request; a good one asks for thinking, `run` shows it on stderr and the
 * answer alone on stdout, `replay` prints it, and a second `run --session` — a new process that
 * reads the session from disk — sends the signed blocks back before the call.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as WireServer from "../layers/WireServer.js"
import { a } from "../layers/wireStreams.js"
import { run } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-thinking-"))
let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

const signature = "EqQBCkYIARgCKkD-cli-signature"
const thinking = [
  { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "I should list the files first." } },
  { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature } },
  { type: "content_block_stop", index: 0 }
]

describe("--thinking-budget", () => {
  it("a budget the API refuses, or another provider: a usage error naming the flag, no request", async () => {
    const low = await run(["run", "hi", "--thinking-budget", "512", "--data-dir", dir], { env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url } })
    expect(low.code).toBe(1)
    expect(low.stderr).toContain("--thinking-budget 512 must be at least 1024 tokens")
    const over = await run(["run", "hi", "--thinking-budget", "4096", "--data-dir", dir], {
      env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url, ANTHROPIC_MAX_OUTPUT_TOKENS: "4096" }
    })
    expect(over.stderr).toContain("must be less than the output token limit (4096")
    const fake = await run(["run", "hi", "--provider", "fake", "--thinking-budget", "2048", "--data-dir", dir])
    expect(fake.stderr).toContain("--thinking-budget is for --provider anthropic")
    expect(server.received).toHaveLength(0)
  })

  it("asks for thinking, shows it apart from the answer, and a new process sends it back", async () => {
    const env = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url }
    server.respond(a.response(thinking, a.tool(1, "toolu_1", { path: "." }, "list_files"))("tool_use"), a.answer(), a.answer())
    const first = await run(["run", "list the files", "--thinking-budget", "2048", "--mode", "bypass", "--data-dir", dir], { env, cwd: dir })
    expect(first.code).toBe(0)
    expect(first.stdout).toBe("done\n")
    expect(first.stderr).toContain("thinking up to 2048 tokens")
    expect(first.stderr).toContain("✻ I should list the files first.")
    expect(server.received[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 })
    const sessionId = /session (sess_\w+)/.exec(first.stderr)![1]!
    const replayed = await run(["replay", sessionId, "--data-dir", dir])
    expect(replayed.stdout).toContain("  ✻ I should list the files first.")
    expect(replayed.stdout).not.toContain(signature)
    const second = await run(["run", "again", "--session", sessionId, "--thinking-budget", "2048", "--data-dir", dir], { env, cwd: dir })
    expect(second.code).toBe(0)
    const assistant = server.received[2]!.body.messages.find((m: { role: string }) => m.role === "assistant")
    expect(assistant.content[0]).toEqual({ type: "thinking", thinking: "I should list the files first.", signature })
    expect(assistant.content[1]).toMatchObject({ type: "tool_use", id: "toolu_1" })
  })
})

describe("--thinking adaptive, --thinking-display, --effort", () => {
  it("with a budget, or another provider: a usage error naming the flags, no request; a display with no thinking is refused too", async () => {
    server.reset()
    const env = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url }
    const both = await run(["run", "hi", "--thinking", "adaptive", "--thinking-budget", "2048", "--data-dir", dir], { env })
    expect(both.code).toBe(1)
    expect(both.stderr).toContain("--thinking adaptive and --thinking-budget exclude each other")
    const fake = await run(["run", "hi", "--provider", "fake", "--effort", "low", "--data-dir", dir])
    expect(fake.stderr).toContain("--effort is for --provider anthropic")
    const display = await run(["run", "hi", "--thinking-display", "omitted", "--data-dir", dir], { env })
    expect(display.code).not.toBe(0)
    expect(display.stderr).toContain("a thinking display needs thinking asked for")
    expect(server.received).toHaveLength(0)
  })

  it("over the environment's budget: adaptive asked for with its display and effort; an omitted block shows nothing and a new process sends it back", async () => {
    server.reset()
    const env = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url, ANTHROPIC_THINKING_BUDGET: "2048" }
    const omitted = [
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature } },
      { type: "content_block_stop", index: 0 }
    ]
    server.respond(a.response(omitted, a.tool(1, "toolu_1", { path: "." }, "list_files"))("tool_use"), a.answer(), a.answer())
    const flags = ["--thinking", "adaptive", "--thinking-display", "omitted", "--effort", "low"]
    const first = await run(["run", "list the files", ...flags, "--mode", "bypass", "--data-dir", dir], { env, cwd: dir })
    expect(first.code).toBe(0)
    expect(first.stdout).toBe("done\n")
    expect(first.stderr).toContain("thinking adaptively")
    expect(first.stderr).not.toContain("✻")
    expect(server.received[0]!.body.thinking).toEqual({ type: "adaptive", display: "omitted" })
    expect(server.received[0]!.body.output_config).toEqual({ effort: "low" })
    const sessionId = /session (sess_\w+)/.exec(first.stderr)![1]!
    const replayed = await run(["replay", sessionId, "--data-dir", dir])
    expect(replayed.stdout).not.toContain("✻")
    const second = await run(["run", "again", "--session", sessionId, ...flags, "--data-dir", dir], { env, cwd: dir })
    expect(second.code).toBe(0)
    const assistant = server.received[2]!.body.messages.find((m: { role: string }) => m.role === "assistant")
    expect(assistant.content[0]).toEqual({ type: "thinking", thinking: "", signature })
  })

  // Review 44, item 2. Failed on main: `--thinking-display omitted` alone printed a raw ConfigError
  // (`{"_op":"InvalidData",…}`), and an environment value a flag replaces still failed the run.
  it("a thinking flag's mistake is a usage error naming the flag; a flag replaces the environment's value, even one that is no good", async () => {
    server.reset()
    const env = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url }
    const display = await run(["run", "hi", "--thinking-display", "omitted", "--data-dir", dir], { env })
    expect(display.code).toBe(1)
    expect(display.stderr).toContain("--thinking-display omitted: a thinking display needs thinking asked for")
    expect(display.stderr).not.toContain("_op")
    const fromEnv = await run(["run", "hi", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING_DISPLAY: "omitted" } })
    expect(fromEnv.stderr).toContain("ANTHROPIC_THINKING_DISPLAY=omitted: a thinking display needs thinking asked for")
    expect(fromEnv.stderr).not.toContain("_op")
    const noInteger = await run(["run", "hi", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING_BUDGET: "lots" } })
    expect(noInteger.code).toBe(1)
    expect(noInteger.stderr).toContain("ANTHROPIC_THINKING_BUDGET")
    expect(noInteger.stderr).not.toContain("_op")
    expect(server.received).toHaveLength(0)
    server.respond(a.answer(), a.answer())
    const adaptive = await run(["run", "hi", "--thinking", "adaptive", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING_BUDGET: "lots" } })
    expect(adaptive.stderr).not.toContain("ANTHROPIC_THINKING_BUDGET")
    expect(adaptive.code).toBe(0)
    expect(server.received[0]!.body.thinking).toEqual({ type: "adaptive" })
    const effort = await run(["run", "hi", "--effort", "high", "--data-dir", dir], { env: { ...env, ANTHROPIC_EFFORT: "huge" } })
    expect(effort.stderr).not.toContain("ANTHROPIC_EFFORT")
    expect(effort.code).toBe(0)
    expect(server.received[1]!.body.output_config).toEqual({ effort: "high" })
  })
  // Leftovers 42, item 5: the banner named thinking from the flags only; thinking the environment
  // asked for (ANTHROPIC_THINKING=adaptive) was asked but not shown. Failed on main (no "thinking").
  it("the banner names the thinking the run asks for, from the environment too, and its effort", async () => {
    server.reset()
    server.respond(a.answer(), a.answer(), a.answer())
    const env = { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: server.url }
    const adaptive = await run(["run", "hi", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING: "adaptive", ANTHROPIC_EFFORT: "low" } })
    expect(adaptive.code).toBe(0)
    expect(server.received[0]!.body.thinking).toEqual({ type: "adaptive" })
    expect(adaptive.stderr).toContain(", thinking adaptively, effort low.")
    const budget = await run(["run", "hi", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING_BUDGET: "3000" } })
    expect(server.received[1]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 3000 })
    expect(budget.stderr).toContain(", thinking up to 3000 tokens.")
    // A flag that picks the other kind replaces the environment's, in the request and the banner.
    const replaced = await run(["run", "hi", "--thinking", "adaptive", "--data-dir", dir], { env: { ...env, ANTHROPIC_THINKING_BUDGET: "3000" } })
    expect(server.received[2]!.body.thinking).toEqual({ type: "adaptive" })
    expect(replaced.stderr).toContain(", thinking adaptively.")
  })
})
