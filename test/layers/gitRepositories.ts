/** Git repositories for the tests of what a repository's own git config makes git run (integration tests only: they run git). */
import { execFileSync } from "node:child_process"
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs"
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
