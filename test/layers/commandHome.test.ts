/**
 * A command's `~` is judged with the HOME the command runs with. The path check expanded `~/` with
 * the agent's HOME while the command could run with another: one the settings' `env` set, or one
 * the line sets itself (`read HOME < f; cat ~/secret`). With the session's cwd holding the agent's
 * home, `cat ~/secret` was a read inside cwd (no question under an allow of `cat *`) though the
 * command's `~` was another folder. Now a `~` counts as outside whenever HOME differs or the line
 * names it. And a line run without a shell has no `~` expanded: `cat ~/secret` opens `./~/secret`,
 * through a `~` in cwd that may be a link out, which was never looked at.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

// The session runs in the agent's home folder (a `~` of the agent's is inside cwd).
const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-home-")))
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-other-home-")))
writeFileSync(join(cwd, "secret"), "x")
writeFileSync(join(cwd, "home.txt"), elsewhere)
const agentHome = process.env.HOME
beforeAll(() => {
  process.env.HOME = cwd
})
afterAll(() => {
  process.env.HOME = agentHome
  rmSync(cwd, { recursive: true, force: true })
  rmSync(elsewhere, { recursive: true, force: true })
})

const make = (options: WorkspaceTools.Options = {}) => Effect.runSync(WorkspaceTools.make(options).pipe(Effect.provide(NodeContext.layer)))
const decide = async (tools: ReturnType<typeof make>, command: string, rules: ReadonlyArray<PermissionPolicy.Rule>) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ mode: "default", rules }, { sessionId: "s", cwd, call, remembered: [] })
}
const cat: PermissionPolicy.Rule = { name: "cat", tool: "shell", command: "cat *", decision: "allow" }

describe("a command's ~ is the HOME it runs with", () => {
  it("with the agent's HOME, ~ inside cwd is inside (as before)", async () => {
    expect(await decide(make(), "cat ~/secret", [cat])).toEqual({ decision: "allow", policy: "cat" })
  })

  it("with HOME set in the settings' env, ~ counts as outside", async () => {
    const tools = make({ env: { set: { HOME: elsewhere } } })
    expect((await decide(tools, "cat ~/secret", [cat])).decision).toBe("ask")
    expect((await decide(tools, "cat ~/*", [{ ...cat, command: "cat ~/* | head" }, cat])).decision).toBe("ask")
    expect(await decide(tools, "cat secret", [cat])).toEqual({ decision: "allow", policy: "cat" })
  })

  it("with HOME set on the line, ~ counts as outside", async () => {
    for (const line of ["cd . && export HOME=sub && cat ~/secret", "read HOME < home.txt; cat ~/secret"]) {
      const call = await Effect.runPromise(make().prepare({ toolCallId: "c1", tool: "shell", args: { command: line } }, cwd))
      expect(call.paths?.filter((p) => p.requested.startsWith("~")).map((p) => p.insideCwd), line).toEqual([false])
    }
  })

  it("without a shell, ~ is also the folder named ~ in cwd, which may lead out", async () => {
    const tools = make()
    symlinkSync(elsewhere, join(cwd, "~"))
    writeFileSync(join(elsewhere, "secret"), "x")
    try {
      expect((await decide(tools, "cat ~/secret", [cat])).decision).toBe("ask")
    } finally {
      rmSync(join(cwd, "~"))
    }
    expect(await decide(tools, "cat ~/secret", [cat])).toEqual({ decision: "allow", policy: "cat" })
  })
})
