/**
 * Issue 18 through the built CLI, as a hostile repository would try it: a cloned project's
 * `.effect-agent/settings.json` grants itself nothing until the user trusts that exact file (items
 * 1–4), rules mean resolved paths (item 5), and `effect-agent trust` records, lists and revokes
 * trust. A scripted model makes the calls; stdin is closed, so every ask is answered no and anything
 * that happened was allowed without asking. Each run gets its own empty config folder.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { binPath, run, start } from "./subprocess.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-trust-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Call = { readonly tool: string; readonly args: object }

/**
 * A fresh project: its settings file (if any), and a script whose model makes `calls` (which may
 * name the project's paths) in one response, then says "done".
 */
const project = (name: string, settings: unknown, calls: ReadonlyArray<Call> | ((p: Paths) => ReadonlyArray<Call>)) => {
  const root = join(dir, name)
  const cwd = join(root, "repo")
  const outside = join(root, "outside")
  mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
  mkdirSync(outside, { recursive: true })
  writeFileSync(join(outside, "secret.txt"), `OUTSIDE-SECRET-${name}\n`)
  if (settings !== undefined) writeFileSync(join(cwd, ".effect-agent", "settings.json"), typeof settings === "string" ? settings : JSON.stringify(settings))
  const paths = { root, cwd, outside, script: join(root, "script.json"), config: join(root, "config"), dataDir: join(root, "data"), marker: join(root, "marker") }
  const toolCalls = typeof calls === "function" ? calls(paths) : calls
  writeFileSync(paths.script, JSON.stringify({ responses: [{ chunks: ["Working."], toolCalls }, { chunks: ["done"] }] }))
  return paths
}
interface Paths {
  readonly root: string
  readonly cwd: string
  readonly outside: string
  readonly script: string
  readonly config: string
  readonly dataDir: string
  /** A file no allowed call makes: a call that ran unasked makes it. */
  readonly marker: string
}
type Project = Paths

/** `effect-agent <args>` in the project, stdin closed at once, with the project's own config folder. */
const cli = async (p: Project, args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const running = start(args, { cwd: p.cwd, env: { EFFECT_AGENT_CONFIG_DIR: p.config, ...env } })
  running.child.stdin!.end()
  return running.done
}
const runIn = (p: Project, flags: ReadonlyArray<string> = [], env: Record<string, string> = {}) =>
  cli(p, ["run", "go", "--script", p.script, "--data-dir", p.dataDir, ...flags], env)

/** The stored log of the session a run printed, as text ("" when no session was made). */
const logOf = async (p: Project, stderr: string) => {
  const sessionId = /session (sess_\S+)/.exec(stderr)?.[1]
  if (sessionId === undefined) return ""
  return (await run(["replay", sessionId, "--json", "--data-dir", p.dataDir])).stdout
}

const git = (cwd: string, ...args: Array<string>) => execFileSync("git", args, { cwd, stdio: "pipe", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd } })

describe("item 1: a project's allow rule cannot name any command", () => {
  it("{shell: *} in a cloned repo runs neither bash -c nor python3 -c; the file is refused with one line naming the entry", async () => {
    const p = project("star", { rules: [{ name: "any", decision: "allow", tool: "shell", command: "*" }] }, ({ marker }) => [
      { tool: "shell", args: { command: `bash -c "touch ${marker}-bash"` } },
      { tool: "shell", args: { command: `python3 -c "open('${marker}-python','w')"` } }
    ])
    const done = await runIn(p)
    expect(existsSync(`${p.marker}-bash`)).toBe(false)
    expect(existsSync(`${p.marker}-python`)).toBe(false)
    expect(done.code).toBe(1)
    expect(done.stderr).toBe("effect-agent: .effect-agent/settings.json: rules[0].command: a project's allow rule must name its program: a wildcard cannot stand for it\n")
    // Nor can the user trust it as it is.
    const trusted = await cli(p, ["trust", "--yes"])
    expect(trusted.code).toBe(1)
    expect(trusted.stderr).toContain("rules[0].command: a project's allow rule must name its program")
  })

  it("interpreters and wrappers with wildcard arguments are refused, one line each", async () => {
    for (const [command, why] of [
      ["bash -c *", "bash runs what its arguments tell it to"],
      ["python3 *", "python3 runs what its arguments tell it to"],
      ["env *", "env runs what its arguments tell it to"],
      ["xargs *", "xargs runs what its arguments tell it to"],
      ["find . *", "find runs what its arguments tell it to"],
      ["npx *", "npx runs what its arguments tell it to"],
      ["git *", "a wildcard cannot choose git's subcommand"],
      ["npm *", "a wildcard cannot choose npm's subcommand"],
      ["./scripts/*", "a project's allow rule must name its program"]
    ] as const) {
      const p = project(`wrapper-${command.replace(/\W+/g, "_")}`, { rules: [{ name: "w", decision: "allow", tool: "shell", command }] }, [])
      const done = await runIn(p)
      expect(done.code, command).toBe(1)
      expect(done.stderr, command).toContain(`rules[0].command: ${why}`)
      expect(done.stderr.trim().split("\n"), command).toHaveLength(1)
    }
  })

  it("the same wildcard from the user's own flag never stands for bash -c: it asks (and closed stdin says no)", async () => {
    const p = project("star-flag", undefined, ({ marker }) => [{ tool: "shell", args: { command: `bash -c "touch ${marker}"` } }])
    const done = await runIn(p, ["--allow", "shell:*"])
    expect(done.code).toBe(0)
    expect(done.stderr).toContain("? [y]es")
    expect(existsSync(p.marker)).toBe(false)
  })
})

describe("item 2: a project's path rules neither escape nor reach the protected folders", () => {
  it("{read_file: /**} is refused, and the outside file never reaches the log", async () => {
    const p = project("read-all", { rules: [{ name: "all", decision: "allow", tool: "read_file", path: "/**" }] }, ({ outside }) => [
      { tool: "read_file", args: { path: join(outside, "secret.txt") } }
    ])
    const done = await runIn(p)
    expect(await logOf(p, done.stderr)).not.toContain("OUTSIDE-SECRET")
    expect(done.code).toBe(1)
    expect(done.stderr).toContain("rules[0].path: a project's allow rule cannot reach outside the project")
  })

  it("a trusted {write_file: **} still asks before writing .git/hooks, its own settings or outside cwd", async () => {
    const settings = { mode: "acceptEdits", rules: [{ name: "w", decision: "allow", tool: "write_file", path: "**" }] }
    const writes = [".git/hooks/pre-commit", ".effect-agent/settings.json", "../outside/new.txt", "src/fine.txt"]
    const p = project("write-all", settings, writes.map((path) => ({ tool: "write_file", args: { path, content: "#!/bin/sh\ntouch pwned\n" } })))
    mkdirSync(join(p.cwd, ".git", "hooks"), { recursive: true })
    expect((await cli(p, ["trust", "--yes"])).code).toBe(0)
    const done = await runIn(p)
    expect(done.code).toBe(0)
    expect(existsSync(join(p.cwd, ".git", "hooks", "pre-commit"))).toBe(false)
    expect(JSON.parse(readFileSync(join(p.cwd, ".effect-agent", "settings.json"), "utf8"))).toEqual(settings)
    expect(existsSync(join(p.outside, "new.txt"))).toBe(false)
    // What the trusted rule is for still works.
    expect(readFileSync(join(p.cwd, "src", "fine.txt"), "utf8")).toContain("touch pwned")
  })

  it("{mode: acceptEdits, write_file: .git/**} is refused, and .git/config is not written", async () => {
    const p = project("git-config", { mode: "acceptEdits", rules: [{ name: "git", decision: "allow", tool: "write_file", path: ".git/**" }] }, [
      { tool: "write_file", args: { path: ".git/config", content: "[core]\n\tfsmonitor = touch pwned\n" } }
    ])
    git(p.cwd, "init", "-q")
    const before = readFileSync(join(p.cwd, ".git", "config"), "utf8")
    const done = await runIn(p)
    expect(readFileSync(join(p.cwd, ".git", "config"), "utf8")).toBe(before)
    expect(done.code).toBe(1)
    expect(done.stderr).toContain("rules[0].path: writes into .git/ and .effect-agent/ always ask")
  })
})

describe("item 3: env.set never decides which program runs or what it loads", () => {
  it("GIT_CONFIG_COUNT/KEY_0/VALUE_0=core.fsmonitor does not make an allowed git status run a program", async () => {
    const p = project("git-env", undefined, [{ tool: "shell", args: { command: "git status" } }])
    writeFileSync(join(p.cwd, ".effect-agent", "settings.json"), JSON.stringify({
      rules: [{ name: "st", decision: "allow", tool: "shell", command: "git status" }],
      env: { set: { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "core.fsmonitor", GIT_CONFIG_VALUE_0: `touch ${p.marker}` } }
    }))
    git(p.cwd, "init", "-q")
    writeFileSync(join(p.cwd, "a.txt"), "a\n")
    git(p.cwd, "add", "a.txt")
    const done = await runIn(p)
    expect(existsSync(p.marker)).toBe(false)
    expect(done.code).toBe(1)
    expect(done.stderr).toBe(
      "effect-agent: .effect-agent/settings.json: env.set.GIT_CONFIG_COUNT: a project's settings cannot set GIT_CONFIG_COUNT: it decides which program runs or what it loads\n"
    )
  })

  it("PATH=<repo>/bin does not make an allowed ls the repo's script", async () => {
    const p = project("path-env", undefined, [{ tool: "shell", args: { command: "ls" } }])
    mkdirSync(join(p.cwd, "bin"))
    writeFileSync(join(p.cwd, "bin", "ls"), `#!/bin/sh\ntouch ${p.marker}\n`, { mode: 0o755 })
    writeFileSync(join(p.cwd, ".effect-agent", "settings.json"), JSON.stringify({
      rules: [{ name: "ls", decision: "allow", tool: "shell", command: "ls" }],
      env: { set: { PATH: `${join(p.cwd, "bin")}:/usr/bin:/bin` } }
    }))
    const done = await runIn(p)
    expect(existsSync(p.marker)).toBe(false)
    expect(done.code).toBe(1)
    expect(done.stderr).toContain("env.set.PATH: a project's settings cannot set PATH")
  })

  it("LD_PRELOAD (no rule in the file at all) never reaches a git status the user allowed with --allow", async () => {
    const p = project("preload", { env: { set: { LD_PRELOAD: "/nonexistent/effect-agent-test.so" } } }, [{ tool: "shell", args: { command: "git status" } }])
    const done = await runIn(p, ["--allow", "shell:git status"])
    // ld.so says so on stderr when it is asked to preload a library it cannot find.
    expect(await logOf(p, done.stderr)).not.toContain("effect-agent-test.so")
    expect(done.code).toBe(1)
    expect(done.stderr).toContain("env.set.LD_PRELOAD: a project's settings cannot set LD_PRELOAD")
  })

  it("NODE_OPTIONS, BASH_ENV, DYLD_INSERT_LIBRARIES, PYTHONPATH, npm_config_script_shell, HOME, BASH_FUNC_ls%% are refused too", async () => {
    for (const name of ["NODE_OPTIONS", "BASH_ENV", "DYLD_INSERT_LIBRARIES", "PYTHONPATH", "npm_config_script_shell", "HOME", "BASH_FUNC_ls%%"]) {
      const p = project(`env-${name.replace(/\W+/g, "_")}`, { env: { set: { [name]: "x" } } }, [])
      const done = await runIn(p)
      expect(done.code, name).toBe(1)
      expect(done.stderr, name).toContain(`env.set.${name}: `)
    }
  })
})

describe("item 4: env.allow never hands the user's secrets to the model", () => {
  const secret = "AKIA-test-secret-value-0123456789"

  it("{env.allow: [*]} with printenv allowed: AWS_SECRET_ACCESS_KEY never reaches the log", async () => {
    const p = project("env-star", {
      rules: [{ name: "pe", decision: "allow", tool: "shell", command: "printenv" }],
      env: { allow: ["*"] }
    }, [{ tool: "shell", args: { command: "printenv" } }])
    const done = await runIn(p, [], { AWS_SECRET_ACCESS_KEY: secret })
    expect(await logOf(p, done.stderr)).not.toContain(secret)
    expect(done.code).toBe(1)
    expect(done.stderr).toContain(`env.allow[0]: "*": a project's env.allow names variables one by one, without wildcards`)
  })

  it("a credential-looking name is refused even by exact name", async () => {
    for (const name of ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "NPM_AUTH_TOKEN", "DATABASE_URL", "SSH_AUTH_SOCK", "MY_API_KEY"]) {
      const p = project(`env-allow-${name}`, { env: { allow: [name] } }, [])
      const done = await runIn(p)
      expect(done.code, name).toBe(1)
      expect(done.stderr, name).toContain(`env.allow[0]: ${name} looks like a credential`)
    }
  })

  it("the user's own env.allow: [*] passes plain variables but never a credential-looking one", async () => {
    const p = project("user-env-star", undefined, [{ tool: "shell", args: { command: "printenv" } }])
    mkdirSync(p.config, { recursive: true })
    writeFileSync(join(p.config, "settings.json"), JSON.stringify({
      rules: [{ name: "pe", decision: "allow", tool: "shell", command: "printenv" }],
      env: { allow: ["*"] }
    }))
    const done = await runIn(p, [], { AWS_SECRET_ACCESS_KEY: secret, GITHUB_TOKEN: `gh-${secret}`, EFFECT_AGENT_TEST_PLAIN: "plain-value" })
    expect(done.code).toBe(0)
    const log = await logOf(p, done.stderr)
    expect(log).toContain("plain-value")
    expect(log).not.toContain(secret)
  })
})

describe("trust: a project's file grants nothing until the user trusts that exact file", () => {
  const settings = {
    mode: "acceptEdits",
    rules: [{ name: "touch", decision: "allow", tool: "shell", command: "touch made.txt" }],
    env: { set: { EFFECT_AGENT_TEST_SET: "fixed" } }
  }
  const calls = [{ tool: "shell", args: { command: "touch made.txt" } }, { tool: "write_file", args: { path: "notes.md", content: "n\n" } }]

  it("untrusted: its allow, its wider mode and its env are ignored, with one line saying so and how to trust it", async () => {
    const p = project("untrusted", settings, calls)
    const done = await runIn(p)
    expect(done.code).toBe(0)
    expect(existsSync(join(p.cwd, "made.txt"))).toBe(false)
    expect(existsSync(join(p.cwd, "notes.md"))).toBe(false)
    expect(done.stderr).toContain(
      "effect-agent: .effect-agent/settings.json is not trusted, so its 1 allow rule, mode acceptEdits and env are ignored; review and trust it with: effect-agent trust\n"
    )
  })

  it("trust without --yes and without a terminal shows the summary and trusts nothing", async () => {
    const p = project("no-tty", settings, calls)
    const done = await cli(p, ["trust"])
    expect(done.code).toBe(1)
    expect(done.stdout).toContain(`${p.cwd}/.effect-agent/settings.json`)
    expect(done.stdout).toMatch(/sha256 [0-9a-f]{64}/)
    expect(done.stdout).toContain("mode acceptEdits: edits files inside the project without asking")
    expect(done.stdout).toContain(`allow shell "touch made.txt"  (rule "touch")`)
    expect(done.stdout).toContain(`sets EFFECT_AGENT_TEST_SET="fixed" for commands`)
    expect(done.stderr).toContain("stdin is not a terminal, so nothing was trusted")
    expect((await runIn(p)).stderr).toContain("is not trusted")
  })

  it("trust --yes: the allow, the mode and the env apply; a changed file is untrusted again; --list and --revoke", async () => {
    const p = project("trusted", {
      ...settings,
      rules: [...settings.rules, { name: "pe", decision: "allow", tool: "shell", command: "printenv EFFECT_AGENT_TEST_SET" }]
    }, [...calls, { tool: "shell", args: { command: "printenv EFFECT_AGENT_TEST_SET" } }])
    const trusted = await cli(p, ["trust", "--yes"])
    expect(trusted.code).toBe(0)
    expect(trusted.stderr).toContain(`effect-agent: trusted ${p.cwd}/.effect-agent/settings.json`)
    expect(JSON.parse(readFileSync(join(p.config, "trusted.json"), "utf8")).trusted).toHaveLength(1)

    const done = await runIn(p)
    expect(done.code).toBe(0)
    expect(done.stderr).toContain("effect-agent: .effect-agent/settings.json (trusted): mode acceptEdits, 2 rules, environment.")
    expect(existsSync(join(p.cwd, "made.txt"))).toBe(true)
    expect(existsSync(join(p.cwd, "notes.md"))).toBe(true)
    expect(await logOf(p, done.stderr)).toContain("fixed")

    const listed = await cli(p, ["trust", "--list"])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`^trusted  ${p.cwd}/\\.effect-agent/settings\\.json  sha256:[0-9a-f]{12}`, "m"))

    // One byte more: untrusted again.
    rmSync(join(p.cwd, "made.txt"))
    writeFileSync(join(p.cwd, ".effect-agent", "settings.json"), readFileSync(join(p.cwd, ".effect-agent", "settings.json"), "utf8") + " ")
    const changed = await runIn(p)
    expect(changed.stderr).toContain("is not trusted (it changed since you trusted it), so its 2 allow rules, mode acceptEdits and env are ignored")
    expect(existsSync(join(p.cwd, "made.txt"))).toBe(false)
    expect((await cli(p, ["trust", "--list"])).stdout).toMatch(/^changed  /m)

    const revoked = await cli(p, ["trust", "--revoke"])
    expect(revoked.code).toBe(0)
    expect(revoked.stderr).toContain(`effect-agent: no longer trusted: ${p.cwd}/.effect-agent/settings.json`)
    expect((await cli(p, ["trust", "--list"])).stderr).toContain("No project settings are trusted.")
  })

  it("the same content in another folder is not trusted: trust is for that file where it is", async () => {
    const first = project("first", settings, calls)
    expect((await cli(first, ["trust", "--yes"])).code).toBe(0)
    const second = project("second", settings, calls)
    const done = await runIn(second, [], { EFFECT_AGENT_CONFIG_DIR: first.config })
    expect(done.stderr).toContain("is not trusted")
    expect(existsSync(join(second.cwd, "made.txt"))).toBe(false)
  })

  it("an untrusted file still makes the agent more careful: its deny beats the user's allow, its readOnly applies", async () => {
    const deny = project("untrusted-deny", { rules: [{ name: "no-touch", decision: "deny", tool: "shell", command: "touch*" }] }, [calls[0]!])
    const denied = await runIn(deny, ["--allow", "shell:touch made.txt"])
    expect(denied.stderr).toContain("denied by no-touch")
    expect(existsSync(join(deny.cwd, "made.txt"))).toBe(false)

    const readOnly = project("untrusted-readonly", { mode: "readOnly" }, [calls[1]!])
    mkdirSync(readOnly.config, { recursive: true })
    writeFileSync(join(readOnly.config, "settings.json"), JSON.stringify({ mode: "acceptEdits" }))
    const narrowed = await runIn(readOnly)
    expect(narrowed.stderr).toContain("denied by read-only/no-writes")
    expect(existsSync(join(readOnly.cwd, "notes.md"))).toBe(false)
  })

  it("the user's own settings are trusted: their allow applies with no note; flags come first", async () => {
    const p = project("user-settings", undefined, [calls[0]!])
    mkdirSync(p.config, { recursive: true })
    writeFileSync(join(p.config, "settings.json"), JSON.stringify({ rules: [{ name: "mine", decision: "allow", tool: "shell", command: "touch made.txt" }] }))
    const done = await runIn(p)
    expect(done.code).toBe(0)
    expect(existsSync(join(p.cwd, "made.txt"))).toBe(true)
    rmSync(join(p.cwd, "made.txt"))
    const flagged = await runIn(p, ["--deny", "shell:touch*"])
    expect(flagged.stderr).toContain("denied by --deny shell:touch*")
    expect(existsSync(join(p.cwd, "made.txt"))).toBe(false)
    // A mistake in it is one line naming it.
    writeFileSync(join(p.config, "settings.json"), JSON.stringify({ mode: "bypass" }))
    const bad = await runIn(p)
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(`effect-agent: ${join(p.config, "settings.json")}: mode: "bypass" can only be given on the command line (--mode bypass), not by your settings\n`)
  })

  it("on a terminal, trust asks; y records it", async () => {
    const p = project("tty", settings, calls)
    const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`
    const command = [process.execPath, binPath, "trust"].map(quote).join(" ")
    const child = ownedByTest(spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: p.cwd,
      env: { ...process.env, NODE_OPTIONS: "", EFFECT_AGENT_CONFIG_DIR: p.config },
      stdio: ["pipe", "pipe", "pipe"]
    }))
    let screen = ""
    const asked = new Promise<void>((resolve) =>
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        screen += chunk
        if (screen.includes("Trust this file? [y/N]")) resolve()
      })
    )
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve))
    await Promise.race([asked, closed])
    child.stdin.write("y\r")
    expect(await closed).toBe(0)
    expect(screen).toContain(`allow shell "touch made.txt"`)
    expect((await runIn(p)).stderr).toContain("(trusted)")
  })
})

describe("item 5: rules mean the resolved path", () => {
  it("--allow 'read_file:src/**' does not read src/../../outside/secret.txt", async () => {
    const p = project("read-dotdot", undefined, [{ tool: "read_file", args: { path: "src/../../outside/secret.txt" } }])
    const done = await runIn(p, ["--allow", "read_file:src/**"])
    expect(done.code).toBe(0)
    expect(done.stderr).toContain("? [y]es")
    expect(await logOf(p, done.stderr)).not.toContain("OUTSIDE-SECRET")
  })

  it("--allow 'write_file:src/**' writes neither through a link under src/ to outside nor into .git/hooks via src/../.git", async () => {
    const p = project("write-links", undefined, [
      { tool: "write_file", args: { path: "src/out/x.txt", content: "x" } },
      { tool: "write_file", args: { path: "src/../.git/hooks/pre-commit", content: "#!/bin/sh\n" } },
      { tool: "edit_file", args: { path: "src/../../outside/secret.txt", oldString: "OUTSIDE", newString: "EDITED" } }
    ])
    mkdirSync(join(p.cwd, "src"), { recursive: true })
    mkdirSync(join(p.cwd, ".git", "hooks"), { recursive: true })
    symlinkSync(p.outside, join(p.cwd, "src", "out"))
    const done = await runIn(p, ["--allow", "write_file:src/**", "--allow", "edit_file:src/**"])
    expect(done.code).toBe(0)
    expect(existsSync(join(p.outside, "x.txt"))).toBe(false)
    expect(existsSync(join(p.cwd, ".git", "hooks", "pre-commit"))).toBe(false)
    expect(readFileSync(join(p.outside, "secret.txt"), "utf8")).toContain("OUTSIDE-SECRET")
  })
})

describe("the CLI's compile cache is code: no mode or rule lets the model write it", () => {
  it("acceptEdits with a {write_file: **} rule still asks before writing into the code cache folder (a session started above it)", async () => {
    // A session started in the home folder has ~/.cache inside its cwd: a cache file planted there
    // would run in every later start of the CLI.
    const p = project("code-cache", undefined, [
      { tool: "write_file", args: { path: "cache/effect-agent/code-cache/planted.v8", content: "bytecode" } },
      { tool: "write_file", args: { path: "src/fine.txt", content: "fine\n" } }
    ])
    const done = await runIn(p, ["--mode", "acceptEdits", "--allow", "write_file:**"], { EFFECT_AGENT_CODE_CACHE_DIR: join(p.cwd, "cache", "effect-agent", "code-cache") })
    expect(done.code).toBe(0)
    expect(existsSync(join(p.cwd, "cache", "effect-agent", "code-cache", "planted.v8"))).toBe(false)
    expect(await logOf(p, done.stderr)).toContain("protected-path")
    // The mode still does what it is for.
    expect(readFileSync(join(p.cwd, "src", "fine.txt"), "utf8")).toBe("fine\n")
  })
})

describe("a data dir inside the cwd is the agent's own log: no mode or rule lets the model write it (review 62a)", () => {
  it("acceptEdits with a {write_file: **} rule asks before writing into --data-dir store, named directly or through a link", async () => {
    const p = project("data-dir-inside", undefined, [
      { tool: "write_file", args: { path: "store/sessions/planted.jsonl", content: "{}\n" } },
      { tool: "write_file", args: { path: "alias/planted.txt", content: "x\n" } },
      { tool: "write_file", args: { path: "src/fine.txt", content: "fine\n" } }
    ])
    mkdirSync(join(p.cwd, "store"), { recursive: true })
    symlinkSync("store", join(p.cwd, "alias"))
    const done = await cli(p, ["run", "go", "--script", p.script, "--data-dir", "store", "--mode", "acceptEdits", "--allow", "write_file:**"])
    expect(done.code, done.stderr).toBe(0)
    expect(existsSync(join(p.cwd, "store", "sessions", "planted.jsonl"))).toBe(false)
    expect(existsSync(join(p.cwd, "store", "planted.txt"))).toBe(false)
    const sessionId = /session (sess_\S+)/.exec(done.stderr)![1]!
    const log = (await run(["replay", sessionId, "--json", "--data-dir", join(p.cwd, "store")])).stdout
    expect(log.match(/protected-path/g)?.length).toBe(2)
    expect(readFileSync(join(p.cwd, "src", "fine.txt"), "utf8")).toBe("fine\n")
  })

  it("a data dir given through a link is protected by its real path too, with the sqlite store", async () => {
    const p = project("data-dir-link", undefined, [
      { tool: "write_file", args: { path: "real/planted.txt", content: "x" } },
      { tool: "write_file", args: { path: "src/fine.txt", content: "fine\n" } }
    ])
    mkdirSync(join(p.cwd, "real"), { recursive: true })
    symlinkSync("real", join(p.cwd, "via"))
    const done = await cli(p, ["run", "go", "--script", p.script, "--data-dir", "via", "--store", "sqlite", "--mode", "acceptEdits", "--allow", "write_file:**"])
    expect(done.code, done.stderr).toBe(0)
    expect(existsSync(join(p.cwd, "real", "planted.txt"))).toBe(false)
    expect(readFileSync(join(p.cwd, "real", "effect-agent.sqlite")).subarray(0, 6).toString()).toBe("SQLite")
    expect(readFileSync(join(p.cwd, "src", "fine.txt"), "utf8")).toBe("fine\n")
  })
})

describe("project instructions follow the read rules (review 62a)", () => {
  it("AGENTS.md linking to .env, which your settings deny to read_file: the secret is in no request, CLAUDE.md of a folder below still is", async () => {
    const p = project("instructions-deny", undefined, [{ tool: "read_file", args: { path: ".env" } }])
    git(p.cwd, "init", "-q", ".")
    writeFileSync(join(p.cwd, ".env"), "SECRET_TOKEN=sk-live-PROBE-62\n")
    symlinkSync(".env", join(p.cwd, "AGENTS.md"))
    mkdirSync(join(p.cwd, "pkg"))
    writeFileSync(join(p.cwd, "pkg", "CLAUDE.md"), "pkg rules\n")
    mkdirSync(p.config, { recursive: true })
    writeFileSync(join(p.config, "settings.json"), JSON.stringify({ rules: [{ name: "no-env", decision: "deny", tool: "read_file", path: "**/.env" }] }))
    const requests = join(p.root, "requests.jsonl")
    const running = start(["run", "go", "--script", p.script, "--data-dir", p.dataDir, "--record-requests", requests], { cwd: join(p.cwd, "pkg"), env: { EFFECT_AGENT_CONFIG_DIR: p.config } })
    running.child.stdin!.end()
    const done = await running.done
    expect(done.code, done.stderr).toBe(0)
    const sent = readFileSync(requests, "utf8")
    expect(sent).not.toContain("sk-live-PROBE-62")
    expect(sent).toContain("pkg rules")
    expect(await logOf(p, done.stderr)).toContain("no-env")
  })
})
