/**
 * Red team round 21: can the agent's own calls change what runs later, outside the sandbox?
 *
 * A write into `.git/` asks (git runs what its config and hooks name, and your own `git status` in
 * your terminal runs them unsandboxed). A git folder need not be named `.git`: `git init
 * --separate-git-dir=gd sub` (allowed by `--allow 'shell:*'`, as `git add sub` is) makes one named
 * `gd`, and once `sub` is staged as a submodule your next `git status` looks into it and runs
 * `gd/config`'s `core.fsmonitor`. The file tools wrote `gd/config` without a question in
 * `acceptEdits` (and `cp x gd/config` ran under `shell:*`): each case failed before. Now a write
 * inside any folder git takes as a repository's (a `HEAD` beside `objects/` and `refs/`, or a
 * linked worktree's `commondir`), below cwd, asks as a write into `.git/` does.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { git, repositoriesIn } from "./gitRepositories.js"
import { anything } from "./shellDecisions.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam21w-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)
const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))

const decide = async (cwd: string, tool: string, args: Record<string, string>, rules: ReadonlyArray<PermissionPolicy.Rule> = []) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool, args }, cwd))
  return PermissionPolicy.decide({ mode: "acceptEdits", rules }, { sessionId: "s", cwd, call, remembered: [] })
}
const protectedPath = { decision: "ask", policy: "protected-path" }

describe("a git folder not named .git", () => {
  it("a submodule the agent made with --separate-git-dir: its config is written only after a question", async () => {
    const cwd = repository()
    for (const line of ["git init -q --separate-git-dir=gd sub", "git add sub"]) {
      expect(await decide(cwd, "shell", { command: line }, [anything])).toMatchObject({ decision: "allow" })
    }
    git(["init", "-q", "--separate-git-dir=gd", "sub"], cwd)
    git(["-C", "sub", "commit", "-q", "--allow-empty", "-m", "x"], cwd)
    git(["add", "sub"], cwd)
    for (const path of ["gd/config", "gd/hooks/post-index-change", "gd/info/attributes", "sub/../gd/config"]) {
      expect(await decide(cwd, "write_file", { path, content: "x" })).toMatchObject(protectedPath)
    }
    expect(await decide(cwd, "shell", { command: "cp a.txt gd/config" }, [anything])).toMatchObject(protectedPath)
    // What it would run: your own git status, outside any sandbox.
    appendFileSync(join(cwd, "gd", "config"), `[core]\n\tfsmonitor = "touch ${join(cwd, "ran")}; false"\n`)
    execFileSync("git", ["status"], { cwd, stdio: "ignore" })
    expect(existsSync(join(cwd, "ran"))).toBe(true)
  })

  it("held: a folder that only looks like one in part, and the workspace's own files", async () => {
    const cwd = repository()
    mkdirSync(join(cwd, "docs", "refs"), { recursive: true })
    writeFileSync(join(cwd, "docs", "HEAD"), "not a repository\n")
    for (const path of ["docs/config", "a.txt", "new/file.txt"]) {
      expect((await decide(cwd, "write_file", { path, content: "x" })).decision).toBe("allow")
    }
  })
})
