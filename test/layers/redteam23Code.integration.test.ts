/**
 * Red team round 23: a git after a command whose effect the check cannot read — program text the line
 * runs, a script sourced into the line's own shell, a function or `eval` that moves it.
 *
 * Decided (docs/security.md): program text the line itself holds (`python3 -c`, `node -e`, `perl -e`,
 * `ruby -e`, an awk program that runs or writes, an interpreter reading its program from the line's
 * here-string) may move or write what the git then finds, as `mv` does, and what it touches is read
 * only when it runs: it fills cwd, and a git there asks. A move or copy run by xargs, parallel or
 * find fills cwd too. A script sourced into the line's shell (`. ./s.sh`, `source s.sh`), an `eval`
 * or a function that moves it may `cd` or set `GIT_DIR`: the git's folder is known only when it runs,
 * as after `cd -`. Before, an exact rule for each line below ran the moved clone's `core.fsmonitor`
 * (the cases failed). Held, your choice: a program running a file's code as a child (`bash s.sh`,
 * `make`, `npm test`) — the rule for it already runs whatever that file says, which could run what
 * git's config names itself; a git after it is read as any is, so `npm test && git status` stays quiet.
 */
import { describe, expect, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { asks, decide, fsmonitor, mine } from "./exactGitRule.js"
import { ran, scratch } from "./gitRepositories.js"

const { repository } = scratch("redteam23c")
const clone = "d1/d2/d3/clone"

/** A repository holding a harmless one at y, a hostile clone past the search, and scripts that swap or move. */
const workspace = () => {
  const cwd = repository()
  repository("", join(cwd, "y"))
  repository(fsmonitor, join(cwd, clone))
  writeFileSync(join(cwd, "s.sh"), `mv y y.old; mv ${clone} y\n`)
  writeFileSync(join(cwd, "cd.sh"), `cd ${clone}\n`)
  writeFileSync(join(cwd, "gd.sh"), `export GIT_DIR=${clone}/.git GIT_WORK_TREE=${clone}\n`)
  writeFileSync(join(cwd, "Makefile"), `all:\n\tmv y y.old; mv ${clone} y\n`)
  writeFileSync(join(cwd, "package.json"), JSON.stringify({ scripts: { test: `mv y y.old; mv ${clone} y` } }))
  return cwd
}

describe("a git after what the check cannot read", () => {
  it("program text the line runs, and a move xargs runs: asks", async () => {
    const lines = [
      `python3 -c 'import os; os.rename("y","y.old"); os.rename("${clone}","y")' && git -C y status`,
      `node -e 'const fs=require("fs"); fs.renameSync("y","y.old"); fs.renameSync("${clone}","y")' && git -C y status`,
      `perl -e 'rename "y","y.old"; rename "${clone}","y"' && git -C y status`,
      `awk 'BEGIN{system("mv y y.old; mv ${clone} y")}' && git -C y status`,
      `python3 - <<'EOF'\nimport os; os.rename("y","y.old"); os.rename("${clone}","y")\nEOF\ngit -C y status`,
      `printf y | xargs -I{} mv {} {}.old; printf y | xargs -I{} mv ${clone} {}; git -C y status`
    ]
    for (const line of lines) {
      const cwd = workspace()
      expect(await decide(cwd, line), line).toMatchObject(asks)
      expect(ran(cwd, line, join(cwd, "y")), line).toBe(true)
    }
  })

  it("a script sourced into the line's shell, an eval or a function that moves it: asks", async () => {
    const lines = [`. ./cd.sh && git status`, `. ./gd.sh; git status`, `eval "cd ${clone}"; git status`, `f(){ cd ${clone}; }; f; git status`, `{ cd ${clone}; }; git status`]
    for (const line of lines) {
      const cwd = workspace()
      expect(await decide(cwd, line), line).toMatchObject(asks)
      expect(ran(cwd, line, join(cwd, clone)), line).toBe(true)
    }
    // bash's own spellings (/bin/sh may have no `source`).
    for (const line of ["source cd.sh; git status", "builtin source gd.sh && git -C y status", "eval 'export GIT_DIR=x'; git status"]) {
      expect(await decide(workspace(), line), line).toMatchObject(asks)
    }
  })

  it("held: a file's code run as a child is the rule's choice; program text that only reads stays quiet", async () => {
    for (const line of ["npm test && git -C y status", "make && git -C y status", "bash s.sh && git -C y status", "awk '{print $1}' y/a.txt && git -C y status", "python3 s.py && git status"]) {
      expect(await decide(workspace(), line), line).toMatchObject(mine)
    }
  })
})
