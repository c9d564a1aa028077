/**
 * Red team round 19: where git takes a repository's settings from, one level deeper than round 18
 * (every case checked with git 2.39: the config's `core.fsmonitor` ran).
 *
 * - A `.git` link to a `gitdir:` file, and a `commondir` that is a link: git follows both; the
 *   sandbox's search (`Sandbox.findRepositories`: what it pins read-only, what `GitPrograms` reads
 *   for the repositories below a git's folder) read neither, so such a repository's config was left
 *   writable to commands and unread by the check.
 * - What a line sets for its git: `GIT_DIR=evil git status` (also `env …`, `export …;`), the config
 *   files `GIT_CONFIG_GLOBAL`/`GIT_CONFIG_SYSTEM` and `-c include.path=` name, and where the line
 *   moves first (`cd deep/clone && git status`, `env -C deep/clone git status`, `sh -c 'cd … && git status'`).
 *   Only `-C` and `--git-dir` were read: an allow rule for the line ran what those named.
 * - A submodule deeper than the search, whose git folder is not under `.git/modules`: the outer
 *   `git status` runs its `core.fsmonitor` (found from the index's gitlinks, as git finds it, with
 *   no `.gitmodules` needed).
 * What held — files that would block a reader (a FIFO or device as `.git`, config or include), a
 * 100 MB config, an include cycle — is pinned beside them.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, fsmonitor } from "./exactGitRule.js"
import { git, repositoriesIn } from "./gitRepositories.js"
import * as GitPrograms from "../../src/layers/workspace/GitPrograms.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam19-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let made = 0
/** A repository with one commit, then `config` appended to its `.git/config`. */
const repository = repositoriesIn(base)

const asks = { decision: "ask", policy: "repository-git" }
const mine = { decision: "allow", policy: "mine" }

describe("links on the way to a git folder are followed, as git follows them", () => {
  it("a nested repository whose .git is a link to a gitdir: file: found, pinned and read", async () => {
    const cwd = join(base, `folder${made++}`)
    const clone = repository(fsmonitor, join(cwd, "clone"))
    renameSync(join(clone, ".git"), join(clone, "realgit"))
    writeFileSync(join(clone, "gitfile"), "gitdir: realgit\n")
    symlinkSync("gitfile", join(clone, ".git"))
    expect([...(await Sandbox.findRepositories(cwd)).gitDirs]).toContain(join(clone, "realgit"))
    expect(await GitPrograms.chosenByRepository(cwd, [{ base: "" }])).toEqual(["core.fsmonitor (clone/realgit)"])
  })

  it("a linked worktree whose commondir is a link to a file naming the repository's git folder", async () => {
    const cwd = join(base, `folder${made++}`)
    // The repository's git folder deeper than the search reaches: only the worktree's commondir leads to it.
    const main = repository(fsmonitor, join(cwd, "a", "b", "c", "main"))
    git(["worktree", "add", "-q", join(cwd, "wt")], main)
    const own = join(main, ".git", "worktrees", "wt")
    writeFileSync(join(own, "common.txt"), readFileSync(join(own, "commondir")))
    rmSync(join(own, "commondir"))
    symlinkSync("common.txt", join(own, "commondir"))
    expect([...(await Sandbox.findRepositories(cwd)).gitDirs]).toContain(join(main, ".git"))
    expect(await decide(join(cwd, "wt"), "git status")).toMatchObject(asks)
  })

  it("held: what would block a reader (FIFO, device) or has no end (a 100 MB config, an include cycle) is read bounded", async () => {
    const fifo = (path: string) => execFileSync("mkfifo", [path])
    const cwd = join(base, `folder${made++}`)
    mkdirSync(join(cwd, "p1"), { recursive: true })
    fifo(join(cwd, "p1", ".git"))
    mkdirSync(join(cwd, "p2"))
    symlinkSync("/dev/zero", join(cwd, "p2", ".git"))
    const zero = repository("", join(cwd, "p3"))
    rmSync(join(zero, ".git", "config"))
    symlinkSync("/dev/zero", join(zero, ".git", "config"))
    const piped = repository("", join(cwd, "p4"))
    rmSync(join(piped, ".git", "config"))
    fifo(join(piped, ".git", "config"))
    repository(`[include]\n\tpath = ../inc.fifo\n\tpath = /dev/zero\n\tpath = ../a.cfg\n`, join(cwd, "p5"))
    fifo(join(cwd, "p5", "inc.fifo"))
    writeFileSync(join(cwd, "p5", "a.cfg"), "[include]\n\tpath = b.cfg\n")
    writeFileSync(join(cwd, "p5", "b.cfg"), "[include]\n\tpath = a.cfg\n")
    const large = repository("", join(cwd, "p6"))
    truncateSync(join(large, ".git", "config"), 100 * 1024 * 1024)
    const gitFile = join(cwd, "p7")
    mkdirSync(gitFile)
    writeFileSync(join(gitFile, "target"), "")
    fifo(join(gitFile, "target.fifo"))
    symlinkSync("target.fifo", join(gitFile, ".git"))
    const found = await GitPrograms.chosenByRepository(cwd, [{ base: "" }, ...["p1", "p2", "p3", "p4", "p5", "p6", "p7"].map((b) => ({ base: b }))])
    expect(found).toEqual(["(a config larger than 64 KiB, not checked) (p6/.git)"])
    expect((await Sandbox.findRepositories(cwd)).gitDirs.size).toBeGreaterThan(0)
  })
})

describe("what a line sets for its git names the repository and configs it reads", () => {
  const workspace = () => {
    const cwd = repository()
    repository(fsmonitor, join(cwd, "d1", "d2", "d3", "clone"))
    git(["init", "-q", "--bare", "evil"], cwd)
    appendFileSync(join(cwd, "evil", "config"), `[core]\n\tbare = false\n${fsmonitor.slice("[core]\n".length)}`)
    writeFileSync(join(cwd, "x.cfg"), fsmonitor)
    return cwd
  }

  it("GIT_DIR, GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM and -c include.path", async () => {
    const cwd = workspace()
    for (
      const line of [
        "GIT_DIR=evil git status", "env GIT_DIR=evil git status", "GIT_WORK_TREE=. GIT_DIR=evil git status", "export GIT_DIR=evil; git status",
        "GIT_CONFIG_GLOBAL=./x.cfg git status", "env GIT_CONFIG_SYSTEM=x.cfg git status", `git -c include.path=${join(cwd, "x.cfg")} status`,
        `git -c includeIf.onbranch:main.path=${join(cwd, "x.cfg")} status`
      ]
    ) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
  })

  it("a line that moves into the repository before git: cd, pushd, env -C, a shell's script", async () => {
    const cwd = workspace()
    for (
      const line of [
        "cd d1/d2/d3/clone && git status", "cd d1/d2/d3/clone; git status", "cd d1 && cd d2/d3/clone && git status", "pushd d1/d2/d3/clone && git status",
        "env -C d1/d2/d3/clone git status", "env --chdir=d1/d2/d3/clone git status", "sh -c 'cd d1/d2/d3/clone && git status'",
        "cd d1/d2/d3/clone && sh -c 'git status'"
      ]
    ) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
    // A git browser allowed by its own rule runs git in the repository too.
    for (const line of ["cd d1/d2/d3/clone && tig", "tig -C d1/d2/d3/clone", "env -C d1/d2/d3/clone lazygit"]) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
    // What the line does not move into is as before.
    expect(await decide(cwd, "cd d1 && git status")).toEqual(mine)
    expect(await decide(cwd, "GIT_DIR=.git git log")).not.toMatchObject(asks)
  })
})

describe("a submodule deeper than the search, its git folder out of .git/modules", () => {
  it("the outer git status runs its core.fsmonitor (found from the index's gitlinks, no .gitmodules needed)", async () => {
    const source = repository()
    const cwd = repository()
    git(["submodule", "add", "-q", source, "d1/d2/d3/sub"], cwd)
    git(["commit", "-qm", "sub"], cwd)
    expect(await decide(cwd, "git status")).toEqual(mine)
    // Its git folder moved beside it, out of .git/modules, and .gitmodules gone: git still reaches it.
    const moved = join(cwd, "d1", "d2", "d3", ".sub-git")
    renameSync(join(cwd, ".git", "modules", "d1", "d2", "d3", "sub"), moved)
    writeFileSync(join(cwd, "d1", "d2", "d3", "sub", ".git"), "gitdir: ../.sub-git\n")
    // Its `core.worktree` (relative, written by `submodule add` for .git/modules) moved with it: set
    // to where the work tree is from the new place, as `git submodule absorbgitdirs` leaves one.
    git(["config", "--file", join(moved, "config"), "core.worktree", "../sub"], cwd)
    expect(git(["rev-parse", "--show-toplevel"], join(cwd, "d1", "d2", "d3", "sub")).toString().trim()).toBe(join(cwd, "d1", "d2", "d3", "sub"))
    appendFileSync(join(moved, "config"), fsmonitor)
    git(["rm", "-q", "--cached", ".gitmodules"], cwd)
    rmSync(join(cwd, ".gitmodules"))
    expect(await decide(cwd, "git status")).toMatchObject(asks)
    expect(await GitPrograms.chosenByRepository(cwd, [{ base: "" }])).toEqual(["core.fsmonitor (d1/d2/d3/.sub-git)"])
    // Index version 4 (names prefix-compressed) and 3 (extended flags) read alike.
    writeFileSync(join(cwd, "d1", "d2", "d3", "b.txt"), "b\n")
    git(["add", "--intent-to-add", "d1/d2/d3/b.txt"], cwd)
    for (const version of ["4", "3"]) {
      git(["update-index", "--index-version", version], cwd)
      expect(await GitPrograms.chosenByRepository(cwd, [{ base: "" }]), version).toEqual(["core.fsmonitor (d1/d2/d3/.sub-git)"])
    }
  })
})
