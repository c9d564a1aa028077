/**
 * Red team round 22: a line that swaps what an existing folder holds before its git runs there.
 *
 * Round 21 made a git in a folder the line makes first ask (the folder is not there to read). A
 * folder that *is* there was read as it is, though the line may replace it first: `mv y y.old && mv
 * deep/clone y && git -C y status`, under an exact allow rule for that line, read `y`'s harmless
 * repository and ran the moved clone's `core.fsmonitor` (four folders down, past the search: the
 * case failed before). Now a git in a folder that a command of the line moves, removes, copies onto,
 * links or unpacks into (`mv`, `rm`, `cp`, `rsync`, `ln`, `tar`, `unzip`, …) — or in one below such a
 * folder — asks: what it holds then is known only when it runs.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, fsmonitor } from "./exactGitRule.js"
import { git, ran, repositoriesIn } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam22s-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)
const asks = { decision: "ask", policy: "repository-git" }
const mine = { decision: "allow", policy: "mine" }

describe("a git in a folder the line swaps first", () => {
  it("moved away and replaced, removed and copied over, copied onto: asks", async () => {
    const lines = [
      "mv y y.old && mv d1/d2/d3/clone y && git -C y status",
      "rm -rf y && cp -r d1/d2/d3/clone y && git -C y status",
      "rm -rf y && cp -r d1/d2/d3/clone y && cd y && git status",
      "cp -r d1/d2/d3/clone/. y && git -C y status",
      "nice mv y y.old; mv d1/d2/d3/clone y; git -C y/. status",
      "mv w w.old && mkdir w && mv d1/d2/d3/clone w/y && git -C w/y status"
    ]
    for (const line of lines) {
      const cwd = repository()
      repository("", join(cwd, "y"))
      repository("", join(cwd, "w", "y"))
      repository(fsmonitor, join(cwd, "d1", "d2", "d3", "clone"))
      expect(await decide(cwd, line), line).toMatchObject(asks)
      // What the line runs: the clone's core.fsmonitor, where y was.
      expect(ran(cwd, line, line.includes("w/y") ? join(cwd, "w", "y") : join(cwd, "y")), line).toBe(true)
    }
  })

  it("a submodule's folder swapped inside the git's own worktree: git status looks into what is there then", async () => {
    const cwd = repository()
    git(["submodule", "add", "-q", repository(), "sub"], cwd)
    git(["commit", "-qm", "sub"], cwd)
    repository(fsmonitor, join(cwd, "d1", "d2", "d3", "clone"))
    for (const line of ["rm -rf sub && mv d1/d2/d3/clone sub && git status", "rm -rf sub && cp -r d1/d2/d3/clone sub && git status", "mv sub s.old; ln -s d1/d2/d3/clone sub; git status"]) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
    expect(ran(cwd, "rm -rf sub && mv d1/d2/d3/clone sub && git status", join(cwd, "sub"))).toBe(true)
  })

  it("held: a line whose commands leave the git's folder alone is read as it is", async () => {
    const cwd = repository()
    repository("", join(cwd, "y"))
    git(["submodule", "add", "-q", repository(), "sub"], cwd)
    for (const line of ["cp a.txt b.txt && git -C y status", "rm -f y.log && git -C y status", "mv a.txt y.txt; git status", "cp a.txt b.txt && git status"]) {
      expect(await decide(cwd, line), line).toMatchObject(mine)
    }
  })
})
