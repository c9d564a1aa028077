/**
 * Red team round 21: a `cd` whose folder the shell searches for. With `CDPATH` set — passed on by
 * `env.allow`, set by `env.set`, or by the line itself (`CDPATH=deep cd clone`, `export CDPATH=…`)
 * — `cd sub` moves to the first `$CDPATH/sub` there is, before `./sub` (dash and bash alike), and
 * bash's `shopt -s cdable_vars` makes `cd NAME` move to `$NAME`. The check read `sub` from cwd: an
 * exact rule for `cd clone && git status` ran the `core.fsmonitor` of a clone the search did not
 * reach, and one for `cd a && cat x` read a file outside cwd (each case failed before). Now such a
 * move counts as one to a folder known only when the line runs (outside cwd: it asks). A folder
 * named from `.` or `/` (`cd ./a`, `cd ../x`) is never searched for, and is judged where it goes.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { fsmonitor } from "./exactGitRule.js"
import { repositoriesIn } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam21cd-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const cwd = join(base, "cwd")
const outside = join(base, "outside")
for (const dir of [join(cwd, "a"), join(outside, "a")]) mkdirSync(dir, { recursive: true })
writeFileSync(join(cwd, "a", "x"), "inside\n")
writeFileSync(join(outside, "a", "x"), "outside\n")
// A clone deeper than the search, with core.fsmonitor set.
const clone = repositoriesIn(base)(fsmonitor, join(cwd, "d1", "d2", "d3", "clone"))

/** The decision under a rule that allows exactly this line, for tools made with `options`. */
const underItsOwnRule = async (command: string, options: WorkspaceTools.Options = {}) => {
  const tools = Effect.runSync(WorkspaceTools.make(options).pipe(Effect.provide(NodeContext.layer)))
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })
}
/** What the line prints, run by /bin/sh in cwd with `env`. */
const output = (command: string, env: Record<string, string> = {}) =>
  execFileSync("/bin/sh", ["-c", command], { cwd, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "ignore"] }).toString()
const outsideCwd = { decision: "ask", policy: "outside-cwd" }

describe("a cd the shell searches CDPATH for", () => {
  it("CDPATH in the command's environment (env.set, env.allow) moves cd a elsewhere", async () => {
    expect(output("cd a && cat x", { CDPATH: outside })).toContain("outside")
    expect(await underItsOwnRule("cd a && cat x", { env: { set: { CDPATH: outside } } })).toMatchObject(outsideCwd)
    const before = process.env.CDPATH
    process.env.CDPATH = outside
    try {
      expect(await underItsOwnRule("cd a && cat x", { env: { allow: ["CDPATH"] } })).toMatchObject(outsideCwd)
      // Not passed on, it moves nowhere else.
      expect((await underItsOwnRule("cd a && cat x")).decision).toBe("allow")
    } finally {
      if (before === undefined) delete process.env.CDPATH
      else process.env.CDPATH = before
    }
  })

  it("CDPATH set on the line sends cd, and the git after it, where the check did not look", async () => {
    rmSync(join(clone, "fsmonitor-ran"), { force: true })
    output("CDPATH=d1/d2/d3 cd clone && git status")
    expect(existsSync(join(clone, "fsmonitor-ran"))).toBe(true)
    for (const line of ["CDPATH=d1/d2/d3 cd clone && git status", "export CDPATH=d1/d2/d3; cd clone && git status", "sh -c 'CDPATH=d1/d2/d3; cd clone; git status'"]) {
      expect((await underItsOwnRule(line)).decision).toBe("ask")
    }
  })

  it("bash's cdable_vars makes cd NAME move to $NAME", async () => {
    expect(execFileSync("bash", ["-c", "shopt -s cdable_vars; cd HOME && pwd"], { cwd, env: { PATH: process.env.PATH ?? "", HOME: outside } }).toString()).toContain(outside)
    expect(await underItsOwnRule("bash -c 'shopt -s cdable_vars; cd HOME && cat x'")).toMatchObject(outsideCwd)
  })

  it("held: a folder named from . or / is never searched for", async () => {
    expect(output("cd ./a && cat x", { CDPATH: outside })).toContain("inside")
    for (const line of ["cd ./a && cat x", `cd ${join(cwd, "a")} && cat x`]) {
      expect((await underItsOwnRule(line, { env: { set: { CDPATH: outside } } })).decision).toBe("allow")
    }
  })
})
