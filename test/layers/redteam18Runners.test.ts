/**
 * Round 18: what trusts a repository's code to run later, outside the sandbox. `direnv allow`
 * marks the clone's `.envrc` trusted — the user's shell hook runs it, with all their rights, at the
 * next `cd` into the folder; `mise trust` turns on a `mise.toml`'s `[env] _.source` scripts and
 * hooks for every later prompt; `pre-commit install`, `lefthook install` and `husky` install git
 * hooks that run the repository's scripts at the user's next commit. Each names no path, so no path
 * check asked, and each was an ordinary write: `--allow 'shell:*'` ran them without a question, and
 * "always" on `direnv status` (`shell:direnv:write`) covered `direnv allow`. (In the sandbox the
 * write fails — the home folder and `.git/hooks` are read-only there — but not where no sandbox can
 * be built.) Failed before: every line of the first list was allowed.
 * What held — direnv's and mise's other subcommands, `pre-commit run` (the repository's hooks, as
 * `make` runs its Makefile: the rule's choice) — is kept beside them.
 *
 * A program named in another case: on a case-insensitive file system (macOS's by default, where no
 * sandbox is built; Windows') `Bash -c …` runs bash and `GIT push` runs git push. The classifier and
 * the hazard check read names as written, so `Bash -c id`, `Env X=1 id`, `GIT -c alias.x='!id' x`,
 * `Npx x`, `Find . -exec …` were ordinary writes that `--allow 'shell:*'` allowed, `RM -rf x` had no
 * recursive-delete hazard, and `bypass` ran `GIT push` past a deny of `git push*`. Failed before:
 * every line of the case list was allowed, and the bypass line too.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as CommandRisk from "../../src/layers/workspace/CommandRisk.js"
import { anything, shellDecisions } from "./shellDecisions.js"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-redteam18-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)

describe("a command that trusts the repository's code to run later asks", () => {
  for (
    const command of [
      "direnv allow", "direnv allow .", "direnv permit", "direnv grant .", "direnv edit .", "mise trust", "mise trust --all", "rtx trust",
      "pre-commit install", "pre-commit install --hook-type post-checkout", "pre-commit install-hooks", "pre-commit init-templatedir ~/.t",
      "lefthook install", "husky", "husky install", "simple-git-hooks"
    ]
  ) {
    it(`${command}: asks under shell:*, remembered for its exact line only`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      expect(CommandRisk.classify(command.split(" ")).general).toBe(false)
    })
  }
  it("their other subcommands are still covered", async () => {
    for (const command of ["direnv status", "direnv version", "mise ls", "mise current", "pre-commit run --all-files", "lefthook version"]) {
      expect(await decide("default", command, [anything]), command).toMatchObject({ decision: "allow" })
    }
  })
})

describe("a program named in another case is read as that program", () => {
  for (
    const command of [
      "Bash -c id", "BASH -c id", "/bin/Bash -c id", "Env X=1 id", "Python3 -c 1", "Node -e 1", "Xargs id", "Npx cowsay", "NPM exec cowsay",
      "GIT -c alias.x=!id x", "Git -c core.pager=id log", "Find . -exec id ;", "Sed -n 1e_id x", "Tar --to-command=sh -xf x", "RM -rf x", "Sudo id",
      "Make --eval x", "Direnv allow"
    ]
  ) {
    it(`${command}: not allowed under shell:* (asked, or denied for its hazard)`, async () => {
      expect((await decide("default", command, [anything])).decision).not.toBe("allow")
    })
  }
  it("a deny or ask rule reads the line in any case, in bypass too", async () => {
    const denyPush: PermissionPolicy.Rule = { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }
    const askCurl: PermissionPolicy.Rule = { name: "curl", tool: "shell", command: "curl *", decision: "ask" }
    for (const command of ["GIT push", "Git push origin main", "/usr/bin/GIT push", "bash -c 'GIT PUSH'", "nice Git push"]) {
      expect(await decide("bypass", command, [denyPush]), command).toMatchObject({ decision: "deny" })
    }
    expect(await decide("bypass", "CURL https://example.com", [askCurl])).toMatchObject({ decision: "ask" })
  })
  it("the folded reading keeps each option's case: -C names a folder, -c does not", async () => {
    // Folding the whole line read `make -C deploy test` as `make -c deploy test`, whose `deploy` is a
    // target, so a deny of `make deploy*` refused it (denyThroughGlobalOptions failed).
    const denyDeploy: PermissionPolicy.Rule = { name: "deploys", tool: "shell", command: "make deploy*", decision: "deny" }
    const denyPush: PermissionPolicy.Rule = { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }
    for (const command of ["make -C deploy test", "MAKE -C deploy test", "Make -C Deploy test"]) {
      expect(await decide("default", command, [denyDeploy, anything]), command).toMatchObject({ decision: "allow" })
    }
    for (const command of ["MAKE -C x deploy", "GIT -C x push", "Git -C X Push"]) {
      expect(await decide("bypass", command, [denyDeploy, denyPush]), command).toMatchObject({ decision: "deny" })
    }
  })
  it("a name in another case that is no known program, and the known ones in lower case, are as before", async () => {
    for (const command of ["Makefile-gen", "MyTool --flag", "ls", "git status", "make", "cat README.md"]) {
      expect(await decide("default", command, [anything]), command).toMatchObject({ decision: "allow" })
    }
    // A read in another case is at most a write: never a read "always" on cat covers.
    expect(CommandRisk.classify(["Cat", "x"])).toEqual({ risk: "write", general: false })
    expect(CommandRisk.classify(["Make"])).toEqual({ risk: "write", general: true })
  })
})
