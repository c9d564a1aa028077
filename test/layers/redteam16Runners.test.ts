/**
 * Round 16's options that run commands, one level past round 13's. Holes: GNU `split --filter=CMD`
 * runs CMD through a shell for each piece, and split was no program that runs another: `--allow
 * 'shell:*'` (or `split *`) ran `split --filter='sh -c …' x` without a question, and in `bypass` a
 * deny of `git push*` did not read `split --filter='git push' -n 1 x`. pnpm takes any setting as
 * `--config.<key>=…` (`--config.script-shell=./x`, `--config.node-options=--require=./x`), which
 * round 13's list of npm's program-naming settings did not read, and npm's `--node-gyp` names the
 * program a native build runs. What held under the rules users write (`git *`, `rg *`, `find *`,
 * `sed *`, `awk *`, `tar *`, `sort *`, `less *`, `man *`, `xargs *`, `env *`) is checked beside them.
 * Failed before: every command of the first two lists was allowed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { anything, shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-redteam16-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)
const allow = (command: string): PermissionPolicy.Rule => ({ name: command, tool: "shell", command, decision: "allow" })
const denyPush: PermissionPolicy.Rule = { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }

describe("split --filter runs a command", () => {
  for (const command of ["split --filter='sh -c id' x", "split --filter=./x x", "split -n 2 --filter 'sh -c id' x", "split --fil=./x x"]) {
    it(`${command}: asks under shell:* and split *`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      expect(await decide("default", command, [allow("split *")])).toMatchObject({ decision: "ask" })
    })
  }
  it("a deny of git push* reads its command line, in bypass too", async () => {
    expect(await decide("bypass", "split --filter='git push' -n 1 x", [denyPush])).toMatchObject({ decision: "deny" })
  })
  it("split without --filter is still covered", async () => {
    expect(await decide("default", "split -n 2 x part-", [anything])).toMatchObject({ decision: "allow" })
  })
})

describe("pnpm's --config.<key> and npm's --node-gyp name a program", () => {
  for (
    const command of [
      "pnpm --config.script-shell=./x test", "pnpm test --config.node-options=--require=./x", "pnpm --config.git=./x install",
      "pnpm --config.userconfig=./x install", "npm install --node-gyp ./x", "npm install --node-gyp=./x"
    ]
  ) {
    it(`${command}: asks under shell:*`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
    })
  }
  it("a setting that names no program is still covered", async () => {
    for (const command of ["pnpm --config.strict-peer-dependencies=false install", "pnpm --config.registry=https://r.example test", "npm install --no-audit"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "allow" })
    }
  })
})

describe("what held (redteam16 probes, kept)", () => {
  const held: ReadonlyArray<readonly [string, string]> = [
    ["git *", "git -c core.pager=sh log"], ["git *", "git --config-env=core.pager=X log"], ["git *", "git log --output=x.txt"],
    ["git *", "git grep --open-files-in-pager=sh x"], ["git *", "git grep -Osh x"], ["git *", "git difftool -x sh"], ["git *", "git rebase --exec sh HEAD~1"],
    ["git *", "git bisect run sh"], ["git *", "git submodule foreach sh"], ["git *", "git diff --ext-diff"], ["git *", "git fetch --upload-pack=sh x"],
    ["git *", "git fetch ext::sh"], ["git *", "git init --template=./t x"], ["git *", "git clone -c core.fsmonitor=x a b"], ["git *", "GIT_EXTERNAL_DIFF=./x git diff"],
    ["git log *", "git log --output=.git/hooks/pre-commit"], ["rg *", "rg --pre sh x"], ["rg *", "rg --pre=./x y"],
    ["find *", "find . -exec sh {} +"], ["find *", "find . -fprint x"], ["find *", "find . -execdir sh {} +"], ["find *", "find . -delete"],
    ["sed *", "sed -i 1e\\ id x"], ["sed *", "sed s/a/id/e x"], ["sed *", "sed w/tmp/x x"], ["sed *", "sed r/etc/passwd x"], ["sed *", "sed -f script x"],
    ["awk *", "awk 'BEGIN{system(\"id\")}'"], ["awk *", "awk '{print | \"sh\"}' f"], ["awk *", "awk 'BEGIN{while((getline l < \"/etc/passwd\")>0) print l}'"], ["awk *", "awk -f x.awk"],
    ["tar *", "tar -xf x.tar --to-command=sh"], ["tar *", "tar --checkpoint-action=exec=sh -cf x.tar ."], ["tar *", "tar -cf x.tar -I sh ."],
    ["sort *", "sort --compress-program=sh x"], ["less *", "less x"], ["man *", "man -P sh x"], ["xargs *", "xargs sh"], ["env *", "env -S sh"],
    ["diff3 *", "diff3 --diff-program=./x a b c"], ["sdiff *", "sdiff --diff-program=./x a b"], ["make *", "make SHELL=./x"], ["make *", "make --eval=x"],
    ["python -m pytest *", "python -m pytest -p evil"], ["npm test *", "npm test --script-shell=./x"], ["go test *", "go test -exec sh"], ["cargo test *", "cargo test --config x"]
  ]
  for (const [rule, command] of held) {
    it(`${command}: asks under ${rule}`, async () => {
      expect(await decide("default", command, [allow(rule)])).toMatchObject({ decision: "ask" })
    })
  }
})
