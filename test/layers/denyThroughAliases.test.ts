/**
 * A deny or ask rule naming a subcommand holds for its other names, and for what a git line
 * configures itself to run. `--deny 'shell:npm run deploy*'` beside `--allow 'shell:*'` (and in
 * `bypass`) let `npm rum deploy`, `npm urn deploy`, `npm run-script deploy` run (npm's own alias
 * table, `lib/utils/cmd-list.js`); `npm exec*` let `npm x` and `npx` through, `npm install*` `npm i`
 * and `npm add`, `npm uninstall*` `npm rm`; `pnpm run build*` let `pnpm build` (a script run without
 * `run`) through. `--deny 'shell:git push*'` let `git -c alias.x=push x`, a `!` alias, a pager set
 * with `-c` and `--config-env`/`GIT_CONFIG_*` run. An allow rule is not widened.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-aliases-")))
mkdirSync(join(cwd, "x"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (command: string) => Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
const decide = async (mode: PermissionPolicy.Mode, command: string, rules: ReadonlyArray<PermissionPolicy.Rule>) =>
  PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd, call: await prepare(command), remembered: [] })

const anything: PermissionPolicy.Rule = { name: "anything", tool: "shell", command: "*", decision: "allow" }

const fenced: ReadonlyArray<readonly [pattern: string, commands: ReadonlyArray<string>]> = [
  ["npm run deploy*", ["npm rum deploy", "npm urn deploy", "npm run-script deploy", "npm run-s deploy", "npm runScript deploy", "npm ur deploy", "npm --prefix x rum deploy"]],
  ["npm exec*", ["npm x cowsay", "npx cowsay", "env npx cowsay", "/usr/bin/npx cowsay"]],
  ["npm x*", ["npm exec cowsay", "npx cowsay"]],
  ["npm install*", ["npm i x", "npm add x", "npm isntall x", "npm in x", "npm instal x"]],
  ["npm uninstall*", ["npm rm x", "npm r x", "npm un x", "npm remove x", "npm unlink x"]],
  ["npm run test*", ["npm test", "npm t", "npm tst"]],
  ["npm test*", ["npm run test", "npm run-script test", "npm t"]],
  ["pnpm run build*", ["pnpm build", "pnpm run-script build", "pnpm -C x build"]],
  ["pnpm build*", ["pnpm run build"]],
  ["pnpm dlx*", ["pnpx cowsay"]],
  ["pnpm remove*", ["pnpm rm x", "pnpm uninstall x", "pnpm un x"]],
  ["yarn run build*", ["yarn build", "yarn --cwd x build"]],
  ["bun run dev*", ["bun dev"]],
  ["bun x*", ["bunx cowsay"]],
  // A rule naming one way to run a package by name holds for the others (only `npx` → `npm exec` was read before).
  ["npx*", ["npm exec foo", "npm x foo", "npm exe foo", "pnpm dlx foo", "pnpx foo", "bunx foo", "bun x foo", "yarn dlx foo", "env npm exec foo"]],
  ["npx foo*", ["npm exec foo", "npm exec -- foo", "npm x --yes foo", "npm --prefix x exec foo", "pnpm dlx foo", "pnpx foo", "bunx foo", "yarn dlx foo", "/usr/bin/bunx foo"]],
  ["pnpm dlx foo*", ["npx foo", "npm exec foo", "bunx foo"]],
  ["bunx*", ["npm exec foo", "npx foo"]],
  ["git push*", [
    "git -c alias.x=push x origin main", "git -c Alias.X=push x", "git -c alias.x=y -c alias.y=push x", "git -c alias.x='!git push' x",
    "git -c alias.x='!sh -c \"git push\"' x", "git --config-env=alias.x=V x", "git --config-env alias.x=V x",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=push git x",
    "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=push git x", "GIT_CONFIG_PARAMETERS=x git x",
    "git -c include.path=x/c x", "git -c includeIf.onbranch:main.path=x/c x", "git -c core.pager='git push' log",
    "GIT_PAGER='git push' git log", "git --exec-path=x x", "GIT_EXEC_PATH=x git x"
  ]],
  // What a git alias or setting runs is matched whatever program the rule names; so is the line a wrapper takes as an option's value.
  ["npm publish*", [
    "git -c alias.x='!npm publish' x", "git -c core.editor='npm publish' commit", "GIT_SSH_COMMAND='npm publish' git fetch",
    "env -S 'npm publish'", "env -S'npm publish'", "env --split-string='npm publish'", "flock /tmp/l -c 'npm publish'",
    "script -qc 'npm publish' /dev/null", "script -c 'npm publish' /dev/null", "sg grp -c 'npm publish'", "nix-shell --run 'npm publish'",
    "entr -s 'npm publish'"
  ]]
]

describe("a deny or ask rule holds for a subcommand's other names", () => {
  for (const [pattern, commands] of fenced) {
    for (const command of commands) {
      it(`${pattern}: ${JSON.stringify(command)} is denied in bypass and asked in default`, async () => {
        const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "deny" }
        const ask: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "ask" }
        expect(await decide("bypass", command, [deny, anything])).toMatchObject({ decision: "deny", policy: "fenced" })
        expect(await decide("default", command, [ask, anything])).toMatchObject({ decision: "ask", policy: "fenced" })
      })
    }
  }

  it("a rule naming a package runner does not fence another package or subcommand", async () => {
    const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: "npx foo*", decision: "deny" }
    for (const command of ["npm exec bar", "pnpm dlx bar", "bunx bar", "npm install foo", "yarn add foo"]) {
      expect(await decide("bypass", command, [deny, anything]), command).toMatchObject({ decision: "allow" })
    }
  })

  it("a setting the shell makes is not what the line shows: in bypass, a deny rule naming git holds", async () => {
    const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: "git push*", decision: "deny" }
    for (const command of ["git -c \"$A\" x; true", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=$V git x; true"]) {
      expect(await decide("bypass", command, [deny, anything]), command).toMatchObject({ decision: "deny", policy: "fenced" })
    }
  })

  it("other commands, scripts and builtins are not fenced", async () => {
    const open: ReadonlyArray<readonly [string, string]> = [
      ["npm publish*", "npm p"], ["npm publish*", "npm pack"], ["npm run deploy*", "npm run build"], ["npm run deploy*", "npm ci"],
      ["npm run deploy*", "npm deploy"], ["npm install*", "npm it"], ["npm install*", "npm ci"], ["npm run*", "npm install"],
      ["npm uninstall*", "npm unpublish"], ["pnpm run*", "pnpm install"], ["pnpm run*", "pnpm deploy x"], ["pnpm dlx*", "pnpm exec x"],
      ["bun run build*", "bun build"], ["git push*", "git -c color.ui=always log"], ["git push*", "git -c alias.x=push log"],
      ["git push*", "git -c user.name=a status"]
    ]
    for (const [pattern, command] of open) {
      const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "deny" }
      expect((await decide("bypass", command, [deny, anything])).decision, `${pattern}: ${command}`).toBe("allow")
    }
  })

  it("an allow rule does not widen through another name", async () => {
    for (const [pattern, command] of [["npm run test*", "npm rum test"], ["npm install*", "npm i x"], ["npm test*", "npm run test"], ["pnpm run build*", "pnpm build"], ["npm exec*", "npx x"], ["git push*", "git -c alias.x=push x"]]) {
      const allow: PermissionPolicy.Rule = { name: "allowed", tool: "shell", command: pattern!, decision: "allow" }
      expect((await decide("default", command!, [allow])).decision, `${pattern}: ${command}`).toBe("ask")
    }
  })
})
