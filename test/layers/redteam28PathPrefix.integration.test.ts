/**
 * Review 53 of red team round 28: `$PATH` in `PATH=$PATH:/usr/bin` read as the value bash gives it. Bash assigns a
 * command's prefix words left to right (`PATH=bin PATH=$PATH:/usr/bin git status`: `$PATH` is `bin`), and an inner script
 * (`eval '…'`, `bash -c '…'`) gets the line's PATH, not the environment's. Each line asked below ran the repository's
 * `bin/git` under bash and was allowed by an exact rule for it on main (27240b4: the cases failed before the fix).
 */
import { describe, expect, it } from "@effect/vitest"
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { execFileSync } from "node:child_process"
import { decide } from "./exactGitRule.js"
import { scratch } from "./gitRepositories.js"

const { base, repository } = scratch("redteam28path")
let made = 0
/** A repository whose `bin/git` leaves `ran` in it. */
const planted = () => {
  const cwd = repository("", join(base, `r${made++}`))
  mkdirSync(join(cwd, "bin"))
  writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
  chmodSync(join(cwd, "bin", "git"), 0o755)
  return cwd
}
/** Whether running `line` with bash in `cwd` ran the repository's `bin/git`. */
const runs = (cwd: string, line: string) => {
  rmSync(join(cwd, "ran"), { force: true })
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // What counts is whether the repository's file ran.
  }
  return existsSync(join(cwd, "ran"))
}

describe("$PATH as bash reads it (CommandPaths.knownPathWord)", () => {
  it("a command's prefix assignments, left to right, and an inner script's line PATH", async () => {
    for (const line of [
      "PATH=bin PATH=$PATH:/usr/bin git status",
      "PATH=bin PATH=$PATH:/usr/bin; git status",
      "PATH=bin PATH=/opt/x:$PATH:/usr/bin git status",
      "PATH=bin eval 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; eval 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin bash -c 'PATH=$PATH:/usr/bin git status'",
      "env PATH=bin:/bin bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; bash -c 'git status' PATH=/usr/bin",
      "PATH=bin:/bin; bash -c 'git status'",
      "PATH=bin:/bin; eval 'git status'",
      "PATH=bin:/bin; eval 'PATH=$PATH git status'",
      "PATH=bin PATH=$(pwd)/x:$PATH:/usr/bin git status",
      "PATH=bin:/bin; eval 'eval \"PATH=\\$PATH:/usr/bin git status\"'"
    ]) {
      expect(runs(planted(), line), `${line} runs bin/git`).toBe(true)
      expect.soft((await decide(planted(), line)).decision, line).toBe("ask")
    }
  })

  it("the environment's PATH where the line set none, or after it (round 28's allows hold)", async () => {
    for (const line of [
      "PATH=$PATH:/opt/x git status",
      "PATH=$PATH:/opt/x PATH=$PATH:/opt/y git status",
      "eval 'PATH=$PATH:/usr/bin git status'",
      "bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=/opt/x eval 'PATH=$PATH:/usr/bin git status'",
      "env PATH=/usr/bin bash -c 'PATH=$PATH:/opt/x git status'"
    ]) {
      expect(runs(planted(), line), `${line} runs bin/git`).toBe(false)
      expect((await decide(planted(), line)).decision, line).toBe("allow")
    }
  })
})
