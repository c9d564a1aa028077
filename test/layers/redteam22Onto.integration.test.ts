/**
 * Red team round 22: a write *onto* a git folder below cwd, by naming the folder itself.
 *
 * Round 21 made a write inside a git folder not named `.git` ask (`gd`, which `git init
 * --separate-git-dir=gd sub` makes and a `.git` file names). A command whose destination is the
 * folder writes into it all the same: `cp config gd` puts `gd/config` there, and so do `unzip -d gd`,
 * `cp -r evil/. gd`, `rsync x/ gd/`, `tar xf t.tar -C gd`; once `sub` is staged your own `git status`
 * runs what it names. Under `--allow 'shell:*'` `cp config gd`, `unzip -d gd` and `cp -r evil/. gd`
 * ran without a question (the case failed before). Now a write onto such a folder asks as one onto
 * `.git` does — unless only a git's own folder words name it (`git --git-dir=gd`, `GIT_DIR=gd`,
 * `git -C gd`): git reads the repository there and writes nothing onto the folder, and the question
 * is the repository's (`repository-git`), as before.
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
import { decide as exactly, fsmonitor } from "./exactGitRule.js"
import { git, repositoriesIn } from "./gitRepositories.js"
import { anything } from "./shellDecisions.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam22o-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)
const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))

/** The decision for a line under `--allow 'shell:*'` in acceptEdits. */
const wildcard = async (cwd: string, command: string) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ mode: "acceptEdits", rules: [anything] }, { sessionId: "s", cwd, call, remembered: [] })
}
const protectedPath = { decision: "ask", policy: "protected-path" }

/** A repository whose staged submodule `sub` keeps its git folder in `gd`, beside it. */
const withSeparateGitDir = () => {
  const cwd = repository()
  git(["init", "-q", "--separate-git-dir=gd", "sub"], cwd)
  git(["-C", "sub", "commit", "-q", "--allow-empty", "-m", "x"], cwd)
  git(["add", "sub"], cwd)
  return cwd
}

describe("a write onto a git folder not named .git", () => {
  it("a command whose destination is the folder asks: it writes the folder's config", async () => {
    const cwd = withSeparateGitDir()
    for (const line of ["cp config gd", "cp config gd/", "cp config ./gd", "unzip -d gd t.zip", "cp -r evil/. gd", "mv config gd", "tar xf t.tar -C gd"]) {
      expect(await wildcard(cwd, line)).toMatchObject(protectedPath)
    }
    for (const line of ["rsync -a x/ gd/", "git --git-dir=gd status; cp config gd", "GIT_DIR=gd cp config gd", "cd gd && touch config"]) {
      expect(await exactly(cwd, line)).toMatchObject(protectedPath)
    }
    // What it would run: cp puts the file in the folder, and your own git status runs what it names.
    writeFileSync(join(cwd, "config"), execFileSync("cat", [join(cwd, "gd", "config")], { encoding: "utf8" }) + fsmonitor.replace("touch fsmonitor-ran", `touch ${join(cwd, "ran")}`))
    execFileSync("cp", ["config", "gd"], { cwd })
    execFileSync("git", ["status"], { cwd, stdio: "ignore" })
    expect(existsSync(join(cwd, "ran"))).toBe(true)
  })

  it("held: a git that only reads the folder (-C, --git-dir, GIT_DIR) asks as the repository's, not as a write", async () => {
    const cwd = repository()
    mkdirSync(join(cwd, "g"))
    git(["init", "-q", "--separate-git-dir=gd", "sub"], join(cwd, "g"))
    const quiet = ["git --git-dir=g/gd status", "GIT_DIR=g/gd git status", "git --git-dir g/gd status", "env GIT_DIR=g/gd git status", "nice git --git-dir=g/gd status", "git -C g --git-dir=gd log"]
    for (const line of quiet) expect(await exactly(cwd, line)).toMatchObject({ decision: "allow", policy: "mine" })
    appendFileSync(join(cwd, "g", "gd", "config"), fsmonitor)
    for (const line of quiet) expect(await exactly(cwd, line)).toMatchObject({ decision: "ask", policy: "repository-git" })
    // tar's -C is a destination, not git's.
    expect(await wildcard(cwd, "tar xf t.tar -C g/gd")).toMatchObject(protectedPath)
  })
})
