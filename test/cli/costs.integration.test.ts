/**
 * What turns cost, through the built CLI: `run` prints a one-line summary on stderr after each turn
 * (tokens in/out/cached and the cost, or which model has no price), prices come from the user's
 * settings over the built-in table (a project's settings file cannot set them), a prompt-cache
 * break between two `run`s — AGENTS.md edited in between — is shown by the second and by `replay`,
 * and `sessions` lists each session's totals.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { run, scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("costs")

/** A repository with an AGENTS.md, a config folder with `settings`, and a script answering as `model` with `usage`. */
const setup = (settings: object | undefined, model: string) => {
  const repo = realpathSync(mkdtempSync(join(dir, "repo-")))
  mkdirSync(join(repo, ".git"))
  writeFileSync(join(repo, "AGENTS.md"), "Use tabs.\n")
  const config = mkdtempSync(join(dir, "config-"))
  if (settings !== undefined) writeFileSync(join(config, "settings.json"), JSON.stringify(settings))
  const script = (usage: object) => {
    const file = join(dir, `script-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(file, JSON.stringify({ provider: "anthropic", model, responses: [{ chunks: ["ok"], usage }] }))
    return file
  }
  return { repo, env: { EFFECT_AGENT_CONFIG_DIR: config }, script }
}

describe("effect-agent run: what a turn costs", () => {
  it("prints the turn's tokens and cost on stderr (prices from the user's settings); a cache break between two runs is shown by the next run and by replay; sessions lists the totals", async () => {
    const prices = { "claude-haiku-4-5": { input: 1, output: 10, cacheRead: 0.5, cacheWrite: 2 } }
    const { env, repo, script } = setup({ prices }, "claude-haiku-4-5")
    const first = await run(["run", "one", "--script", script({ inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 1000 }), "--data-dir", dataDir], { cwd: repo, env })
    expect(first.code).toBe(0)
    // 100 × $1 + 10 × $10 + 1000 × $2 per million = $0.0022.
    expect(first.stderr).toContain("[tokens in 100 · out 10 · cache read 0 · cache write 1000 — $0.0022]")
    expect(first.stdout).not.toContain("tokens")
    const sessionId = sessionIdIn(first.stderr)!
    const again = ["--session", sessionId, "--data-dir", dataDir]
    const second = await run(["run", "two", "--script", script({ inputTokens: 20, outputTokens: 5, cacheReadTokens: 1000, cacheWriteTokens: 30 }), ...again], { cwd: repo, env })
    expect(second.code).toBe(0)
    expect(second.stderr).not.toContain("prompt cache break")
    writeFileSync(join(repo, "AGENTS.md"), "Use spaces.\n")
    const third = await run(["run", "three", "--script", script({ inputTokens: 20, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 1040 }), ...again], { cwd: repo, env })
    expect(third.code).toBe(0)
    expect(third.stderr).toContain("prompt cache break: read 1000 → 0 tokens; changed: instructions:AGENTS.md (project)")

    const events = await replay(sessionId)
    expect(events.filter((e) => e.type === "cache.break")).toHaveLength(1)
    const shown = await run(["replay", sessionId, "--data-dir", dataDir])
    expect(shown.stdout).toContain("prompt cache break: read 1000 → 0 tokens")
    expect(shown.stdout).toContain("[tokens in 100 · out 10 · cache read 0 · cache write 1000 — $0.0022]")

    const listed = await run(["sessions", "--data-dir", dataDir])
    const line = listed.stdout.split("\n").find((l) => l.startsWith(sessionId))!
    // 0.0022 + (20 + 50 + 500 + 60) / 1e6 + (20 + 50 + 2080) / 1e6 = $0.00498.
    expect(line).toContain("tokens in 140 · out 20 · cache read 1000 · cache write 2070 — $0.0050")
  })

  it("a model without a price: the line says so; --no-prompt-cache and promptCaching are accepted", async () => {
    const { env, repo, script } = setup({ promptCaching: false }, "claude-unreleased-9")
    const result = await run(["run", "one", "--no-prompt-cache", "--script", script({ inputTokens: 3, outputTokens: 1 }), "--data-dir", dataDir], { cwd: repo, env })
    expect(result.code).toBe(0)
    expect(result.stderr).toContain("[tokens in 3 · out 1 — cost unknown for claude-unreleased-9]")
    const listed = await run(["sessions", "--data-dir", dataDir])
    expect(listed.stdout.split("\n").find((l) => l.startsWith(sessionIdIn(result.stderr)!))).toContain("— cost unknown for claude-unreleased-9")
  })

  it("chat prints the summary line after each turn, with the answers alone on stdout", async () => {
    const { env, repo } = setup(undefined, "claude-haiku-4-5")
    const script = join(dir, "chat-script.json")
    writeFileSync(script, JSON.stringify({
      provider: "anthropic",
      model: "claude-haiku-4-5",
      responses: [{ chunks: ["first"], usage: { inputTokens: 1000, outputTokens: 100 } }, { chunks: ["second"], usage: { inputTokens: 2000, outputTokens: 0 } }]
    }))
    const chat = start(["chat", "--script", script, "--data-dir", dataDir], { cwd: repo, env })
    chat.child.stdin!.write("one\n")
    await chat.waitForStdout(/first\n/)
    chat.child.stdin!.end("two\n")
    const finished = await chat.done
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe("first\nsecond\n")
    // The built-in claude-haiku-4-5: $1 in, $5 out per million.
    expect(finished.stderr).toContain("[tokens in 1000 · out 100 — $0.0015]")
    expect(finished.stderr).toContain("[tokens in 2000 · out 0 — $0.0020]")
  })

  it("a project's settings file cannot set prices: it is refused, naming the key", async () => {
    const { env, repo, script } = setup(undefined, "claude-haiku-4-5")
    mkdirSync(join(repo, ".effect-agent"))
    writeFileSync(join(repo, ".effect-agent", "settings.json"), JSON.stringify({ prices: { "claude-haiku-4-5": { input: 0, output: 0 } } }))
    const result = await run(["run", "one", "--script", script({ inputTokens: 3, outputTokens: 1 }), "--data-dir", dataDir], { cwd: repo, env })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/settings\.json: .*prices/)
  })
})
