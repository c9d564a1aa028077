/**
 * Red team round 24 (fills): holes review41 found in round 23's reading of what fills a folder.
 * Each line, under the user's exact rule for it, was allowed on main (8e7ddc8) and, run with bash,
 * ran the hostile `core.fsmonitor` it put in place (the cases failed before the fix).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { decide, fsmonitor } from "./exactGitRule.js"
import { scratch } from "./gitRepositories.js"

const { base, repository } = scratch("redteam24f")
const hostile = repository(fsmonitor, join(base, "hostile"))
execFileSync("tar", ["cf", join(base, "t.tar"), "-C", hostile, "."])
execFileSync("zip", ["-qr", join(base, "t.zip"), "."], { cwd: hostile })
let made = 0
/** A plain folder (no repository) holding the archives, the hostile repository at d1/d2/d3/ev, `out -> .` and `sub/up -> ..`. */
const folder = () => {
  const cwd = join(base, `c${made++}`)
  mkdirSync(join(cwd, "sub"), { recursive: true })
  for (const file of ["t.tar", "t.zip"]) cpSync(join(base, file), join(cwd, file))
  cpSync(hostile, join(cwd, "d1", "d2", "d3", "ev"), { recursive: true })
  execFileSync("ln", ["-s", ".", "out"], { cwd })
  execFileSync("ln", ["-s", "..", "up"], { cwd: join(cwd, "sub") })
  return cwd
}
/** Whether running the line with bash ran the hostile core.fsmonitor in cwd. */
const fires = (cwd: string, line: string) => {
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // git status fails where the hook fails.
  }
  return existsSync(join(cwd, "fsmonitor-ran"))
}
const asks = async (line: string, run = true) => {
  if (run) expect(fires(folder(), line), `${line} runs the hostile fsmonitor`).toBe(true)
  expect((await decide(folder(), line)).decision, line).toBe("ask")
}

describe("a fill through a link, as the kernel follows it (H6)", () => {
  it("a folder that is a link to cwd, or to cwd's parent from below it, is cwd", async () => {
    for (const line of ["tar xf t.tar -C out && git status", "unzip -oq t.zip -d out && git status", "cp -r d1/d2/d3/ev/. out && git status", "tar xf t.tar -C sub/up && git status"]) {
      await asks(line)
    }
    // Through a link out of cwd, to a folder the git works in through the same link: asked as before.
    const cwd = folder()
    mkdirSync(`${cwd}-far`)
    execFileSync("ln", ["-s", `${cwd}-far`, "far"], { cwd })
    expect((await decide(cwd, "tar xf t.tar -C far && git -C far status")).decision).toBe("ask")
  })
})

describe("what else fills cwd before a git (H1–H4)", () => {
  it("cp -T, an option's value before program text, a module or jar that unpacks, sed's e command: asks", async () => {
    const lines = [
      "cp -rT d1/d2/d3/ev . && git status",
      "cp -a --no-target-directory d1/d2/d3/ev . && git status",
      `awk -v x=1 'BEGIN{system("cp -r d1/d2/d3/ev/. .")}' && git status`,
      `perl -I . -e 'system("cp -r d1/d2/d3/ev/. .")' && git status`,
      `node -r fs -e "require('fs').cpSync('d1/d2/d3/ev','.',{recursive:true})" && git status`,
      `python3 -W ignore -c "import shutil; shutil.copytree('d1/d2/d3/ev', '.', dirs_exist_ok=True)" && git status`,
      "python3 -m tarfile -e t.tar . && git status",
      "python3 -m zipfile -e t.zip . && git status",
      "sed -n '1e cp -r d1/d2/d3/ev/. .' t.tar; git status"
    ]
    for (const line of lines) await asks(line)
    // jar is not everywhere; on macOS `cp -R x/ .` copies x's contents (GNU cp copies x): decisions only.
    for (const line of ["jar xf t.zip && git status", "cp -R d1/d2/d3/ev/ . && git status"]) await asks(line, false)
  })

  it("an awk program that compares, before a git of a clean folder, stays the rule's", async () => {
    expect((await decide(folder(), "awk '$1 > 3' t.tar && git status")).decision).toBe("allow")
  })
})
