/**
 * Red team round 23: a line that fills a folder with what it does not name, then runs git there.
 *
 * Round 22 made a git ask when a command of its line names its folder (or one holding it) to move,
 * remove or copy onto. An archive, a patch or a folder's copy writes entries the line never names:
 * `tar xf t.tar && git status` unpacks `.git/config` (or `sub/.git` for a staged submodule) into cwd,
 * and cwd itself was left out — under an exact rule for the line, and under `* && *`, each of these
 * ran the unpacked `core.fsmonitor` (the cases failed before). Now a command that unpacks, patches or
 * copies a folder's contents into a folder (`tar x`, `unzip`, `cpio -i`, `patch`, `ar x`, `cp -r x/.
 * d`, `rsync x/ d`, a glob's names) fills it: a git whose folder, git folder, repository (`.git` on
 * the way up to cwd) or submodule that folder holds — or one inside a submodule — asks, cwd included.
 * What a copy or a move lands as (`mv d1/sub .` lands `./sub`) counts as named.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { asks, decide, fsmonitor, mine } from "./exactGitRule.js"
import { git, ran, scratch } from "./gitRepositories.js"
import { shellDecisions } from "./shellDecisions.js"

const { base, repository } = scratch("redteam23f")
/** Rules spelling out the syntax of the lines below, in acceptEdits: all a wildcard can allow. */
const chains = [{ name: "chain", tool: "shell", command: "* && *", decision: "allow" as const }, { name: "semi", tool: "shell", command: "*; *", decision: "allow" as const }]
const wildcard = (cwd: string, line: string) => shellDecisions(cwd).decide("acceptEdits", line, chains)

// A hostile repository (past the search for nested ones, four folders down), packed as a tar and a zip.
const hostile = repository(fsmonitor, join(base, "hostile"))
execFileSync("tar", ["cf", join(base, "t.tar"), "-C", hostile, "."])
execFileSync("zip", ["-qr", join(base, "t.zip"), "."], { cwd: hostile })

/** `cwd` holding the archives and the hostile repository at d1/d2/d3/ev. */
const stocked = (cwd: string) => {
  for (const file of ["t.tar", "t.zip"]) cpSync(join(base, file), join(cwd, file))
  cpSync(hostile, join(cwd, "d1", "d2", "d3", "ev"), { recursive: true })
  return cwd
}
let plain = 0
const notARepository = () => {
  const cwd = join(base, `plain${plain++}`)
  mkdirSync(cwd)
  return stocked(cwd)
}

describe("a git after a command that fills its folder with what the line does not name", () => {
  it("unpacked, copied or moved into cwd — not a repository yet, or one whose .git/config it overwrites: asks", async () => {
    const lines = [
      "tar xf t.tar && git status",
      "unzip -oq t.zip && git status",
      "cp -r d1/d2/d3/ev/. . && git status",
      "cp -r d1/d2/d3/ev/.git . && git status",
      "mv d1/d2/d3/ev/.git . && git status",
      "tar -xf t.tar -C . && git status",
      "rsync -a d1/d2/d3/ev/ ./ && git status"
    ]
    for (const line of lines) {
      const plainFolder = notARepository()
      for (const cwd of [plainFolder, stocked(repository())]) {
        // (`cp -r …/.git .` into a repository asks as a write into .git/ too.)
        expect((await decide(cwd, line)).decision, line).toBe("ask")
        // (A wildcard never stands for rsync: it runs programs. Denied is as good.)
        expect((await wildcard(cwd, line)).decision, line).not.toBe("allow")
        // What the line runs in a folder that was no repository: the unpacked core.fsmonitor (rsync is not everywhere).
        if (cwd === plainFolder && !line.startsWith("rsync")) expect(ran(cwd, line, cwd), line).toBe(true)
      }
    }
  })

  it("a patch, an archive or a move that makes a staged submodule's .git: asks", async () => {
    const cwd = stocked(repository())
    git(["submodule", "add", "-q", repository(), "sub"], cwd)
    git(["commit", "-qm", "sub"], cwd)
    // Unpopulated: an empty folder, no git folder of its own.
    rmSync(join(cwd, "sub"), { recursive: true, force: true })
    rmSync(join(cwd, ".git", "modules"), { recursive: true, force: true })
    mkdirSync(join(cwd, "sub"))
    writeFileSync(join(cwd, "p.diff"), "--- /dev/null\n+++ b/sub/.git\n@@ -0,0 +1 @@\n+gitdir: ../d1/d2/d3/ev/.git\n")
    mkdirSync(join(cwd, "d1", "d2", "d3", "moved"))
    cpSync(join(cwd, "d1", "d2", "d3", "ev"), join(cwd, "d1", "d2", "d3", "moved", "sub"), { recursive: true })
    for (const line of ["patch -p1 < p.diff && git status", "patch -s -p1 -i p.diff; git status", "rmdir sub && mv d1/d2/d3/moved/sub . && git status", "tar xf t.tar -C sub && git status"]) {
      expect(await decide(cwd, line), line).toMatchObject(asks)
    }
    expect(ran(cwd, "patch -s -p1 -i p.diff; git status", join(cwd, "sub"))).toBe(true)
  })

  it("held: a fill beside the git's folder, and named files copied into cwd, are read as they are", async () => {
    const cwd = stocked(repository())
    mkdirSync(join(cwd, "out"))
    repository("", join(cwd, "y"))
    for (const line of ["tar xf t.tar -C out && git status", "unzip -oq t.zip -d out && git -C y status", "cp d1/d2/d3/ev/a.txt . && git status", "tar cf x.tar y && git status", "cp -r d1/d2/d3/ev out && git -C y status"]) {
      expect(await decide(cwd, line), line).toMatchObject(mine)
    }
  })
})
