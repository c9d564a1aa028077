/**
 * Red team 7, item 3: a subagent's cwd (`sub`, inside its parent's workspace) is checked to be its
 * own real path as each call starts (`cwd_moved`), then used. The command sandbox's setup entered
 * it by name (`cd "$cwd"`) and bound "the folder it is in" over that name: `sub` swapped for a link
 * to a folder outside between the check and the command's start (the parent's own command can do
 * it) made that folder the command's writable workspace. The setup now checks, after entering it
 * and again after the mounts, that the folder it is in is the one it was given (`pwd -P`), and fails
 * closed otherwise; and the shell tool gives a pinned cwd as it was checked, not resolved again.
 * Deterministic here: the launch is built, then the folder swapped, then the command started.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawnSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import { outsideTmp } from "../tmp.js"

const detected = await Effect.runPromise(Sandbox.detect)
const branch = detected._tag === "Workspace" ? "[sandbox]" : `[no sandbox here: ${detected._tag}]`
const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(outsideTmp(), "effect-agent-swapped-cwd-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))

describe(`a cwd swapped for a link after its launch was built ${branch}`, () => {
  if (detected._tag !== "Workspace") {
    it("needs the workspace sandbox", () => undefined)
    return
  }
  it.scoped("the command does not run, and the folder the link leads to stays untouched", () =>
    Effect.gen(function*() {
      const parent = NodePath.join(root, "parent")
      const sub = NodePath.join(parent, "sub")
      const outside = NodePath.join(root, "outside")
      NodeFs.mkdirSync(sub, { recursive: true })
      NodeFs.mkdirSync(outside)
      const choice = Sandbox.choose("required", detected)
      if (!("launch" in choice)) return expect.unreachable(choice.unavailable)
      const launch = yield* choice.launch({ cwd: sub, network: false, hidden: [], env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } })
      // The swap, between the check and the use.
      NodeFs.renameSync(sub, NodePath.join(parent, "sub.moved"))
      NodeFs.symlinkSync(outside, sub)
      const ran = spawnSync(launch.prefix[0]!, [...launch.prefix.slice(1), "sh", "-c", "touch planted; pwd -P"], { cwd: NodePath.join(parent, "sub.moved"), env: launch.env, encoding: "utf8" })
      expect(NodeFs.readdirSync(outside)).toEqual([])
      expect(ran.status).toBe(125)
      expect(ran.stderr).toContain("working directory")
    }).pipe(Effect.provide(NodeContext.layer)))
})
