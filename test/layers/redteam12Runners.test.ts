/**
 * Round 12's runners. Holes: a brace expansion in a line a rule sends through a shell
 * (`{git,push} origin | tee log.txt` runs `git push origin`, `{sh,-c,'…'}` a shell) was plain words
 * to a rule's wildcard, so `* | tee log.txt` allowed it without a question and a deny of `git push*`
 * did not see it; and git's fallbacks for its editor and pager (`EDITOR='…' git commit` runs the
 * editor) were not read as the line's scripts, so a deny rule did not see what they run. What held
 * (runners and spellings an earlier round closed) is checked beside them.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { anything, shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-redteam12-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)

const noPush: PermissionPolicy.Rule = { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }
const teeAnything: PermissionPolicy.Rule = { name: "tee", tool: "shell", command: "* | tee log.txt", decision: "allow" }

describe("brace expansion through a shell", () => {
  for (const command of ["{git,push} origin | tee log.txt", "{sh,-c,'git push'} | tee log.txt", "git {push,x} | tee log.txt", "echo {a..c} | tee log.txt"]) {
    it(`${command}: a wildcard never stands for it`, async () => {
      expect(await decide("default", command, [teeAnything])).not.toMatchObject({ decision: "allow" })
      expect(await decide("bypass", command, [noPush, teeAnything])).toMatchObject({ decision: "deny" })
    })
  }

  it("quoted braces, and braces bash leaves alone, are words", async () => {
    for (const command of ["echo '{a,b}' | tee log.txt", "echo {} | tee log.txt", "echo {a} | tee log.txt", "echo \"{x,y}\" | tee log.txt"]) {
      expect(await decide("default", command, [teeAnything])).toMatchObject({ decision: "allow", policy: "tee" })
    }
  })
})

describe("git's editor and pager fallbacks", () => {
  for (const command of ["EDITOR='git push' git commit", "VISUAL='git push origin' git commit", "PAGER='git push' git log", "SSH_ASKPASS='git push' git fetch"]) {
    it(`${command} is denied by a deny of git push*`, async () => {
      expect(await decide("bypass", command, [noPush, anything])).toMatchObject({ decision: "deny", policy: "no-push" })
    })
  }
  it("what they name otherwise is still allowed in bypass", async () => {
    expect(await decide("bypass", "EDITOR=true git commit", [noPush, anything])).toMatchObject({ decision: "allow" })
  })
})

describe("what held", () => {
  const runners = [
    "xe git push", "xe -s 'git push'", "rush 'git push'", "sem git push", "sem --fg 'git push'", "tmux -f f new 'git push'",
    "parallel --pipe git push", "parallel --pipe 'git push'", "git -c alias.x='!git push' x", "git -c core.sshCommand='git push' fetch",
    "git -c core.pager='git push' log", "GIT_SSH_COMMAND='git push' git fetch", "env -S 'git push'", "env -S'git push'",
    "env --split-string='git push'", "find . -execdir git push \\;", "find . -okdir git push \\;", "sed -e '1e git push' f",
    "awk 'BEGIN{system(\"git push\")}'", "perl -e 'system(\"git push\")'", "GIT_EDITOR='git push' git commit"
  ]
  for (const command of runners) {
    it(`${command}: asks under shell:*, denied by a deny of git push* in bypass`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      expect(await decide("bypass", command, [noPush, anything])).toMatchObject({ decision: "deny" })
    })
  }
  for (const command of [
    "tmux source-file f", "tmux -f f", "ssh -F cfg host", "find . -fprintf out x", "sed 'w /tmp/x' f", "make -f /x", "npm --prefix /x test",
    "LD_PRELOAD=/x ls", "BASH_ENV=/x ls", "ENV=/x ls"
  ]) {
    it(`${command}: asks under shell:*`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
    })
  }
  it("here-strings and substitutions are shell syntax no wildcard stands for", async () => {
    for (const command of ["sh <<< 'git push'", "g${IFS}it push", "git${IFS}push"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "deny", policy: "command-hazards" })
    }
  })
})
