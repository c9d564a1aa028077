/**
 * Red team round 24, after review (review42): each line runs a hostile core.fsmonitor with real git (2.39) under bash, and an
 * exact allow rule for the line allows it (the decision should be "ask").
 */
import { describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { decide, fsmonitor } from "./exactGitRule.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "r42-")))
const git = (args: Array<string>, at: string) => execFileSync("git", ["-c", "user.email=t@e", "-c", "user.name=t", "-c", "commit.gpgsign=false", ...args], { cwd: at, stdio: "pipe" })
const hostile = join(base, "hostile")
mkdirSync(hostile)
git(["init", "-q"], hostile)
writeFileSync(join(hostile, "a.txt"), "a\n")
git(["add", "."], hostile)
git(["commit", "-qm", "one"], hostile)
appendFileSync(join(hostile, ".git", "config"), fsmonitor)
execFileSync("tar", ["cf", join(base, "t.tar"), "-C", hostile, "."])
let n = 0
/** A plain folder holding t.tar, x/dot -> . (relative), and the hostile repository at d1/d2/d3/ev. */
const folder = () => {
  const cwd = join(base, `c${n++}`)
  mkdirSync(join(cwd, "x"), { recursive: true })
  cpSync(join(base, "t.tar"), join(cwd, "t.tar"))
  cpSync(hostile, join(cwd, "d1/d2/d3/ev"), { recursive: true })
  execFileSync("ln", ["-s", ".", "dot"], { cwd: join(cwd, "x") })
  return cwd
}
const fires = (cwd: string, line: string, at: string) => {
  const marker = join(cwd, at, "fsmonitor-ran")
  rmSync(marker, { force: true })
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch { /* git fails where the hook fails */ }
  return existsSync(marker)
}
const check = async (line: string, at = ".") => {
  expect(fires(folder(), line, at), `${line} runs the hostile fsmonitor`).toBe(true)
  expect((await decide(folder(), line)).decision, line).toBe("ask")
}

describe("R1: a fill through a link the same line makes (GitPrograms.chosenByRepository / realPaths)", () => {
  it("ln -s . out && tar xf t.tar -C out && git status", () => check("ln -s . out && tar xf t.tar -C out && git status"))
  it("ln -sfn . out; tar xf t.tar -C out/; git status", () => check("ln -sfn . out; tar xf t.tar -C out/; git status"))
  it("a relative link moved: mv x/dot out (x/dot -> . now means cwd)", () => check("mv x/dot out && tar xf t.tar -C out && git status"))
  it("after a cd: cd . && ln -s . out && tar xf t.tar -C out && git status", () => check("cd . && ln -s . out && tar xf t.tar -C out && git status"))
})

describe("R2: a cd after time and a reserved word (CommandPaths.shellRuns)", () => {
  it("time ! cd d1/d2/d3/ev; git status", () => check("time ! cd d1/d2/d3/ev; git status", "d1/d2/d3/ev"))
  it("time -p ! cd d1/d2/d3/ev; git status", () => check("time -p ! cd d1/d2/d3/ev; git status", "d1/d2/d3/ev"))
  it("time { cd d1/d2/d3/ev; }; git status", () => check("time { cd d1/d2/d3/ev; }; git status", "d1/d2/d3/ev"))
})

/** A repository (cwd) holding t.tar and data.txt, whose lines name a file and a line for it. */
const repository = () => {
  const dir = join(base, `r${n++}`)
  mkdirSync(dir)
  git(["init", "-q"], dir)
  writeFileSync(join(dir, "a.txt"), "a\n")
  writeFileSync(join(dir, "data.txt"), `.git/config|[core]\n.git/config|\tfsmonitor = "touch fsmonitor-ran; false"\n`)
  cpSync(join(base, "t.tar"), join(dir, "t.tar"))
  git(["add", "."], dir)
  git(["commit", "-qm", "one"], dir)
  return dir
}
const checkIn = async (line: string) => {
  expect(fires(repository(), line, "."), `${line} runs the hostile fsmonitor`).toBe(true)
  expect((await decide(repository(), line)).decision, line).toBe("ask")
}

describe("R3: sed and awk program text that runs or writes, missed (LineFills.sedRunsOrWrites / awkRunsOrWrites)", () => {
  it("GNU sed's e after a \\%regex% address", () => checkIn("sed -n '\\%a%e tar xf t.tar' a.txt && git status"))
  it("awk print redirected after a string holding ';'", () => checkIn("awk -F'|' '{print $2 \";\" > $1}' data.txt && git status"))
})
