/**
 * Red team round 22: may a folder the same line's `git clone` or `git init` makes be read as that
 * git's own (`git clone X n && git -C n log`, which asks since round 21)? Decided: no, it keeps asking.
 *
 * What a clone holds is not only the source's: `git clone` of a local hostile repository copies none
 * of its config (pinned), but a template does (`--template=t`, `GIT_TEMPLATE_DIR`, your
 * `init.templateDir`) and so does `-c`/`--config` (pinned) — and any other command of the line may
 * write `n/.git/config` without naming `n` (`unzip evil.zip`, `tar xf evil.tar`, `cp -r evil/. .`
 * between the clone and the git). None of that is there to read when the line is checked. The cost
 * is one question for the joined line: run as two calls, the second is read as any git is (pinned).
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, fsmonitor } from "./exactGitRule.js"
import { git, ran, repositoriesIn } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam22c-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)
const asks = { decision: "ask", policy: "repository-git" }

describe("a git in the folder the same line's git clone makes", () => {
  it("asks: a template or -c puts config there, though the source's config is not copied", async () => {
    const cwd = repository()
    repository(fsmonitor, join(cwd, "src"))
    mkdirSync(join(cwd, "t"))
    writeFileSync(join(cwd, "t", "config"), fsmonitor)
    expect(ran(cwd, "git clone -q src n1 && git -C n1 status", join(cwd, "n1"))).toBe(false)
    expect(ran(cwd, "git clone -q --template=t src n2 && git -C n2 status", join(cwd, "n2"))).toBe(true)
    expect(ran(cwd, `git clone -q -c core.fsmonitor='touch fsmonitor-ran; false' src n3 && git -C n3 status`, join(cwd, "n3"))).toBe(true)
    for (const line of ["git clone -q src n4 && git -C n4 log", "git clone -q --template=t src n5 && git -C n5 status", "git clone -q src n6 && cd n6 && git status"]) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
  })

  it("held: the same two steps as two calls — the second reads the clone as it is", async () => {
    const cwd = repository()
    // Past the search for nested repositories (one beside cwd's git is read by every git there).
    repository(fsmonitor, join(cwd, "d1", "d2", "d3", "src"))
    expect((await decide(cwd, "git clone -q d1/d2/d3/src n")).policy).not.toBe("repository-git")
    git(["clone", "-q", "d1/d2/d3/src", "n"], cwd)
    expect(await decide(cwd, "git -C n log")).toMatchObject({ decision: "allow", policy: "mine" })
  })
})
