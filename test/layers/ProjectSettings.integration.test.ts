/**
 * The library's settings loader (issue 18, items 1–4): the files' schemas and their one-line errors,
 * what a project's file may never say (trusted or not), how far an untrusted, a trusted and a
 * changed file apply, the user's own file, the precedence of the three sources, and the trust store.
 * Real files in temporary folders; the config folder is always given, never the machine's.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import * as Environment from "../../src/layers/workspace/Environment.js"
import { leftMessage, right } from "../helpers.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-settings-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

/** A fresh project folder (with its settings file, if any) and a fresh config folder (with the user's file, if any). */
const setup = (project?: unknown, user?: unknown) => {
  const at = join(root, `case-${++count}`)
  const cwd = join(at, "repo")
  const configDir = join(at, "config")
  mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
  mkdirSync(configDir, { recursive: true })
  if (project !== undefined) writeFileSync(join(cwd, ".effect-agent", "settings.json"), typeof project === "string" ? project : JSON.stringify(project))
  if (user !== undefined) writeFileSync(join(configDir, "settings.json"), JSON.stringify(user))
  return { cwd, configDir }
}

const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)
const load = (at: { readonly cwd: string; readonly configDir: string }, flags: Partial<ProjectSettings.LoadOptions> = {}) =>
  run(ProjectSettings.load({ ...at, ...flags }))
const trust = async (at: { readonly cwd: string; readonly configDir: string }) => {
  const project = (await run(ProjectSettings.inspect(at.cwd, at.configDir)))!
  await run(TrustStore.trust(at.configDir, project.path, project.sha256))
  return project
}
const failure = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return String((error as Error).message)
  }
  throw new Error("expected a failure")
}

const shown = ".effect-agent/settings.json"

describe("the project's settings file: schema", () => {
  it("mode, rules and env are read", () => {
    const file = right(ProjectSettings.parseProject(JSON.stringify({
      mode: "acceptEdits",
      rules: [{ name: "tests", decision: "allow", tool: "shell", command: "npm test" }],
      env: { allow: ["NODE_ENV"], set: { CI: "1" } }
    }), shown))
    expect(file.mode).toBe("acceptEdits")
    expect(file.rules).toEqual([{ name: "tests", decision: "allow", tool: "shell", command: "npm test" }])
    expect(file.env).toEqual({ allow: ["NODE_ENV"], set: { CI: "1" } })
  })

  it("a bad entry is one line naming it", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ rules: [{ name: "a", decision: "deny" }, { name: "b", decision: "maybe" }] }, `rules[1].decision: Expected "allow" | "deny" | "ask", actual "maybe"`],
      [{ mode: "yolo" }, `mode: Expected "default" | "acceptEdits" | "readOnly", actual "yolo"`],
      [{ mode: "bypass" }, `mode: "bypass" can only be given on the command line (--mode bypass), not by a project's settings`],
      [{ rules: [{ name: "all", decision: "allow", tool: "*" }] }, `rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rules: [{ name: "sh", decision: "allow", tool: "shell" }] }, `rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rules: [{ name: "any", decision: "allow", command: "rm *" }] }, `rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rule: [] }, `rule: is unexpected, expected: "mode" | "rules" | "env"`],
      [{ rules: [{ name: "x", decision: "deny", tool: "Shell" }] }, `rules[0].tool: unknown tool "Shell" (tools: read_file, write_file, edit_file, list_dir, grep, shell, web_fetch, or *)`],
      // Names go into the log and onto terminals.
      [{ rules: [{ name: "ok\u001b[2J", decision: "deny" }] }, `rules[0].name: a rule's name is one line of 1 to 200 printable characters`],
      [{ rules: [{ name: "x".repeat(201), decision: "deny" }] }, `rules[0].name: a rule's name is one line of 1 to 200 printable characters`],
      // The Arabic letter mark is a bidi control too (it was missing from this list while the terminal's had it).
      [{ rules: [{ name: "tests\u061c", decision: "deny" }] }, `rules[0].name: a rule's name is one line of 1 to 200 printable characters`]
    ]
    for (const [json, expected] of cases) {
      const message = leftMessage(ProjectSettings.parseProject(JSON.stringify(json), shown))
      expect(message).toBe(`${shown}: ${expected}`)
    }
    expect(leftMessage(ProjectSettings.parseProject("[]", shown)).startsWith(`${shown}: Expected {`)).toBe(true)
    expect(leftMessage(ProjectSettings.parseProject("{\"rules\":", shown))).toBe(".effect-agent/settings.json:1:10: not valid JSON: the file ends too early: {\"rules\":")
    // A rule's name is optional: one without is named after itself, as a flag would be.
    const unnamed = ProjectSettings.parseProject(JSON.stringify({ rules: [{ decision: "deny" }, { decision: "deny", tool: "shell", command: "rm *" }] }), shown)
    expect(Either.getOrThrow(unnamed).rules?.map((rule) => rule.name)).toEqual(["deny *", "deny shell:rm *"])
  })
})

describe("what a project's file may never say, trusted or not", () => {
  const refused = (json: unknown) => leftMessage(ProjectSettings.parseProject(JSON.stringify(json), shown)).slice(shown.length + 2)
  const allowCommand = (command: string) => refused({ rules: [{ name: "r", decision: "allow", tool: "shell", command }] })
  const allowPath = (tool: string, path: string) => refused({ rules: [{ name: "r", decision: "allow", tool, path }] })
  const accepted = (json: unknown) => expect(Either.isRight(ProjectSettings.parseProject(JSON.stringify(json), shown)), JSON.stringify(json)).toBe(true)

  it("an allow never leaves the program to a wildcard, nor gives an interpreter or wrapper wildcard arguments", () => {
    for (const command of ["*", "* --version", "./scripts/*", "scripts/*.sh", "npm test; *"]) {
      expect(allowCommand(command), command).toBe("rules[0].command: a project's allow rule must name its program: a wildcard cannot stand for it")
    }
    for (const command of [
      "bash -c *", "sh -c *", "python -c *", "python3 *", "python3.12 *", "node -e *", "perl -e *", "ruby -e *", "env *", "xargs *",
      "find . -name *", "sudo *", "nice *", "timeout 10 *", "nohup *", "npx *", "bunx *", "bun *", "awk *", "sed *", "make *", "tar *",
      "/usr/bin/python3 *", "npm test | sh *"
    ]) {
      expect(allowCommand(command), command).toMatch(/^rules\[0\]\.command: \S+ runs what its arguments tell it to: a project's allow rule cannot give it wildcard arguments/)
    }
    for (const command of ["git *", "git -c * status", "npm *", "npm -* test", "pnpm *", "yarn *", "docker *", "cargo *", "go *"]) {
      expect(allowCommand(command), command).toMatch(/^rules\[0\]\.command: a wildcard cannot choose \S+'s subcommand/)
    }
    expect(allowCommand("LD_PRELOAD=x git status")).toBe("rules[0].command: a project's allow rule cannot set a variable before its command (LD_PRELOAD=…)")
    // Named exactly, or a wildcard after a fixed subcommand: the user can read what it allows.
    for (const command of ["npm test", "npm test *", "npm run lint *", "git status", "git log *", "cargo test *", "python3 scripts/gen.py", "bash -c \"make all\"", "pytest *", "npm test | tee log.txt"]) {
      accepted({ rules: [{ name: "r", decision: "allow", tool: "shell", command }] })
    }
    // Deny and ask rules make the agent more careful: any pattern.
    accepted({ rules: [{ name: "r", decision: "deny", tool: "shell", command: "*" }, { name: "s", decision: "ask", tool: "shell", command: "bash -c *" }] })
  })

  it("an allow's path stays inside the project and out of .git/ and .effect-agent/", () => {
    for (const path of ["/**", "/etc/passwd", "~/.ssh/*", "../**", "src/../../x", "..\\x"]) {
      expect(allowPath("read_file", path), path).toBe("rules[0].path: a project's allow rule cannot reach outside the project: give a path relative to it (e.g. src/**)")
    }
    for (const path of [".git/**", ".git/hooks/*", "sub/.GIT/config", ".effect-agent/settings.json", "**/.effect-agent/**"]) {
      expect(allowPath("write_file", path), path).toBe("rules[0].path: writes into .git/ and .effect-agent/ always ask: a project's allow rule cannot name them")
    }
    accepted({ rules: [{ name: "r", decision: "allow", tool: "write_file", path: "**" }, { name: "s", decision: "allow", tool: "edit_file", path: "src/**/*.ts" }] })
    accepted({ rules: [{ name: "r", decision: "deny", tool: "read_file", path: "/etc/**" }] })
  })

  it("env.set never sets what decides which program runs or what it loads", () => {
    for (const name of [
      "PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "GIT_CONFIG_COUNT", "GIT_SSH_COMMAND", "NODE_OPTIONS", "NODE_PATH",
      "BASH_ENV", "ENV", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVAC_OPTIONS",
      "npm_config_script_shell", "NPM_CONFIG_NODE_OPTIONS", "SHELLOPTS", "PS4", "PROMPT_COMMAND", "IFS", "XDG_CONFIG_HOME", "GCONV_PATH",
      "OPENSSL_CONF", "EDITOR", "PAGER", "CARGO_BUILD_RUSTC_WRAPPER", "RUSTC_WRAPPER", "GOFLAGS", "CC", "MAKEFLAGS", "path",
      // Options and configuration that make an otherwise plain program run one (tar's --to-command,
      // rg's --pre, man's pager, make's --eval, a compiler's subprograms, ccache's and CMake's launchers).
      "TAR_OPTIONS", "RIPGREP_CONFIG_PATH", "MANOPT", "GNUMAKEFLAGS", "GCC_EXEC_PREFIX", "COMPILER_PATH", "CCACHE_PREFIX",
      "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_TOOLCHAIN_FILE", "ZIPOPT", "PERLLIB", "PKG_CONFIG", "GH_PAGER", "GH_BROWSER", "SYSTEMD_PAGER", "SUDO_EDITOR"
    ]) {
      expect(refused({ env: { set: { [name]: "x" } } }), name).toBe(`env.set.${name}: a project's settings cannot set ${name}: it decides which program runs or what it loads`)
    }
    expect(refused({ env: { set: { "BASH_FUNC_ls%%": "() { touch x; }" } } })).toBe(`env.set.BASH_FUNC_ls%%: "BASH_FUNC_ls%%" is not a variable name`)
    accepted({ env: { set: { CI: "1", NODE_ENV: "test", RUST_BACKTRACE: "1", TZ: "UTC", DATABASE_URL: "postgres://localhost/test" } } })
  })

  // Review 52 (each refused name was accepted on main): npm's PREFIX names its global npmrc, whose
  // node-options=--require runs a file; Go's checksum database, Bundler's mirror, cgo's and rustc's
  // flags, a remote shell, the Erlang VM's flags, gh's and GnuPG's folders; the GitHub host a token goes to.
  it("env.set never sets what steers a package manager, a compiler, a VCS or a token's host; a target or a feature stays settable", () => {
    for (
      const name of [
        "PREFIX", "prefix", "GOSUMDB", "GONOSUMDB", "GOINSECURE", "GOPRIVATE", "GONOPROXY", "GOAUTH", "GOVCS", "GOPATH", "GOMODCACHE", "GOCACHE",
        "GOWORK", "GOBIN", "GODEBUG", "BUNDLE_MIRROR__ALL", "BUNDLE_SSL_VERIFY_MODE", "BUNDLER_VERSION", "GEMRC", "CGO_CFLAGS", "CGO_LDFLAGS",
        "RUSTFLAGS", "RUSTDOCFLAGS", "HGRCPATH", "HGEDITOR", "RSYNC_RSH", "CVS_RSH", "RSYNC_CONNECT_PROG", "SVN_SSH", "ERL_AFLAGS", "ERL_LIBS",
        "ELIXIR_ERL_OPTIONS", "GH_CONFIG_DIR", "GNUPGHOME", "CONDARC", "TF_CLI_CONFIG_FILE", "HELM_PLUGINS", "TERMINFO"
      ]
    ) {
      expect(refused({ env: { set: { [name]: "x" } } }), name).toBe(`env.set.${name}: a project's settings cannot set ${name}: it decides which program runs or what it loads`)
    }
    for (const name of ["GH_HOST", "GITHUB_HOST", "GITLAB_HOST", "GL_HOST"]) {
      expect(refused({ env: { set: { [name]: "x" } } }), name).toBe(`env.set.${name}: a project's settings cannot set ${name}: it decides where programs' connections go or which certificates they trust`)
    }
    accepted({ env: { set: { GOOS: "linux", GOARCH: "arm64", GOAMD64: "v3", CGO_ENABLED: "0", GOEXPERIMENT: "rangefunc", GOTELEMETRY: "off", RUST_LOG: "debug" } } })
  })

  it("env.allow never passes a personal access token, a JWT, a webhook, a *_PWD, nor a database's or broker's URL", () => {
    for (const name of ["GITHUB_PAT", "GH_PAT", "MYSQL_PWD", "CI_JOB_JWT", "CI_JOB_JWT_V2", "SLACK_WEBHOOK_URL", "POSTGRES_URL", "MONGO_URL", "AMQP_URL", "REDIS_URI", "DB_URL", "PG_URL"]) {
      expect(refused({ env: { allow: ["CI", name] } }), name).toBe(`env.allow[1]: ${name} looks like a credential: only your own settings can pass it on`)
    }
    accepted({ env: { allow: ["PWD", "API_URL", "SITE_URL", "PATH_PREFIX", "PATTERN", "HOMEPAGE_URL"] } })
  })

  it("env.allow names variables one by one, never a credential", () => {
    for (const name of ["*", "AWS_*", "NPM_*", "A*B"]) {
      expect(refused({ env: { allow: [name] } }), name).toBe(`env.allow[0]: ${JSON.stringify(name)}: a project's env.allow names variables one by one, without wildcards`)
    }
    for (const name of ["AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "GITHUB_TOKEN", "NPM_AUTH_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "DATABASE_URL", "SSH_AUTH_SOCK", "GOOGLE_APPLICATION_CREDENTIALS", "MY_SECRET"]) {
      expect(refused({ env: { allow: ["CI", name] } }), name).toBe(`env.allow[1]: ${name} looks like a credential: only your own settings can pass it on`)
    }
    accepted({ env: { allow: ["CI", "NODE_ENV", "JAVA_HOME", "LANG"] } })
  })
})

describe("the user's own settings file", () => {
  it("holds what the flags could say, but bypass; a bad entry is one line naming the file", () => {
    const file = right(ProjectSettings.parseUser(JSON.stringify({
      mode: "acceptEdits",
      rules: [{ name: "all-shell", decision: "allow", tool: "shell" }, { name: "py", decision: "allow", tool: "shell", command: "python3 *" }],
      env: { allow: ["*"], set: { PATH: "/opt/bin:/usr/bin" } }
    }), "settings.json"))
    expect(file.rules).toHaveLength(2)
    expect(leftMessage(ProjectSettings.parseUser(JSON.stringify({ mode: "bypass" }), "/c/settings.json")))
      .toBe(`/c/settings.json: mode: "bypass" can only be given on the command line (--mode bypass), not by your settings`)
  })
})

describe("ProjectSettings.load", () => {
  const project = {
    mode: "acceptEdits",
    rules: [
      { name: "tests", decision: "allow", tool: "shell", command: "npm test" },
      { name: "no-push", decision: "deny", tool: "shell", command: "git push*" },
      { name: "ask-curl", decision: "ask", tool: "shell", command: "curl *" }
    ],
    env: { allow: ["NODE_ENV"], set: { CI: "1" } }
  }

  it.effect("an untrusted file: only its deny and ask rules apply; its allow, wider mode and env are ignored, with one note", () =>
    Effect.promise(async () => {
      const at = setup(project)
      const loaded = await load(at)
      expect(loaded.project?.trust).toBe("untrusted")
      expect(loaded.policy.mode).toBe("default")
      expect(loaded.policy.rules?.map((r) => r.name)).toEqual(["no-push", "ask-curl"])
      expect(loaded.env).toEqual({ allow: [], set: {} })
      expect(loaded.notes).toEqual([
        `${at.cwd}/.effect-agent/settings.json is not trusted, so its 1 allow rule, mode acceptEdits and env are ignored (its deny and ask rules apply); review and trust it with: effect-agent trust ${at.cwd}`
      ])
    }))

  it.effect("a trusted file applies whole; one byte changed and it is untrusted again", () =>
    Effect.promise(async () => {
      const at = setup(project)
      await trust(at)
      const loaded = await load(at)
      expect(loaded.project?.trust).toBe("trusted")
      expect(loaded.policy.mode).toBe("acceptEdits")
      expect(loaded.policy.rules?.map((r) => r.name)).toEqual(["tests", "no-push", "ask-curl"])
      expect(loaded.env).toEqual({ allow: ["NODE_ENV"], set: { CI: "1" } })
      expect(loaded.notes).toEqual([`${at.cwd}/.effect-agent/settings.json (trusted): mode acceptEdits, 3 rules, environment.`])

      writeFileSync(join(at.cwd, ".effect-agent", "settings.json"), JSON.stringify(project, null, 1))
      const changed = await load(at)
      expect(changed.project?.trust).toBe("changed")
      expect(changed.policy.rules?.map((r) => r.name)).toEqual(["no-push", "ask-curl"])
      expect(changed.notes[0]).toContain("is not trusted (it changed since you trusted it)")
    }))

  it.effect("an untrusted narrower mode applies; a file with nothing to ignore says what it set", () =>
    Effect.promise(async () => {
      const at = setup({ mode: "readOnly", rules: [{ name: "no-env", decision: "deny", tool: "read_file", path: "**/.env" }] })
      const loaded = await load(at)
      expect(loaded.policy.mode).toBe("readOnly")
      expect(loaded.notes).toEqual([`${at.cwd}/.effect-agent/settings.json: mode readOnly, 1 rule.`])
      // Narrower than the user's own mode too.
      const withUser = setup({ mode: "default" }, { mode: "acceptEdits" })
      expect((await load(withUser)).policy.mode).toBe("default")
    }))

  // Review 52: docs said a project's file "may always narrow" the mode, while `--mode` beat it. The
  // flag is what you typed for this run: it wins, and the note no longer says the file's mode applied.
  it.effect("a mode given now (--mode) is not narrowed by a project's file, trusted or not; the note says the file's mode gave way", () =>
    Effect.promise(async () => {
      const at = setup({ mode: "readOnly", rules: [{ name: "no-env", decision: "deny", tool: "read_file", path: "**/.env" }] })
      const given = await load(at, { mode: "acceptEdits" })
      expect(given.policy.mode).toBe("acceptEdits")
      expect(given.notes).toEqual([`${at.cwd}/.effect-agent/settings.json: mode readOnly (the mode given now, acceptEdits, wins), 1 rule.`])
      expect((await load(at, { mode: "readOnly" })).notes).toEqual([`${at.cwd}/.effect-agent/settings.json: mode readOnly, 1 rule.`])
      await trust(at)
      expect((await load(at, { mode: "default" })).policy.mode).toBe("default")
      expect((await load(at, { mode: "default" })).notes).toEqual([`${at.cwd}/.effect-agent/settings.json (trusted): mode readOnly (the mode given now, default, wins), 1 rule.`])
    }))

  it.effect("precedence: flags, then the user's file, then the project's; the flag's mode wins; a deny wins from anywhere", () =>
    Effect.promise(async () => {
      const at = setup(
        { mode: "acceptEdits", rules: [{ name: "project-allow", decision: "allow", tool: "shell", command: "make test" }, { name: "project-deny", decision: "deny", tool: "shell", command: "rm *" }] },
        { mode: "readOnly", rules: [{ name: "user-allow", decision: "allow", tool: "shell", command: "make test" }], env: { set: { CI: "user" }, allow: ["USER_VAR"] } }
      )
      await trust(at)
      const flag: PermissionPolicy.Rule = { name: "--allow shell:rm x", decision: "allow", tool: "shell", command: "rm x" }
      const loaded = await load(at, { rules: [flag] })
      expect(loaded.policy.rules?.map((r) => r.name)).toEqual(["--allow shell:rm x", "user-allow", "project-allow", "project-deny"])
      // The user's mode beats a trusted project's wider one; a flag beats both.
      expect(loaded.policy.mode).toBe("readOnly")
      expect((await load(at, { mode: "acceptEdits" })).policy.mode).toBe("acceptEdits")
      // A project's deny beats the user's flag (the policy's rule: any matching deny wins).
      const call = { toolCallId: "c", tool: "shell", args: {}, risk: "destructive" as const, sequential: false, paths: [], scope: "shell:rm:destructive", input: {}, command: { text: "rm x", argv: ["rm", "x"], hazards: [] } }
      expect(PermissionPolicy.decide(loaded.policy, { sessionId: "s", cwd: at.cwd, call, remembered: [] })).toMatchObject({ decision: "deny", policy: "project-deny" })
      // Environment: the user's values win over the project's.
      const env = setup({ env: { set: { CI: "project", NODE_ENV: "test" } } }, { env: { set: { CI: "user" } } })
      await trust(env)
      expect((await load(env)).env.set).toEqual({ CI: "user", NODE_ENV: "test" })
    }))

  it.effect("the user's config folder is protected: a write into it asks even when cwd holds it", () =>
    Effect.promise(async () => {
      const at = setup()
      const loaded = await load(at)
      expect(loaded.policy.protectedPaths).toContain(at.configDir)
    }))

  it.effect("no file: nothing; a broken file fails with one line, an unreadable one is skipped with one; a broken trust file leaves every project untrusted", () =>
    Effect.promise(async () => {
      const none = await load(setup())
      expect(none.project).toBeUndefined()
      expect(none.notes).toEqual([])
      expect(await failure(load(setup("{ not json")))).toMatch(/settings\.json:1:3: not valid JSON: expected a property name in double quotes, found 'n': \{ not json$/)
      const fifo = setup()
      // A FIFO named settings.json (a hostile repository could ship one): skipped at once, never waited on, and the session goes on.
      const made = (await import("node:child_process")).spawnSync("mkfifo", [join(fifo.cwd, ".effect-agent", "settings.json")])
      if (made.status === 0) {
        const skipped = await load(fifo)
        expect(skipped.project).toBeUndefined()
        expect(skipped.notes).toEqual([expect.stringMatching(/settings\.json: cannot be read \(not a regular file\); skipped$/)])
      }
      // A link to nothing is no file; a loop of links is named as what it is.
      const dangling = setup()
      symlinkSync(join(dangling.cwd, "missing.json"), join(dangling.cwd, ".effect-agent", "settings.json"))
      expect((await load(dangling)).project).toBeUndefined()
      const loop = setup()
      symlinkSync(join(loop.cwd, "other.json"), join(loop.cwd, ".effect-agent", "settings.json"))
      symlinkSync(join(loop.cwd, ".effect-agent", "settings.json"), join(loop.cwd, "other.json"))
      expect((await load(loop)).notes).toEqual([expect.stringMatching(/settings\.json: cannot be read \(a loop of links\); skipped$/)])
      const user = setup(undefined, undefined)
      writeFileSync(join(user.configDir, "settings.json"), "{\"rules\":[{\"name\":\"x\",\"decision\":\"maybe\"}]}")
      expect(await failure(load(user))).toBe(`${join(user.configDir, "settings.json")}: rules[0].decision: Expected "allow" | "deny" | "ask", actual "maybe"`)

      const at = setup(project)
      await trust(at)
      writeFileSync(join(at.configDir, "trusted.json"), "garbage")
      const loaded = await load(at)
      expect(loaded.project?.trust).toBe("untrusted")
      expect(loaded.notes[0]).toMatch(/trusted\.json:1:1: not valid JSON: .*; every project's settings are treated as untrusted$/)
    }))

  it.effect("trust is for the file where it is: the same content in another folder, or reached through a link, is untrusted", () =>
    Effect.promise(async () => {
      const first = setup(project)
      await trust(first)
      const copy = setup(project)
      expect((await load({ cwd: copy.cwd, configDir: first.configDir })).project?.trust).toBe("untrusted")
      // A repository whose .effect-agent is a link to a trusted project's folder.
      const linked = setup()
      rmSync(join(linked.cwd, ".effect-agent"), { recursive: true })
      symlinkSync(join(first.cwd, ".effect-agent"), join(linked.cwd, ".effect-agent"))
      expect((await load({ cwd: linked.cwd, configDir: first.configDir })).project?.trust).toBe("untrusted")
    }))
})

describe("TrustStore", () => {
  it.effect("records one entry per file, 0600 in a 0700 folder; revoke forgets it; the config folder comes from the environment", () =>
    Effect.promise(async () => {
      const configDir = join(root, "store", "nested", "config")
      const hash = "a".repeat(64)
      await run(TrustStore.trust(configDir, "/p/.effect-agent/settings.json", hash))
      await run(TrustStore.trust(configDir, "/p/.effect-agent/settings.json", "b".repeat(64)))
      const entries = await run(TrustStore.entries(configDir))
      expect(entries.map((e) => e.sha256)).toEqual(["b".repeat(64)])
      expect(TrustStore.status(entries, "/p/.effect-agent/settings.json", hash)).toBe("changed")
      expect(TrustStore.status(entries, "/q/.effect-agent/settings.json", hash)).toBe("untrusted")
      expect(statSync(join(configDir, "trusted.json")).mode & 0o777).toBe(0o600)
      expect(statSync(configDir).mode & 0o777).toBe(0o700)
      expect(JSON.parse(readFileSync(join(configDir, "trusted.json"), "utf8")).version).toBe(1)
      expect(await run(TrustStore.revoke(configDir, "/p/.effect-agent/settings.json"))).toBe(1)
      expect(await run(TrustStore.revoke(configDir, "/p/.effect-agent/settings.json"))).toBe(0)
      expect(await run(TrustStore.entries(configDir))).toEqual([])

      const withEnv = (env: Record<string, string | undefined>) => {
        const saved = { ...process.env }
        Object.assign(process.env, env)
        for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]
        return run(TrustStore.configDir).finally(() => {
          process.env = saved
        })
      }
      expect(await withEnv({ EFFECT_AGENT_CONFIG_DIR: "/x/own", XDG_CONFIG_HOME: "/x/xdg" })).toBe("/x/own")
      // Review 59c: a relative one named a folder in whatever repository the command ran in (its
      // trusted.json, "your settings"); ignored now, as XDG's spec says of its own variables.
      expect(await withEnv({ EFFECT_AGENT_CONFIG_DIR: "own", XDG_CONFIG_HOME: "/x/xdg" })).toBe("/x/xdg/effect-agent")
      expect(await withEnv({ EFFECT_AGENT_CONFIG_DIR: "./own", XDG_CONFIG_HOME: undefined, HOME: "/x/home" })).toBe("/x/home/.config/effect-agent")
      expect(await withEnv({ EFFECT_AGENT_CONFIG_DIR: undefined, XDG_CONFIG_HOME: "/x/xdg" })).toBe("/x/xdg/effect-agent")
      expect(await withEnv({ EFFECT_AGENT_CONFIG_DIR: undefined, XDG_CONFIG_HOME: "relative", HOME: "/x/home" })).toBe("/x/home/.config/effect-agent")
    }))
})

describe("the summary shown before trusting", () => {
  it.effect("lists every grant, quotes every value with control and bidi characters escaped", () =>
    Effect.promise(async () => {
      const at = setup({
        mode: "acceptEdits",
        rules: [
          { name: "tests", decision: "allow", tool: "shell", command: "npm test \u202e\u001b[2K*" },
          { name: "no-push", decision: "deny", tool: "shell", command: "git push*" }
        ],
        env: { allow: ["NODE_ENV"], set: { CI: "1\r\n" } }
      })
      const project = (await run(ProjectSettings.inspect(at.cwd, at.configDir)))!
      const lines = ProjectSettings.summary(project)
      expect(lines).toEqual([
        `${at.cwd}/.effect-agent/settings.json`,
        `sha256 ${project.sha256}`,
        "Once trusted, it lets the agent, without asking:",
        "  mode acceptEdits: edits files inside the project without asking",
        "  allow shell \"npm test \\u202e\\u001b[2K*\"  (rule \"tests\")",
        "  passes on NODE_ENV from your environment to commands and this project's MCP servers",
        "  sets CI=\"1\\r\\n\" for commands and this project's MCP servers",
        "  (a * in a command lets the model choose those arguments)",
        "Trusted or not, it makes the agent more careful:",
        "  deny shell \"git push*\"  (rule \"no-push\")"
      ])
      for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
    }))
})

describe("Environment", () => {
  it("a wildcard never passes a credential-looking name; an exact name does", () => {
    const source = { AWS_SECRET_ACCESS_KEY: "s1", GITHUB_TOKEN: "s2", MY_APP_MODE: "plain", NPM_CONFIG_REGISTRY: "r", NPM_CONFIG__AUTH: "s3" }
    const env = Environment.build(source, { allow: ["*"], cwd: "/w" })
    expect(env.MY_APP_MODE).toBe("plain")
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined()
    expect(env.GITHUB_TOKEN).toBeUndefined()
    expect(Environment.build(source, { allow: ["NPM_CONFIG_*"], cwd: "/w" })).toMatchObject({ NPM_CONFIG_REGISTRY: "r" })
    expect(Environment.build(source, { allow: ["NPM_CONFIG_*"], cwd: "/w" }).NPM_CONFIG__AUTH).toBeUndefined()
    expect(Environment.build(source, { allow: ["GITHUB_TOKEN"], cwd: "/w" }).GITHUB_TOKEN).toBe("s2")
  })
})
