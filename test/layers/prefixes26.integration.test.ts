/**
 * Round 26: option prefixes. GNU tar, sed, cp, mv, curl 7.88 and Python's argparse take a long option by any
 * unambiguous prefix of its name; the fills read some of theirs exactly (and some programs' options only up to the
 * first operand, where GNU getopt reads on). Each line, under the user's exact rule for it, was allowed on main
 * (602492b) and, run with bash and git 2.39, ran the hostile `core.fsmonitor` it put in place (the cases failed before
 * the fix).
 */
import { describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { cpSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fsmonitor, lineChecks, servingGitdir } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/** The hostile repository at d1/d2/d3/ev and packed as t.tar, an empty folder, a file and a curl config saying `remote-name`. */
const { base, hostile, folder } = hostileBelow("prefixes26", fsmonitor, (cwd) => {
  mkdirSync(join(cwd, "empty"))
  cpSync(join(base, "t.tar"), join(cwd, "t.tar"))
  writeFileSync(join(cwd, "a.txt"), "a\n")
  writeFileSync(join(cwd, "k"), "remote-name\nremote-header-name\n")
})
execFileSync("tar", ["cf", join(base, "t.tar"), "-C", hostile, "."])
const { asks, allows } = lineChecks(folder)

describe("long options by prefix (LineFills)", () => {
  it("tar --extr, sed --expr=, python3 -m tarfile --ext", async () => {
    await asks("tar --extr -f t.tar && git status")
    await asks("sed -n --expr='1e cp -r d1/d2/d3/ev/. .' a.txt && git status")
    await asks("python3 -m tarfile --ext t.tar && git status")
    // Read as the program reads them, a prefix that does not unpack or run stays the rule's.
    await allows("tar --li -f t.tar && git status")
    await allows("sed -n --sand 's/a/b/p' a.txt && git status")
  })

  it("curl --conf k: a config file saying remote-name", async () => {
    await servingGitdir(async (url) => {
      await asks(`curl -s --conf k ${url}/x && git status`)
    })
  })

  it("GNU sed reads -e after its file (getopt permutes)", async () => {
    await asks("sed -n a.txt -e '1e cp -r d1/d2/d3/ev/. .' && git status")
  })

  it("held (asked before too, the line names the folder it copies onto): cp --no-t, cp --targ=, mv --targ=, cp -f, cp -T", async () => {
    await asks("cp -r --no-t d1/d2/d3/ev empty && git -C empty status", "empty")
    await asks("cp -r --targ=empty d1/d2/d3/ev/. && git -C empty status", "empty")
    await asks("mv --targ=. d1/d2/d3/ev/.git && git status")
    await asks("cp -r -f d1/d2/d3/ev/.git . && git status")
    await asks("cp -r -T d1/d2/d3/ev empty && git -C empty status", "empty")
  })
})
