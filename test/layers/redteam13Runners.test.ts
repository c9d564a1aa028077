/**
 * Round 13's runners: configuration a line hands a program that then runs another one. Hole: npm's
 * options that name a configuration file (`--userconfig`, `--globalconfig`: it can set
 * `script-shell`, `node-options`, `git`, `onload-script`) or a program (`--script-shell`,
 * `--node-options`, `--git`, `--shell`, `--editor`, `--browser`, `--init-module`, …), and yarn's
 * `--use-yarnrc` (its `yarn-path` runs a script), were options like any: `--allow 'shell:*'` let
 * `npm --userconfig ./x install` run whatever `./x` names without a question, and a deny of `git push*`
 * in `bypass` did not see it. What held (the other configuration files of the round's list) is
 * checked beside them.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { anything, shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-redteam13-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)

describe("package managers' options that name a configuration file or a program", () => {
  for (
    const command of [
      "npm --userconfig f install", "npm install --userconfig=f", "npm --globalconfig f test", "npm test --script-shell=./x",
      "npm --script-shell ./x run build", "npm --node-options=--require=./x test", "npm --git=./x install", "npm --shell ./x explore y",
      "npm --editor ./x edit y", "npm --browser ./x docs", "npm --onload-script ./x ls", "npm --init-module ./x.js init",
      "npm --userc f install", "pnpm --script-shell ./x test", "pnpm --node-options=--require=./x test", "yarn --use-yarnrc ./x install"
    ]
  ) {
    it(`${command}: asks under shell:*`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
    })
  }

  it("the package managers' everyday options are still covered by shell:*", async () => {
    for (const command of ["npm install --global x", "npm test --silent", "npm --prefix . test", "npm run build -- --watch", "pnpm -C pkg test", "yarn --cwd pkg build"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "allow", policy: "anything" })
    }
  })
})

describe("what held", () => {
  for (
    const command of [
      "tmux source-file f", "tmux -f f new", "ssh -F f host", "git -c include.path=f status", "git config include.path f", "sh script.sh",
      "bash script.sh", ". ./script.sh", "source script.sh", "git --config-env=core.pager=X log"
    ]
  ) {
    it(`${command}: asks under shell:*`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
    })
  }
  it("a hard link or a copy of a file outside the workspace asks whatever a rule says", async () => {
    for (const command of ["ln ~/.ssh/id_rsa x", "ln /etc/passwd x", "cp ~/.ssh/id_rsa x", "ln -P ../../outside x"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    }
  })
})
