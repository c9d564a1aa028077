/**
 * leftovers43 item 3. With the sandbox off, what a git line would run is read from the repository
 * (`GitPrograms`), its submodules found by the index's gitlinks. Their names were decoded as UTF-8
 * text: a submodule whose path is not UTF-8 (a byte 0xff) became `\uFFFD…`, a folder that does not
 * exist, so its git folder's `core.fsmonitor` — which the outer `git status` runs — was never read,
 * and an allowed `git status` ran it without a question. The decision that hid: such a submodule
 * cannot be named as text, so it cannot be checked. Now its name is read as bytes, and a submodule
 * that is not text is said (escaped, `\xff`), as the sandbox says such a repository (mend47paths):
 * the line asks. Failed on main: `chosenByRepository` was empty and the line allowed.
 */
import { execFileSync } from "node:child_process"
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as GitPrograms from "../../src/layers/workspace/GitPrograms.js"
import { decide, fsmonitor } from "./exactGitRule.js"
import { repositoriesIn } from "./gitRepositories.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-submodule-bytes-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const repository = repositoriesIn(base)

/** `git submodule add` of `source` at a path whose first byte is 0xff (argv passes bytes through a shell, not through Node's strings). */
const addAtByteName = (cwd: string, source: string) =>
  execFileSync("/bin/sh", ["-c", `git -c protocol.file.allow=always submodule add -q "$SOURCE" "$(printf '\\377sub')" && git -c user.email=t@example.com -c user.name=t -c commit.gpgsign=false commit -qm sub`], {
    cwd,
    env: { ...process.env, SOURCE: source },
    stdio: "pipe"
  })

describe("a submodule whose path is not UTF-8", () => {
  it("is said, so an allowed git status asks rather than run its core.fsmonitor", async () => {
    const cwd = repository()
    addAtByteName(cwd, repository())
    const gitDir = Buffer.concat([Buffer.from(join(cwd, ".git", "modules") + "/"), Buffer.from([0xff]), Buffer.from("sub")])
    appendFileSync(Buffer.concat([gitDir, Buffer.from("/config")]), fsmonitor)
    // What is at stake: git status here runs the submodule's fsmonitor (in the submodule's folder).
    const sub = Buffer.concat([Buffer.from(`${cwd}/`), Buffer.from([0xff]), Buffer.from("sub")])
    mkdirSync(sub, { recursive: true })
    expect(ranIn(cwd, sub)).toBe(true)
    expect(await GitPrograms.chosenByRepository(cwd, [{ base: "" }])).toEqual(["(a submodule whose path is not UTF-8, \\xffsub: its git config and hooks not checked)"])
    expect(await decide(cwd, "git status")).toMatchObject({ decision: "ask", policy: "repository-git" })
  })
})

/** Whether `git status` in `cwd` ran the fsmonitor, which leaves its marker in the folder named by the bytes `at`. */
const ranIn = (cwd: string, at: Buffer): boolean => {
  const marker = Buffer.concat([at, Buffer.from("/fsmonitor-ran")])
  try {
    execFileSync("/bin/sh", ["-c", "git status"], { cwd, stdio: "pipe" })
  } catch {
    // git status fails where the hook fails; what counts is whether it ran.
  }
  try {
    rmSync(marker)
    return true
  } catch {
    return false
  }
}
