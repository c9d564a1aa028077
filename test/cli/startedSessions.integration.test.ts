/**
 * A session log that came with a repository, through the built CLI. The repository's author ran the
 * agent in the folder the victim clones to (a devcontainer's `/workspaces/<repo>`, a CI checkout)
 * and answered "always" to `touch`; the log, in `.effect-agent/sessions/`, is committed. Before
 * `StartedSessions`, the victim's `run --session <id>` / `chat --continue` in the clone took that
 * answer as theirs: the model's `touch` ran unasked. Now the CLI drives only the sessions its user
 * started or adopted. Each side has its own config folder; stdin is closed, so an ask is answered no.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { startServe } from "../server/serveProcess.js"
import { scratch, sessionIdIn, start } from "./subprocess.js"

const { dir } = scratch("started")

/** A scripted model that runs `command` in the shell, then says "done". */
const script = (name: string, command: string) => {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify({ responses: [{ chunks: ["Working."], toolCalls: [{ tool: "shell", args: { command } }] }, { chunks: ["done"] }] }))
  return file
}

/** `effect-agent <args>` in `cwd` with the config folder `config`, `input` on stdin (then closed). */
const cli = (cwd: string, config: string, args: ReadonlyArray<string>, input = "") => {
  const running = start(args, { cwd, env: { EFFECT_AGENT_CONFIG_DIR: config } })
  running.child.stdin!.end(input)
  return running.done
}

/** A repository whose author left a session in its `.effect-agent/` with "always" for `touch`. */
const plantedRepository = async (name: string, authorScript = script(`${name}-author`, "touch by-author"), answers = "a\n") => {
  const repo = join(dir, name, "repo")
  mkdirSync(repo, { recursive: true })
  const author = join(dir, name, "author-config")
  const victim = join(dir, name, "victim-config")
  const made = await cli(repo, author, ["run", "go", "--script", authorScript], answers)
  expect(made.code).toBe(0)
  expect(existsSync(join(repo, "by-author"))).toBe(true)
  const sessionId = sessionIdIn(made.stderr)!
  expect(sessionId).toBeDefined()
  return { repo, author, victim, sessionId, touch: script(`${name}-victim`, "touch planted-ran") }
}

describe("a session log shipped in a repository is not the user's", () => {
  it("run --session <id> refuses it before anything runs: the remembered `touch` does not run, nothing is appended", async () => {
    const p = await plantedRepository("session")
    const logFile = join(p.repo, ".effect-agent", "sessions", `${p.sessionId}.jsonl`)
    const before = readFileSync(logFile, "utf8")
    expect(before).toContain("\"remember\":true")
    const done = await cli(p.repo, p.victim, ["run", "go", "--script", p.touch, "--session", p.sessionId])
    expect(done.code).toBe(1)
    expect(done.stderr).toContain(`effect-agent: session ${p.sessionId} was not started by you here (its log may have come with a repository)`)
    expect(done.stderr).toContain(`effect-agent adopt ${p.sessionId}`)
    expect(existsSync(join(p.repo, "planted-ran"))).toBe(false)
    expect(readFileSync(logFile, "utf8")).toBe(before)
    // Nor through `approve`/`deny`, `fork` or `compact`: the store refuses every write.
    const forked = await cli(p.repo, p.victim, ["fork", p.sessionId])
    expect(forked.code).toBe(1)
    // In plain words, not the store's jargon ("Event store lock failed [untrusted]: …"): what happened and how to adopt it.
    expect(forked.stderr).toContain(`effect-agent: session ${p.sessionId} was not started by this user here (its log may have come with a repository), so it was left as it is`)
    expect(forked.stderr).toContain(`adopt it: effect-agent adopt ${p.sessionId}`)
    expect(forked.stderr).not.toContain("[untrusted]")
    expect(forked.stderr).not.toContain("Event store")
    expect(readdirSync(join(p.repo, ".effect-agent", "sessions")).filter((f) => f.endsWith(".jsonl"))).toEqual([`${p.sessionId}.jsonl`])
  })

  it("chat --continue passes it over and says why; the user's own session is continued", async () => {
    const p = await plantedRepository("continue")
    const none = await cli(p.repo, p.victim, ["chat", "--continue", "--script", p.touch], "go\n")
    expect(none.code).toBe(1)
    expect(none.stderr).toContain("no session of yours in")
    expect(none.stderr).toContain("1 stored here was not started by you")
    expect(existsSync(join(p.repo, "planted-ran"))).toBe(false)
    // The victim's own session is the one continued, though the planted one was active since.
    const own = await cli(p.repo, p.victim, ["run", "hello", "--script", script("continue-own", "echo hi")], "n\n")
    const ownId = sessionIdIn(own.stderr)!
    expect((await cli(p.repo, p.author, ["run", "more", "--session", p.sessionId, "--script", script("continue-more", "echo more")])).code).toBe(0)
    const continued = await cli(p.repo, p.victim, ["chat", "--continue", "--script", p.touch], "go\n")
    expect(continued.stderr).toContain(`session ${ownId}`)
    expect(continued.stderr).not.toContain(p.sessionId)
    // Its `touch` was asked (and answered no: the input ended), not run on the planted "always".
    expect(existsSync(join(p.repo, "planted-ran"))).toBe(false)
  })

  it("adopt shows what the session allowed and asks; without a terminal only --yes adopts; then it is driven as the user's", async () => {
    const p = await plantedRepository("adopt")
    const shown = await cli(p.repo, p.victim, ["adopt", p.sessionId])
    expect(shown.code).toBe(1)
    expect(shown.stdout).toContain(`session ${p.sessionId}`)
    expect(shown.stdout).toContain(`cwd       ${p.repo}`)
    expect(shown.stdout).toContain("always    allow shell:touch:write")
    expect(shown.stderr).toContain("stdin is not a terminal, so nothing was adopted")
    expect((await cli(p.repo, p.victim, ["run", "go", "--script", p.touch, "--session", p.sessionId])).code).toBe(1)
    const adopted = await cli(p.repo, p.victim, ["adopt", p.sessionId, "--yes"])
    expect(adopted.code).toBe(0)
    expect(adopted.stderr).toContain(`adopted ${p.sessionId}`)
    expect((await cli(p.repo, p.victim, ["adopt", p.sessionId, "--yes"])).stderr).toContain("is yours already")
    // Adopted, its "always" is the user's: the call runs without asking.
    const driven = await cli(p.repo, p.victim, ["run", "go", "--script", p.touch, "--session", p.sessionId])
    expect(driven.code).toBe(0)
    expect(existsSync(join(p.repo, "planted-ran"))).toBe(true)
  })

  it("adopt lists the files a rewind of the session could write or remove, escaped for the terminal, before it is trusted", async () => {
    // The author's calls made two files, one named with a terminal's escape sequence (a window title).
    const author = join(dir, "restores-author.json")
    writeFileSync(author, JSON.stringify({
      responses: [
        { chunks: ["Working."], toolCalls: [{ tool: "shell", args: { command: "touch by-author" } }, { tool: "write_file", args: { path: "x\u001b]0;owned\u0007y", content: "planted\n" } }] },
        { chunks: ["done"] }
      ]
    }))
    const p = await plantedRepository("restores", author, "a\na\n")
    const shown = await cli(p.repo, p.victim, ["adopt", p.sessionId])
    expect(shown.code).toBe(1)
    const lines = shown.stdout.split("\n")
    const at = lines.findIndex((line) => /^ {2}rewind {4}\d+ files in its cwd a rewind of it may write or remove/.test(line))
    expect(at).toBeGreaterThan(0)
    const listed: Array<string> = []
    for (let i = at + 1; i < lines.length && lines[i]!.startsWith(" ".repeat(14)); i++) listed.push(lines[i]!.trim())
    // (The shell's snapshot may also have seen the log itself change: a path a rewind refuses to write, `unsafe_path`.)
    expect(listed).toEqual(expect.arrayContaining(["by-author", "x\\x1b]0;owned\\x07y"]))
    expect(shown.stdout).not.toContain("\x1b")
    expect(shown.stdout).not.toContain("\x07")
  })

  it("adopt refuses an unknown session and a call that names none; --all adopts every session not the user's yet", async () => {
    const p = await plantedRepository("refusals")
    const unknown = await cli(p.repo, p.victim, ["adopt", "sess_unknown", "--yes"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("no session sess_unknown in the store")
    expect((await cli(p.repo, p.victim, ["adopt"])).stderr).toContain("name the sessions to adopt, or give --all")
    const all = await cli(p.repo, p.victim, ["adopt", "--all", "--yes"])
    expect(all.code).toBe(0)
    expect(all.stderr).toContain(`adopted ${p.sessionId}`)
  })

  it("serve lists and shows it, but answers 409 SessionUntrusted to a turn on it, having run and stored nothing", async () => {
    const p = await plantedRepository("serve")
    const served = await startServe(["--script", p.touch, "--no-instructions"], { cwd: p.repo, env: { EFFECT_AGENT_CONFIG_DIR: p.victim } })
    try {
      const headers = { authorization: `Bearer ${served.token}`, "content-type": "application/json" }
      const listed = await fetch(`${served.url}/sessions`, { headers })
      expect(listed.status).toBe(200)
      expect(await listed.text()).toContain(p.sessionId)
      const events = await fetch(`${served.url}/sessions/${p.sessionId}/events`, { headers })
      expect(events.status).toBe(200)
      const before = await events.text()
      const turn = await fetch(`${served.url}/sessions/${p.sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message: "go" }) })
      expect(turn.status).toBe(409)
      expect(await turn.json()).toMatchObject({ error: "SessionUntrusted" })
      expect(existsSync(join(p.repo, "planted-ran"))).toBe(false)
      expect(await (await fetch(`${served.url}/sessions/${p.sessionId}/events`, { headers })).text()).toBe(before)
      // A session the server starts is its user's: driven as usual.
      const created = await fetch(`${served.url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd: p.repo }) })
      expect(created.status).toBe(201)
    } finally {
      served.server.child.kill("SIGTERM")
      await served.server.done
    }
  })
})
