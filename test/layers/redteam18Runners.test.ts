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
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as CommandRisk from "../../src/layers/workspace/CommandRisk.js"
import { anything, shellDecisions } from "./shellDecisions.js"

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
