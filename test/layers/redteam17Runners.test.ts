/**
 * Round 17's npm settings that choose a program. npm's option parser (nopt) takes a long option
 * after one dash as well as two: `npm -script-shell ./x test` runs `./x -c <script>` as the
 * `--script-shell` form does, and round 13's list read only `--`. So `--allow 'shell:*'` ran it
 * without a question, and `bypass` ran `npm -script-shell='git push' test` past a deny of
 * `git push*`. `npm config set script-shell ./x` (npm's `set`, pnpm's, yarn's `config set
 * yarnPath`) runs nothing itself but writes the setting every later `npm test` reads: in the user's
 * own `~/.npmrc` where no sandbox keeps it read-only. Failed before: every command of the first
 * two lists was allowed under `shell:*`, and the bypass line ran.
 * What held (the `--` forms, the `NPM_CONFIG_*` variables, `--userconfig`, `--globalconfig`,
 * pnpm's `--config.`, yarn's `--use-yarnrc`, bun's `-c`, under `npm test` and `shell:*`) is kept beside them.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { anything, shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-redteam17-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)
const allow = (command: string): PermissionPolicy.Rule => ({ name: command, tool: "shell", command, decision: "allow" })
const denyPush: PermissionPolicy.Rule = { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }

describe("npm's long options after one dash name a program too", () => {
  for (
    const command of [
      "npm -script-shell ./x test", "npm -globalconfig ./x test", "npm -shell ./x explore x", "npm -userconfig ./x test",
      "pnpm -config.script-shell ./x test"
    ]
  ) {
    it(`${command}: asks under shell:* and npm test`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      expect(await decide("default", command, [allow("npm test")])).toMatchObject({ decision: "ask" })
    })
  }
  it("a deny of git push* reads -script-shell's command line, in bypass too", async () => {
    expect(await decide("bypass", "npm -script-shell='git push' test", [denyPush])).toMatchObject({ decision: "deny" })
  })
  it("one-letter options and settings that name no program are still covered", async () => {
    for (const command of ["npm -g ls", "npm -ws test", "npm -s test", "npm -y install", "npm -global ls"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "allow" })
    }
  })
})

describe("config set of a setting that names a program", () => {
  for (
    const command of [
      "npm config set script-shell ./x", "npm config set script-shell=./x", "npm set script-shell ./x", "npm c set node-options=--require=./x",
      "npm config set --location=project script-shell ./x", "pnpm config set script-shell ./x", "yarn config set yarnPath ./x"
    ]
  ) {
    it(`${command}: asks under shell:*`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
    })
  }
  it("other settings are still covered", async () => {
    for (const command of ["npm config set fund false", "npm config get script-shell", "npm config list", "yarn config set enableTelemetry 0"]) {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "allow" })
    }
  })
})

describe("what held (redteam17 probes, kept)", () => {
  for (
    const command of [
      "npm --script-shell=./x test", "npm test --script-shell ./x", "npm --scr=./x test", "npm -scr=./x test", "npm test -- --script-shell=./x",
      "npm --userconfig=./x test", "npm --globalconfig=./x test", "NPM_CONFIG_SCRIPT_SHELL=./x npm test", "npm_config_userconfig=./x npm test",
      "NPM_CONFIG_NODE_OPTIONS=--require=./x npm test", "NODE_OPTIONS=--require=./x npm test", "pnpm --config.script-shell=./x test",
      "yarn --use-yarnrc ./x test", "YARN_RC_FILENAME=x yarn test", "YARN_YARN_PATH=./x yarn test", "bun -c ./x test", "bun --config=./x test",
      "npm --node-options=--require=./x test", "npm --prefix=. --script-shell=./x run test"
    ]
  ) {
    it(`${command}: asks under shell:* and npm test`, async () => {
      expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      expect(await decide("default", command, [allow("npm test")])).toMatchObject({ decision: "ask" })
    })
  }
})
