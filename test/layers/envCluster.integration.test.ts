/** review48: env's clustered -u/-a value and long-option prefixes hide -C from movesTo (CommandPaths.ts:391-393). */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { execFileSync } from "node:child_process"
import { decide, fsmonitor, lineChecks } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/** The hostile repository at d1/d2/d3/ev (below the search for nested ones), an empty folder and a file. */
const { base, folder } = hostileBelow("review48env", fsmonitor, (cwd) => {
  mkdirSync(join(cwd, "empty"))
  writeFileSync(join(cwd, "a.txt"), "a\n")
})
let made = 0
const { asks } = lineChecks(folder)

const pythonFolder = (module: string, below = "") => {
  const cwd = join(base, `p${made++}`)
  mkdirSync(join(cwd, below), { recursive: true })
  writeFileSync(join(cwd, below, module), `open(${JSON.stringify(join(cwd, "ran"))}, "a").write("ran\\n")\n`)
  return cwd
}
const pythonRuns = (cwd: string, line: string) => {
  rmSync(join(cwd, "ran"), { force: true })
  try { execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" }) } catch { /* */ }
  return existsSync(join(cwd, "ran"))
}

describe("env -C after a clustered -u value (regression of 2bbfb79's break) and long-option prefixes", () => {
  it("control: env -u FOO -C … git status asks", async () => {
    await asks("env -u FOO -C d1/d2/d3/ev git status", "d1/d2/d3/ev")
  })
  for (const line of [
    "env -vu FOO -C d1/d2/d3/ev git status",
    "env -iu FOO -C d1/d2/d3/ev git status",
    "env --un FOO -C d1/d2/d3/ev git status",
    "env --ch d1/d2/d3/ev git status",
    "env --chd=d1/d2/d3/ev git status",
    // mend48: a value glued to its letter in a group, the last -C of several, options after an assignment or a lone `-`.
    "env -iC d1/d2/d3/ev git status",
    "env -ivCd1/d2/d3/ev git status",
    "env -C empty -C d1/d2/d3/ev git status",
    "env --unset=FOO --c d1/d2/d3/ev git status",
    "env -S'-C d1/d2/d3/ev' git status"
  ]) {
    it(line, async () => {
      await asks(line, "d1/d2/d3/ev")
    })
  }
  it("PYTHONPATH=. env -vu FOO -C sub pip3 runs sub/json.py and should ask", async () => {
    const line = "PYTHONPATH=. env -vu FOO -C sub pip3 --version"
    expect(pythonRuns(pythonFolder("json.py", "sub"), line)).toBe(true)
    expect((await decide(pythonFolder("json.py", "sub"), line)).decision).toBe("ask")
  })
})
