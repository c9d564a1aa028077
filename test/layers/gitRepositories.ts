/** Git repositories for the tests of what a repository's own git config makes git run (integration tests only: they run git). */
import { execFileSync } from "node:child_process"
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"

/** Runs git in `at` with an identity, unsigned commits and file:// submodules allowed. */
export const git = (args: ReadonlyArray<string>, at: string) =>
  execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false", "-c", "protocol.file.allow=always", ...args], { cwd: at, stdio: "pipe" })

/** Makes repositories in `base`: each with one commit, then `config` appended to its `.git/config` (in `dir`, else `base/r<n>`). */
export const repositoriesIn = (base: string) => {
  let made = 0
  return (config = "", dir = join(base, `r${made++}`)) => {
    mkdirSync(dir, { recursive: true })
    git(["init", "-q"], dir)
    writeFileSync(join(dir, "a.txt"), "a\n")
    git(["add", "."], dir)
    git(["commit", "-qm", "one"], dir)
    appendFileSync(join(dir, ".git", "config"), config)
    return dir
  }
}

/** A temporary folder for one test file (removed after it) and `repositoriesIn` it. */
export const scratch = (name: string) => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), `effect-agent-${name}-`)))
  afterAll(() => rmSync(base, { recursive: true, force: true }))
  return { base, repository: repositoriesIn(base) }
}

/** Runs `command` through /bin/sh in `cwd` as the shell tool would; whether the repository's `core.fsmonitor` (see `exactGitRule.fsmonitor`) ran in `where`. */
export const ran = (cwd: string, command: string, where: string) => {
  const marker = join(where, "fsmonitor-ran")
  // Left by the git that made the repository (a commit refreshes the index too).
  rmSync(marker, { force: true })
  try {
    execFileSync("/bin/sh", ["-c", command], { cwd, stdio: "pipe" })
  } catch {
    // git status fails where the fsmonitor hook fails; what counts is whether the hook ran.
  }
  const was = existsSync(marker)
  rmSync(marker, { force: true })
  return was
}

/**
 * For one test file: its scratch folder, a hostile repository (`config` appended) and plain folders (no repository)
 * each holding a copy of it at d1/d2/d3/ev, then what `furnish` puts in each.
 */
export const hostileBelow = (name: string, config: string, furnish: (cwd: string) => void = () => {}) => {
  const { base, repository } = scratch(name)
  const hostile = repository(config, join(base, "hostile"))
  let made = 0
  const folder = () => {
    const cwd = join(base, `c${made++}`)
    mkdirSync(cwd)
    cpSync(hostile, join(cwd, "d1", "d2", "d3", "ev"), { recursive: true })
    furnish(cwd)
    return cwd
  }
  return { base, repository, hostile, folder }
}

/**
 * A repository (from `repository`) with a submodule at d1/d2/d3/sub (deeper than the search) moved to
 * `there` (relative to the repository; "" leaves it in place), its git folder beside it with `config`
 * (a hostile `core.fsmonitor`) appended; an empty folder left in its place.
 */
export const withSubmoduleIn = (repository: () => string, there: string, config: string) => {
  const cwd = repository()
  git(["submodule", "add", "-q", repository(), "d1/d2/d3/sub"], cwd)
  git(["commit", "-qm", "sub"], cwd)
  const folder = join(cwd, there, "d1", "d2", "d3")
  mkdirSync(folder, { recursive: true })
  if (there !== "") {
    renameSync(join(cwd, "d1", "d2", "d3", "sub"), join(folder, "sub"))
    mkdirSync(join(cwd, "d1", "d2", "d3", "sub"))
  }
  renameSync(join(cwd, ".git", "modules", "d1", "d2", "d3", "sub"), join(folder, ".sg"))
  writeFileSync(join(folder, "sub", ".git"), "gitdir: ../.sg\n")
  git(["config", "-f", join(folder, ".sg", "config"), "--unset", "core.worktree"], cwd)
  appendFileSync(join(folder, ".sg", "config"), config)
  return { cwd, sub: join(folder, "sub") }
}
