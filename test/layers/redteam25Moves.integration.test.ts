/**
 * Red team round 25: where the line's `cd` sends its git when the shell computes the folder (`$d`, `${D:-x}`, `~+`,
 * `~-`, the folder stack, `$( )`), and the programs before a git or a `cd` that run it. Each line, run with bash and
 * git 2.39, runs the hostile `core.fsmonitor` of d1/d2/d3/ev; under the user's exact rule for it the check asks.
 * All held on main (d3707db) but zsh's `noglob`/`nocorrect` (zsh is not installed here: decisions only), which failed.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { decide, fsmonitor } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/** Plain folders (no repository) holding the hostile repository at d1/d2/d3/ev. */
const { folder } = hostileBelow("redteam25m", fsmonitor)
const fires = (line: string) => {
  const cwd = folder()
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // git status fails where the hook fails.
  }
  return existsSync(join(cwd, "d1", "d2", "d3", "ev", "fsmonitor-ran"))
}
/** Asked, or refused (`cd ~+/…` and `~-` are a home-folder hazard, denied). */
const asks = async (line: string, run = true) => {
  if (run) expect(fires(line), `${line} runs the hostile fsmonitor`).toBe(true)
  expect((await decide(folder(), line)).decision, line).not.toBe("allow")
}

describe("a cd whose folder the shell computes (held, pinned)", () => {
  it("a variable, a default, ~+ and ~-, the folder stack, $( ), a loop, the positional parameters", async () => {
    const lines = [
      "d=d1/d2/d3/ev; cd $d; git status",
      `cd "\${D:-d1/d2/d3/ev}"; git status`,
      "cd ~+/d1/d2/d3/ev; git status",
      "cd d1/d2/d3/ev; cd ..; cd ~-; git status",
      "pushd d1/d2/d3/ev; pushd ..; pushd +1; git status",
      "pushd d1/d2/d3/ev; pushd ..; pushd; git status",
      "pushd d1/d2/d3/ev; pushd /; popd; git status",
      `cd d1/d2/d3/ev; cd "$OLDPWD"; cd -; git status`,
      `D=$(cd d1/d2/d3/ev && pwd); git -C "$D" status`,
      `cd "$(echo d1/d2/d3/ev)"; git status`,
      "for d in d1/d2/d3/ev; do cd $d; done; git status",
      `set -- d1/d2/d3/ev; cd "$1"; git status`,
      "cd -P d1/d2/d3/ev; git status",
      "cd -e d1/d2/d3/ev; git status",
      "nohup git -C d1/d2/d3/ev status",
      "exec git -C d1/d2/d3/ev status"
    ]
    for (const line of lines) await asks(line)
  })
})

describe("zsh's precommand modifiers (CommandPaths.shellRuns, CommandRisk.runsOtherPrograms)", () => {
  it("noglob and nocorrect before a git or a cd, in a zsh -c script", async () => {
    for (const line of ["zsh -c 'noglob git -C d1/d2/d3/ev status'", "zsh -c 'nocorrect cd d1/d2/d3/ev; git status'", "zsh -c 'noglob cd d1/d2/d3/ev && git status'"]) {
      await asks(line, false)
    }
  })
})
