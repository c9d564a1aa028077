/**
 * Papercuts of the daily surfaces, through the built CLI as a new user meets them: the data dir kept
 * out of git, script delays as people write them, an error before the model's notice, JSON syntax
 * errors by line and column, `sessions --cwd` of a folder that is not there, `adopt --all` counts,
 * `trust --revoke` of what is not trusted, counts in the singular, rules without a name, and the
 * help's usage lines. Each case failed on the CLI before (`EFFECT_AGENT_TEST_BIN`).
 */
import { execFileSync } from "node:child_process"
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { folders, replayLog, runClosed, sessionIdIn } from "./subprocess.js"

const { dir, folder } = folders("papercuts3")
/** `effect-agent <args>` in `cwd`, stdin closed at once, no API key (the echo model unless a script answers). */
const cli = runClosed

const script = (at: string, responses: ReadonlyArray<object>) => {
  const file = join(at, "script.json")
  writeFileSync(file, JSON.stringify({ responses }))
  return file
}

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd } })

describe("the data dir is kept out of git", () => {
  it("a run in a repository leaves git status clean but for the shareable settings.json; a .gitignore there is never replaced", async () => {
    const repo = folder("repo")
    git(repo, "init", "-q")
    const done = await cli(repo, ["run", "hi", "--script", script(dir, [{ chunks: ["hello"] }])])
    expect(done.code, done.stderr).toBe(0)
    expect(existsSync(join(repo, ".effect-agent", "sessions"))).toBe(true)
    // Before, `?? .effect-agent/`: the logs one `git add .` away from a commit.
    expect(git(repo, "status", "--porcelain", "--untracked-files=all")).toBe("")
    // The project's settings file is meant to be committed: git still sees it.
    writeFileSync(join(repo, ".effect-agent", "settings.json"), "{}\n")
    expect(git(repo, "status", "--porcelain", "--untracked-files=all")).toBe("?? .effect-agent/settings.json\n")

    // The user's own file stays as it is (an empty one keeps the logs visible, if that is what they want).
    const own = folder("own")
    git(own, "init", "-q")
    mkdirSync(join(own, ".effect-agent"))
    writeFileSync(join(own, ".effect-agent", ".gitignore"), "")
    expect((await cli(own, ["run", "hi"])).code).toBe(0)
    expect(readFileSync(join(own, ".effect-agent", ".gitignore"), "utf8")).toBe("")

    // A link a repository shipped in its place is not followed.
    const linked = folder("linked")
    mkdirSync(join(linked, ".effect-agent"))
    const target = join(linked, "elsewhere.txt")
    symlinkSync(target, join(linked, ".effect-agent", ".gitignore"))
    expect((await cli(linked, ["run", "hi"])).code).toBe(0)
    expect(existsSync(target)).toBe(false)

    // A data dir of another name is the user's choice, and may be a project's root: nothing is written there.
    const root = folder("root")
    expect((await cli(root, ["run", "hi", "--data-dir", "."])).code).toBe(0)
    expect(existsSync(join(root, ".gitignore"))).toBe(false)
  })
})

describe("--script delays as people write them", () => {
  it("\"5ms\", \"0.01s\" and a number of milliseconds are delays; anything else names the forms it takes", async () => {
    const cwd = folder("delays")
    for (const delay of ["5ms", "0.01s", 5, "5 millis"]) {
      const done = await cli(cwd, ["run", "hi", "--script", script(cwd, [{ chunks: ["a", "b"], delay }])])
      expect(done.code, `${delay}: ${done.stderr}`).toBe(0)
      expect(done.stdout).toContain("ab")
    }
    const bad = await cli(cwd, ["run", "hi", "--script", script(cwd, [{ chunks: ["a"], delay: "3 parsecs" }])])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(
      `effect-agent: --script ${join(cwd, "script.json")}: responses[0].delay: a delay is milliseconds (200) or a duration: "300ms", "2s", "1.5m", "2 seconds"\n`
    )
  })
})

describe("an error comes before the model's notice, and alone", () => {
  it("a broken project settings file or .mcp.json: its error is the only line", async () => {
    const cwd = folder("first")
    mkdirSync(join(cwd, ".effect-agent"))
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), "{\"mode\": \"readOnly\",}\n")
    const settings = await cli(cwd, ["run", "hi"])
    expect(settings.code).toBe(1)
    expect(settings.stderr).toBe("effect-agent: .effect-agent/settings.json:1:21: not valid JSON: a comma before '}' (JSON allows no trailing comma): {\"mode\": \"readOnly\",}\n")

    const mcp = folder("first-mcp")
    writeFileSync(join(mcp, ".mcp.json"), "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"echo\",}\n  }\n}\n")
    const done = await cli(mcp, ["run", "hi"])
    expect(done.code).toBe(1)
    expect(done.stderr).toBe("effect-agent: .mcp.json:3:29: not valid JSON: a comma before '}' (JSON allows no trailing comma): \"x\": {\"command\": \"echo\",}\n")
  })
})

describe("JSON syntax errors say file:line:column and show the line", () => {
  it("a --script file, the user's settings: the line, escaped for the terminal", async () => {
    const cwd = folder("syntax")
    const file = join(cwd, "bad.json")
    writeFileSync(file, "{\"responses\": [\n  {\"chunks\": ['a']}\n]}\n")
    const bad = await cli(cwd, ["run", "hi", "--script", file])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(`effect-agent: --script ${file}:2:15: not valid JSON: a string in single quotes (JSON takes double quotes): {"chunks": ['a']}\n`)

    const config = folder("config")
    writeFileSync(join(config, "settings.json"), "{\n\"rules\": [\x1b[2J\n]}\n")
    const user = await cli(cwd, ["run", "hi"], { EFFECT_AGENT_CONFIG_DIR: config })
    expect(user.code).toBe(1)
    expect(user.stderr).toBe(`effect-agent: ${join(config, "settings.json")}:2:11: not valid JSON: expected a value, found '\\x1b': "rules": [\\x1b[2J\n`)
  })
})

describe("sessions --cwd of a folder that is not there", () => {
  it("says so, exit 1; a folder removed since still lists the sessions that ran there", async () => {
    const data = join(folder("cwd-data"), "data")
    const gone = folder("gone")
    const id = sessionIdIn((await cli(gone, ["run", "hi", "--data-dir", data])).stderr)!
    expect(id).toBeDefined()
    const missing = join(dir, "no-such-folder")
    const typo = await cli(dir, ["sessions", "--cwd", missing, "--data-dir", data])
    expect(typo.code).toBe(1)
    expect(typo.stderr).toBe(`effect-agent: --cwd ${missing}: no such folder, and no session ran there\n`)
    // Review 59c: in a store with no session yet, the typo exited 0 with "No sessions in …".
    const empty = await cli(dir, ["sessions", "--cwd", missing, "--data-dir", join(folder("cwd-empty"), "data")])
    expect(empty.code).toBe(1)
    expect(empty.stderr).toBe(`effect-agent: --cwd ${missing}: no such folder, and no session ran there\n`)
    rmSync(gone, { recursive: true })
    const listed = await cli(dir, ["sessions", "--cwd", gone, "--data-dir", data])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toContain(id)
  })
})

describe("adopt --all counts", () => {
  it("past five sessions: the counts, the ids with --verbose", async () => {
    const cwd = folder("adopt")
    const data = join(cwd, "data")
    const other = folder("adopt-other-config")
    const ids: Array<string> = []
    for (let i = 0; i < 6; i++) ids.push(sessionIdIn((await cli(cwd, ["run", `hi ${i}`, "--data-dir", data], { EFFECT_AGENT_CONFIG_DIR: other })).stderr)!)
    const mine = folder("adopt-config")
    const adopted = await cli(cwd, ["adopt", "--all", "--yes", "--data-dir", data], { EFFECT_AGENT_CONFIG_DIR: mine })
    expect(adopted.code, adopted.stderr).toBe(0)
    expect(adopted.stderr).toBe("effect-agent: adopted 6 sessions\n")
    const again = await cli(cwd, ["adopt", "--all", "--yes", "--data-dir", data], { EFFECT_AGENT_CONFIG_DIR: mine })
    expect(again.stderr).toBe("effect-agent: 6 sessions are yours already (--verbose lists them)\n")
    const verbose = await cli(cwd, ["adopt", "--all", "--verbose", "--data-dir", data], { EFFECT_AGENT_CONFIG_DIR: mine })
    for (const id of ids) expect(verbose.stderr).toContain(`effect-agent: ${id} is yours already\n`)
  })
})

describe("trust --revoke of a file that is not trusted", () => {
  it("fails, as git does for removing what is not there", async () => {
    const cwd = folder("revoke")
    const config = folder("revoke-config")
    const done = await cli(cwd, ["trust", "--revoke"], { EFFECT_AGENT_CONFIG_DIR: config })
    expect(done.code).toBe(1)
    expect(done.stderr).toBe(`effect-agent: ${cwd}/.effect-agent/settings.json was not trusted: nothing to revoke\n`)
  })
})

describe("counts in the singular", () => {
  it("repair of a log with one bad line: dropped 1 line", async () => {
    const cwd = folder("repair")
    const data = join(cwd, "data")
    const id = sessionIdIn((await cli(cwd, ["run", "hi", "--data-dir", data])).stderr)!
    appendFileSync(join(data, "sessions", `${id}.jsonl`), "not json\n")
    const done = await cli(cwd, ["repair", id, "--data-dir", data])
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toMatch(/dropped 1 line\b/)
    expect(done.stdout).not.toContain("1 lines")
  })
})

describe("a rule without a name", () => {
  it("in the user's settings is named after itself, and the log records that name", async () => {
    const cwd = folder("unnamed")
    const config = folder("unnamed-config")
    const data = join(cwd, "data")
    writeFileSync(join(config, "settings.json"), JSON.stringify({ rules: [{ decision: "deny", tool: "shell", command: "rm *" }] }))
    const file = script(cwd, [{ toolCalls: [{ tool: "shell", args: { command: "rm nothing.txt" } }] }, { chunks: ["done"] }])
    const done = await cli(cwd, ["run", "go", "--script", file, "--data-dir", data], { EFFECT_AGENT_CONFIG_DIR: config })
    expect(done.code, done.stderr).toBe(0)
    const events = await replayLog(sessionIdIn(done.stderr)!, ["--data-dir", data])
    const decision = events.find((e) => e.type === "permission.resolved")
    expect(decision?.payload).toMatchObject({ decision: "deny", policy: "deny shell:rm *" })
  })
})

describe("the help's usage lines", () => {
  it("a repeatable flag is optional, a subcommand is listed once by its own flags, a secret flag's type line is gone", async () => {
    // The root's --help is an overview since papercuts4: the usage lines are each command's own.
    const run = await cli(dir, ["run", "--help"])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("[--allow text]...")
    // In the usage line; the option's own heading, further down, stays `--allow text...`.
    expect(run.stdout.split("DESCRIPTION")[0]).not.toMatch(/(?<!\[)--allow text\.\.\./)
    const sessions = await cli(dir, ["sessions", "--help"])
    const flat = sessions.stdout.replace(/\n {2}(?! *-)/g, " ")
    expect(flat).toContain("- rename [--data-dir directory]")
    expect(flat).not.toMatch(/- sessions \[--cwd[^\n]*rename/)
    expect(run.stdout).not.toContain("confidential")
    expect(run.stdout).toContain("--database-url url")
  })
})

describe("the docs' examples, walked as a new user", () => {
  it("compact of a session with nothing to compact says only that, not which model would have answered", async () => {
    const cwd = folder("compact")
    const data = join(cwd, "data")
    const id = sessionIdIn((await cli(cwd, ["run", "hi", "--data-dir", data])).stderr)!
    const done = await cli(cwd, ["compact", id, "--data-dir", data])
    expect(done.code).toBe(1)
    expect(done.stderr).toBe(`effect-agent: Session ${id} has nothing to compact: its recent context is kept verbatim as it is\n`)
  })
})
