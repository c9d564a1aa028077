/**
 * Red team round 20: gits whose folder is known only when they run, and where git really takes a
 * `--git-dir` from (every case checked with git 2.39: the hostile repository's `core.fsmonitor` ran).
 *
 * - `find . -name a.txt -execdir git status \;` runs git in every folder find matches, at any depth;
 *   find was not read as a runner at all, so an exact allow rule for the line ran a nested
 *   repository's `core.fsmonitor`. `xargs -I{} git -C {} status` and `xargs git -C` take the folder
 *   from their input: the check read a folder named `{}` (or cwd). Such a git now asks.
 * - `git --git-dir=g/gd -C x status`: git resolves a relative `--git-dir` after every `-C` (it
 *   sets GIT_DIR, then moves); the check resolved it from cwd, read nothing, and the line ran.
 * - `lazygit -p x` works in `x` (its `--path`): the check read cwd's repository.
 * What held — a folder the shell expands (`git -C "$D" status`, `cd "$D" && git status`), `timeout`,
 * `nice`, `stdbuf`, `flock`, `time`, `command`, `exec`, `watch`, `sudo -u` before git, `tig -C x` — is
 * pinned beside them.
 */
import { describe, expect, it } from "@effect/vitest"
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, fsmonitor } from "./exactGitRule.js"
import { git, ran, repositoriesIn, withSubmoduleIn } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam20-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let made = 0
const repository = repositoriesIn(base)

const asks = { decision: "ask", policy: "repository-git" }
const mine = { decision: "allow", policy: "mine" }

describe("a git whose folder is known only when it runs asks", () => {
  it("find -execdir: git runs in every folder find matches", async () => {
    const cwd = join(base, `folder${made++}`)
    const clone = repository(fsmonitor, join(cwd, "a", "b", "c", "d", "e", "clone"))
    const line = "find . -name a.txt -execdir git status \\;"
    expect(ran(cwd, line, clone)).toBe(true)
    expect(await decide(cwd, line)).toMatchObject(asks)
    expect(await decide(cwd, "find . -name a.txt -execdir sh -c 'git status' \\;")).toMatchObject(asks)
  })

  it("find -exec, xargs and parallel with the folder as a placeholder, or git's options left to the input", async () => {
    const cwd = join(base, `folder${made++}`)
    mkdirSync(cwd)
    const elsewhere = repository(fsmonitor)
    writeFileSync(join(cwd, "dirs"), `${elsewhere}\n`)
    expect(ran(cwd, "xargs -I{} git -C {} status < dirs", elsewhere)).toBe(true)
    for (const line of ["xargs -I{} git -C {} status < dirs", "xargs -I DIR git -C DIR status < dirs", "cat dirs | xargs git -C", "find . -exec git -C {} status \\;"]) {
      expect(await decide(cwd, line)).toMatchObject(asks)
    }
  })

  it("held: a git after a runner in a known folder asks only for what its repository runs", async () => {
    const cwd = repository("", join(base, `folder${made++}`))
    for (const line of ["find . -name '*.txt' -exec git log -- {} \\;", "git ls-files | xargs git add", "xargs -I{} git log -- {} < a.txt", "find . -name git"]) {
      expect(await decide(cwd, line)).toMatchObject(mine)
    }
  })

  it("held: a folder the shell expands, and wrappers that do not move", async () => {
    const cwd = join(base, `folder${made++}`)
    const clone = repository(fsmonitor, join(cwd, "clone"))
    for (const line of ['git -C "$D" status', 'cd "$D" && git status']) expect((await decide(cwd, line)).decision).toBe("ask")
    for (const wrapper of ["timeout 5", "nice", "stdbuf -o0", "flock f", "time", "command", "exec", "watch", "sudo -u bob", "env"]) {
      expect(await decide(clone, `${wrapper} git status`)).toMatchObject(asks)
    }
    expect(await decide(cwd, "tig -C clone")).toMatchObject(asks)
  })
})

describe("git's own order of options", () => {
  it("a relative --git-dir before -C is taken from the folder -C moves to", async () => {
    const cwd = join(base, `folder${made++}`)
    // A git folder not named `.git` (a write to a `.git` path asks on its own).
    renameSync(join(repository(fsmonitor, join(cwd, "x", "g")), ".git"), join(cwd, "x", "g", "gd"))
    const line = "git --git-dir=g/gd -C x status"
    expect(ran(cwd, line, join(cwd, "x"))).toBe(true)
    expect(await decide(cwd, line)).toMatchObject(asks)
    expect(await decide(cwd, "git -C x --git-dir=g/gd status")).toMatchObject(asks)
  })

  it("lazygit -p names the folder it works in", async () => {
    const cwd = join(base, `folder${made++}`)
    mkdirSync(cwd)
    repository(fsmonitor, join(cwd, "deep", "er", "st", "il", "l", "clone"))
    for (const line of ["lazygit -p deep/er/st/il/l/clone", "lazygit --path=deep/er/st/il/l/clone"]) {
      expect(await decide(cwd, line)).toMatchObject(asks)
    }
  })
})

describe("the index a git line really reads", () => {
  /** A repository whose submodule is deeper than the search and whose git folder, beside it, sets core.fsmonitor. */
  const withDeepSubmodule = () => {
    const cwd = repository()
    git(["submodule", "add", "-q", repository(), "d1/d2/d3/sub"], cwd)
    git(["commit", "-qm", "sub"], cwd)
    const moved = join(cwd, "d1", "d2", "d3", ".sub-git")
    renameSync(join(cwd, ".git", "modules", "d1", "d2", "d3", "sub"), moved)
    writeFileSync(join(cwd, "d1", "d2", "d3", "sub", ".git"), "gitdir: ../.sub-git\n")
    // Its core.worktree named the old place: gone, git takes the folder whose .git led there.
    git(["config", "-f", join(moved, "config"), "--unset", "core.worktree"], cwd)
    appendFileSync(join(moved, "config"), fsmonitor)
    return { cwd, sub: join(cwd, "d1", "d2", "d3", "sub") }
  }

  it("a split index: the submodule's gitlink in the shared part (sharedindex.*)", async () => {
    const { cwd, sub } = withDeepSubmodule()
    git(["update-index", "--split-index"], cwd)
    expect(readdirSync(join(cwd, ".git")).some((name) => name.startsWith("sharedindex."))).toBe(true)
    expect(ran(cwd, "git status", sub)).toBe(true)
    expect(await decide(cwd, "git status")).toMatchObject(asks)
  })

  it("GIT_INDEX_FILE names the index whose gitlinks git follows", async () => {
    const { cwd, sub } = withDeepSubmodule()
    copyFileSync(join(cwd, ".git", "index"), join(cwd, "other.idx"))
    // Dropped from the index and from HEAD (a gitlink in HEAD alone makes git status look into it too).
    git(["rm", "-q", "--cached", "d1/d2/d3/sub", ".gitmodules"], cwd)
    git(["commit", "-qm", "drop"], cwd)
    expect(ran(cwd, "git status", sub)).toBe(false)
    expect(await decide(cwd, "git status")).toMatchObject(mine)
    for (const line of ["GIT_INDEX_FILE=other.idx git status", "env GIT_INDEX_FILE=other.idx git status"]) {
      expect(ran(cwd, line, sub)).toBe(true)
      expect(await decide(cwd, line)).toMatchObject(asks)
    }
  })
})

describe("the worktree a git line really works in", () => {
  it("GIT_WORK_TREE and --work-tree: the index's submodules are looked for there", async () => {
    // The submodule populated in another worktree folder only, its git folder beside it.
    const { cwd, sub } = withSubmoduleIn(repository, "x", fsmonitor)
    const there = join(sub, "..")
    expect(ran(cwd, "git status", join(there, "sub"))).toBe(false)
    expect(await decide(cwd, "git status")).toMatchObject(mine)
    for (const line of ["GIT_WORK_TREE=x git status", "git --work-tree=x status", "git --work-tree x status"]) {
      expect(ran(cwd, line, join(there, "sub"))).toBe(true)
      expect(await decide(cwd, line)).toMatchObject(asks)
    }
  })
})
