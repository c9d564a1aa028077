/**
 * A line that moves where it cannot say before it runs: `cd` alone (home), `cd -` (the previous folder:
 * `$OLDPWD`, when the command's environment is allowed to carry it), `cd ''`, `pushd` alone or `pushd +N`, every
 * `popd` (the folder stack). What follows works there — `cd && cat .bashrc` reads the home folder's,
 * `cd - && git status` runs the git (and its repository's `core.fsmonitor`) of wherever `$OLDPWD`
 * names. `cd ..` asked as outside cwd even under a rule for the exact line; these were allowed
 * by one (each case failed before). Now they ask as outside cwd too.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-cd-")))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
mkdirSync(join(cwd, "a"))
writeFileSync(join(cwd, "a", "x"), "x\n")

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
/** The decision under a rule that allows exactly this line. */
const underItsOwnRule = async (command: string) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })
}

describe("a move to a folder known only when the line runs", () => {
  it.each([
    "cd && cat .bashrc",
    "cd; cat .bashrc",
    "cd - && cat .bashrc",
    "cd -- - && git status",
    "cd -P && ls",
    "cd '' && ls",
    "cd && git status",
    "pushd && cat x",
    "pushd +1 && cat x",
    "popd; cat .bashrc",
    "sh -c 'cd && cat .bashrc'"
  ])("%s asks as outside cwd, whatever a rule says", async (line) => {
    expect(await underItsOwnRule(line)).toMatchObject({ decision: "ask", policy: "outside-cwd" })
  })

  it.each(["cd a && cat x", "cd -L a && cat x", "pushd a && cat x", "cd .. && cat x"])("held: %s is judged where it goes", async (line) => {
    expect((await underItsOwnRule(line)).decision).toBe(line.includes("..") ? "ask" : "allow")
  })
})
