/** Git repositories for the tests of what a repository's own git config makes git run (integration tests only: they run git). */
import { execFileSync } from "node:child_process"
import { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

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
