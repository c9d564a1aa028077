/**
 * Red team round 21: what round 20 left unread of where a git line's submodules are (every case
 * checked with git 2.39 on this machine: the hostile repository's `core.fsmonitor` ran, or did not).
 *
 * - `core.worktree` in a repository's config names its worktree's root elsewhere: `git status` then
 *   looks for the index's submodules there (as with `GIT_WORK_TREE`), and ran the `core.fsmonitor`
 *   of one populated only in that folder, five folders down, under an exact rule for `git status`;
 *   the check looked beside `.git`. A submodule's own `core.worktree` moves its submodules the same way.
 *   Git takes `core.worktree` from the repository's own config only: `-c core.worktree=…`,
 *   `GIT_CONFIG_GLOBAL` and `GIT_CONFIG_COUNT` do not move it (pinned).
 * - Held: a gitlink only in HEAD's tree (`git rm --cached sub`, not committed) is not looked into by
 *   `git status` or `git diff` (it was `git rm` itself that ran the submodule's status — its gitlink
 *   was still in the index then, and is read); a sparse clone keeps a submodule outside its cone as
 *   an index entry, which is read.
 */
import { describe, expect, it } from "@effect/vitest"
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, fsmonitor } from "./exactGitRule.js"
import { git, ran, repositoriesIn, withSubmoduleIn as withSubmoduleInRepository } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam21-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)

const asks = { decision: "ask", policy: "repository-git" }
const mine = { decision: "allow", policy: "mine" }

const withSubmoduleIn = (there: string) => withSubmoduleInRepository(repository, there, fsmonitor)

describe("core.worktree names where a repository's submodules are", () => {
  it("the repository's own config: git status looks into the submodules of the folder it names", async () => {
    const { cwd, sub } = withSubmoduleIn("x")
    expect(ran(cwd, "git status", sub)).toBe(false)
    expect(await decide(cwd, "git status")).toMatchObject(mine)
    for (const worktree of ["../x", join(cwd, "x")]) {
      git(["config", "core.worktree", worktree], cwd)
      expect(ran(cwd, "git status", sub)).toBe(true)
      expect(await decide(cwd, "git status")).toMatchObject(asks)
      expect(await decide(cwd, "git diff")).toMatchObject(asks)
    }
  })

  it("held: only the repository's own config moves it (git reads core.worktree with the repository's format)", async () => {
    const { cwd, sub } = withSubmoduleIn("x")
    writeFileSync(join(cwd, "g.cfg"), "[core]\n\tworktree = ../x\n")
    for (const line of ["git -c core.worktree=../x status", "GIT_CONFIG_GLOBAL=g.cfg git status", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.worktree GIT_CONFIG_VALUE_0=../x git status"]) {
      expect(ran(cwd, line, sub)).toBe(false)
    }
  })

  it("a submodule's config: its own submodules are looked for where its core.worktree says", async () => {
    // The outer repository's submodule `s` (found from the index), whose git folder names its worktree in `y`.
    const cwd = repository()
    const inner = withSubmoduleIn("")
    git(["submodule", "add", "-q", inner.cwd, "s"], cwd)
    git(["commit", "-qm", "s"], cwd)
    git(["submodule", "update", "-q", "--init", "--recursive"], cwd)
    const moved = join(cwd, "y")
    renameSync(join(cwd, "s"), moved)
    mkdirSync(join(cwd, "s"))
    writeFileSync(join(cwd, "s", ".git"), "gitdir: ../.git/modules/s\n")
    git(["config", "-f", join(cwd, ".git", "modules", "s", "config"), "core.worktree", "../../../y"], cwd)
    // The inner submodule's git folder, beside it in `y`, sets core.fsmonitor; its .git file still names it.
    const sub = join(moved, "d1", "d2", "d3", "sub")
    rmSync(join(sub, ".git"), { recursive: true, force: true })
    renameSync(join(cwd, ".git", "modules", "s", "modules", "d1", "d2", "d3", "sub"), join(moved, "d1", "d2", "d3", ".sg2"))
    writeFileSync(join(sub, ".git"), "gitdir: ../.sg2\n")
    git(["config", "-f", join(moved, "d1", "d2", "d3", ".sg2", "config"), "--unset", "core.worktree"], cwd)
    appendFileSync(join(moved, "d1", "d2", "d3", ".sg2", "config"), fsmonitor)
    expect(ran(cwd, "git status", sub)).toBe(true)
    expect(await decide(cwd, "git status")).toMatchObject(asks)
  })
})

describe("a git in a folder the line makes first", () => {
  it("a repository copied or moved where the line's git then works asks: what it holds is known only when it runs", async () => {
    const cwd = repository()
    const deep = repository(fsmonitor, join(cwd, "d1", "d2", "d3", "clone"))
    for (const line of ["cp -r d1/d2/d3/clone y && cd y && git status", "cp -r d1/d2/d3/clone y && git -C y status"]) {
      expect(ran(cwd, line, join(cwd, "y"))).toBe(true)
      rmSync(join(cwd, "y"), { recursive: true, force: true })
      expect(await decide(cwd, line)).toMatchObject(asks)
    }
    expect(existsSync(deep)).toBe(true)
    // git init and git clone make the folder they work in: nothing of it is there to run. A git after them there asks
    // all the same (which command made the folder is not read).
    for (const line of ["mkdir n && cd n && git init -q", "git clone -q d1/d2/d3/clone n2", "git init -q n3"]) {
      expect((await decide(cwd, line)).policy).not.toBe("repository-git")
    }
    expect(await decide(cwd, "git clone -q d1/d2/d3/clone n2 && git -C n2 log")).toMatchObject(asks)
  })
})

describe("held: what git status does not look into", () => {
  it("a gitlink only in HEAD's tree", async () => {
    const { cwd, sub } = withSubmoduleIn("")
    // git rm itself runs the submodule's status (its gitlink is still in the index then): read, asks.
    expect(await decide(cwd, "git rm -q --cached d1/d2/d3/sub")).toMatchObject(asks)
    expect(ran(cwd, "git rm -q --cached d1/d2/d3/sub", sub)).toBe(true)
    for (const line of ["git status", "git diff", "git diff HEAD", "git diff --cached --submodule=diff", "git status -uall"]) {
      expect(ran(cwd, line, sub)).toBe(false)
      expect(await decide(cwd, line)).toMatchObject(mine)
    }
  })

  it("a sparse clone keeps a submodule outside its cone in the index", async () => {
    const { cwd } = withSubmoduleIn("")
    const clone = join(base, "sparse")
    git(["clone", "-q", cwd, clone], base)
    git(["sparse-checkout", "set", "--cone", "--sparse-index", "x"], clone)
    const sub = join(clone, "d1", "d2", "d3", "sub")
    mkdirSync(sub, { recursive: true })
    git(["init", "-q"], sub)
    appendFileSync(join(sub, ".git", "config"), fsmonitor)
    expect(ran(clone, "git status", sub)).toBe(true)
    expect(await decide(clone, "git status")).toMatchObject(asks)
  })
})
