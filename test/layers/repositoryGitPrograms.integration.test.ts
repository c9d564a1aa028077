/**
 * Red team round 18: a repository's own git configuration. A rule allowing `git status` (or
 * "always" on it, `shell:git:read`) ran git without a question — and git runs what the
 * repository's `.git/config` names: `core.fsmonitor` on `git status`, `git diff`, `git grep`,
 * `diff.external` on `git diff`, a diff driver's `textconv` (assigned by the committed
 * `.gitattributes`) on `git log -p`/`git show`/`git blame`, a filter's `clean` on `git status`/`git
 * diff`, a `post-index-change` hook when `git status` writes the index back, and a submodule's
 * `core.fsmonitor` on the outer `git status` (each checked with git 2.39). A repository unpacked from
 * an archive, or one a tool left, brings its `.git/config`: with `git status` allowed, its
 * `core.fsmonitor` ran (`touch fsmonitor-ran` made the file). Such a git now asks, naming what would
 * run; a repository git made (a clone, `git init`) and the user's usual settings are as before.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { git, repositoriesIn } from "./gitRepositories.js"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as CommandPaths from "../../src/layers/workspace/CommandPaths.js"
import * as GitPrograms from "../../src/layers/workspace/GitPrograms.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-repo-git-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
/** A repository with one commit, then `config` appended to its `.git/config`. */
const repository = repositoriesIn(base)

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const decide = async (cwd: string, command: string, rules: ReadonlyArray<PermissionPolicy.Rule>, remembered: ReadonlyArray<RememberedPermission> = [], mode?: PermissionPolicy.Mode) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ rules, ...(mode === undefined ? {} : { mode }) }, { sessionId: "s", cwd, call, remembered })
}
const allow = (command: string): ReadonlyArray<PermissionPolicy.Rule> => [{ name: "mine", tool: "shell", command, decision: "allow" }]
const gitReads: ReadonlyArray<RememberedPermission> = [{ scope: "shell:git:read", decision: "allow", sequence: 1 }]

describe("a git whose repository's own config names a program asks, whatever a rule says", () => {
  const cases: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
    ["core.fsmonitor", `[core]\n\tfsmonitor = "touch fsmonitor-ran; false"\n`, ["git status", "git diff", "git grep a", "git ls-files"]],
    ["diff.external", `[diff]\n\texternal = ./x.sh\n`, ["git diff", "git diff HEAD"]],
    ["diff.textconv", `[diff "evil"]\n\ttextconv = ./x.sh\n`, ["git log -p", "git show", "git blame a.txt"]],
    ["filter.clean", `[filter "ev"]\n\tclean = ./x.sh\n`, ["git status", "git diff --stat"]],
    ["gpg.program", `[gpg]\n\tprogram = ./x.sh\n[log]\n\tshowSignature = true\n`, ["git log"]],
    ["core.sshcommand", `[core]\n\tsshCommand = ./x.sh\n`, ["git fetch"]],
    ["core.fsmonitor", `[core]\n\tFSMonitor = "./x.sh"\n`, ["git status"]],
    ["core.alternaterefscommand", `[core]\n\talternateRefsCommand = ./x.sh\n`, ["git status"]]
  ]
  for (const [named, config, commands] of cases) {
    it(`${named}: ${commands.join(", ")}`, async () => {
      const cwd = repository(config)
      for (const command of commands) {
        const decided = await decide(cwd, command, allow(command))
        expect(decided, command).toMatchObject({ decision: "ask", policy: "repository-git" })
        expect(decided.reason, command).toContain(named)
        // Only the setting's name: the value is the repository's text.
        expect(decided.reason, command).not.toContain("x.sh")
        expect(await decide(cwd, command, [], gitReads), command).toMatchObject({ decision: "ask", policy: "repository-git" })
        expect(await decide(cwd, command, allow("git *")), command).toMatchObject({ decision: "ask", policy: "repository-git" })
        expect(await decide(cwd, command, allow(command), [], "acceptEdits"), command).toMatchObject({ decision: "ask", policy: "repository-git" })
        // `bypass` is the user's choice to allow everything.
        expect(await decide(cwd, command, [], [], "bypass"), command).toMatchObject({ decision: "allow" })
      }
    })
  }

  it("a setting in a file the config includes ([include], [includeIf]), inside the repository or out", async () => {
    const cwd = repository(`[include]\n\tpath = ../inc.cfg\n[includeIf "onbranch:main"]\n\tpath = ../../elsewhere.cfg\n`)
    writeFileSync(join(cwd, "inc.cfg"), `[core]\n\tfsmonitor = ./x.sh\n`)
    expect(await decide(cwd, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git", reason: expect.stringContaining("core.fsmonitor") })
    const other = repository(`[includeIf "gitdir:/"]\n\tpath = ${join(base, "far.cfg")}\n`)
    writeFileSync(join(base, "far.cfg"), `[diff]\n\texternal = ./x.sh\n`)
    expect(await decide(other, "git diff", allow("git diff"))).toMatchObject({ decision: "ask", policy: "repository-git", reason: expect.stringContaining("diff.external") })
  })

  it("a config git reads that the check could not: a link to another file, one larger than is read", async () => {
    // Git follows a link at .git/config (checked with git 2.39: its core.fsmonitor ran); the check opened it without following.
    const linked = repository()
    writeFileSync(join(linked, "evil.cfg"), `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch fsmonitor-ran; false"\n`)
    rmSync(join(linked, ".git", "config"))
    symlinkSync("../evil.cfg", join(linked, ".git", "config"))
    expect(await decide(linked, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git" })
    // A .git that is a link to a file naming the git folder (git follows it: its core.fsmonitor ran).
    const viaFile = repository(`[core]\n\tfsmonitor = "touch fsmonitor-ran; false"\n`)
    renameSync(join(viaFile, ".git"), join(viaFile, "realgit"))
    writeFileSync(join(viaFile, "gitfile"), "gitdir: realgit\n")
    symlinkSync("gitfile", join(viaFile, ".git"))
    expect(await decide(viaFile, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git" })
    // Past the 64 KiB read, a setting is not seen: the config is named as not checked, and the line asks.
    const large = repository(`${"[remote \"r\"]\n\turl = https://example.com/x.git\n".repeat(2_000)}[core]\n\tfsmonitor = ./x.sh\n`)
    expect(await decide(large, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git", reason: expect.stringContaining("not checked") })
  })

  it("a post-index-change hook (git status writes the index back), in .git/hooks or the folder core.hooksPath names", async () => {
    const cwd = repository()
    writeFileSync(join(cwd, ".git", "hooks", "post-index-change"), "#!/bin/sh\ntouch hook-ran\n")
    chmodSync(join(cwd, ".git", "hooks", "post-index-change"), 0o755)
    expect(await decide(cwd, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git", reason: expect.stringContaining("hooks/post-index-change") })
    const other = repository(`[core]\n\thooksPath = tools/hooks\n`)
    mkdirSync(join(other, "tools", "hooks"), { recursive: true })
    writeFileSync(join(other, "tools", "hooks", "post-index-change"), "#!/bin/sh\ntouch hook-ran\n")
    expect(await decide(other, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git" })
  })

  it("a submodule's config (the outer git status runs its core.fsmonitor), and a nested repository -C names", async () => {
    const source = repository()
    const cwd = repository()
    git(["submodule", "add", "-q", source, "sub"], cwd)
    git(["commit", "-qm", "sub"], cwd)
    expect(await decide(cwd, "git status", allow("git status"))).toEqual({ decision: "allow", policy: "mine" })
    appendFileSync(join(cwd, ".git", "modules", "sub", "config"), `[core]\n\tfsmonitor = ./x.sh\n`)
    expect(await decide(cwd, "git status", allow("git status"))).toMatchObject({ decision: "ask", policy: "repository-git", reason: expect.stringContaining("core.fsmonitor (.git/modules/sub)") })
    const folder = join(base, "clones")
    const outer = repository(`[core]\n\tfsmonitor = ./x.sh\n`, join(folder, "one"))
    expect(await decide(folder, "git -C one status", allow("git -C one status"))).toMatchObject({ decision: "ask", policy: "repository-git" })
    // A git folder named by --git-dir (the policy asks about naming .git anyway): read as the repository's.
    expect(await GitPrograms.chosenByRepository(outer, CommandPaths.named(CommandLine.tokenize("git --git-dir=.git status").tokens, false).gits))
      .toEqual(["core.fsmonitor"])
    expect(await decide(outer, "nice git status", allow("nice git status"))).toMatchObject({ decision: "ask", policy: "repository-git" })
  })

  it("what git made, and the settings that run nothing, are as before", async () => {
    const plain = repository()
    for (const command of ["git status", "git diff", "git log -p", "git show", "git blame a.txt"]) {
      expect(await decide(plain, command, allow(command)), command).toEqual({ decision: "allow", policy: "mine" })
      expect(await decide(plain, command, [], gitReads), command).toEqual({ decision: "allow", policy: "remembered" })
    }
    // Git's own fsmonitor daemon, a pager turned off, husky's hooks folder (no post-index-change), a remote, an alias that is no shell line.
    const usual = repository(
      `[core]\n\tfsmonitor = true\n\thooksPath = .husky/_\n[pager]\n\tbranch = false\n[remote "origin"]\n\turl = https://example.com/x.git\n[alias]\n\tst = status\n`
    )
    mkdirSync(join(usual, ".husky", "_"), { recursive: true })
    writeFileSync(join(usual, ".husky", "_", "pre-commit"), "#!/bin/sh\n")
    expect(await decide(usual, "git status", allow("git status"))).toEqual({ decision: "allow", policy: "mine" })
    // A line with no git is not looked at.
    const hostile = repository(`[core]\n\tfsmonitor = ./x.sh\n`)
    expect(await decide(hostile, "ls", allow("ls"))).toEqual({ decision: "allow", policy: "mine" })
  })
})
