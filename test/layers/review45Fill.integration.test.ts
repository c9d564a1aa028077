/**
 * Review 45: fills round 25 read too narrowly. Each line, under the user's exact rule for it, was allowed on main
 * (a2ec8f0) and, run with bash and git 2.39, ran the hostile `core.fsmonitor` it put in place (the cases failed before
 * the fix): git's parse-options reads `git init`/`git clone`'s long options by any unambiguous prefix and short ones in
 * clusters, a wget cluster's `O` may be another option's value, and curl reads `remote-name` from a config file.
 */
import { describe, it } from "@effect/vitest"
import { cpSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fsmonitor, lineChecks, servingGitdir } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/** The hostile repository at d1/d2/d3/ev, the template at t, an empty folder and curl config files saying `remote-name`. */
const { base, folder } = hostileBelow("review45f", fsmonitor, (cwd) => {
  mkdirSync(join(cwd, "empty"))
  cpSync(join(base, "template"), join(cwd, "t"), { recursive: true })
  writeFileSync(join(cwd, "k"), "remote-name\nremote-header-name\n")
  writeFileSync(join(cwd, ".curlrc"), "remote-name\nremote-header-name\n")
})
/** A template folder holding the hostile config: `git init --template` copies it as the new repository's `.git/config`. */
mkdirSync(join(base, "template"))
writeFileSync(join(base, "template", "config"), fsmonitor)
const { asks, allows } = lineChecks(folder)
const setting = "core.fsmonitor='touch fsmonitor-ran; false'"

describe("git init and git clone read as git's parse-options reads them (LineFills.gitMade)", () => {
  it("a long option by any unambiguous prefix, with = or the next word as its value", async () => {
    await asks("git init --templ=t && git status")
    await asks("git init --t=t && git status")
    await asks("git init --tem t empty && git -C empty status", "empty")
    await asks(`git clone --conf ${setting} d1/d2/d3/ev empty && git -C empty status`, "empty")
    await asks(`git clone --confi=${setting} d1/d2/d3/ev empty && git -C empty status`, "empty")
    await asks("git clone --tem=t d1/d2/d3/ev empty && git -C empty status", "empty")
  })

  it("short options in a cluster: -qc k=v", async () => {
    await asks(`git clone -qc ${setting} d1/d2/d3/ev empty && git -C empty status`, "empty")
  })

  it("without a template or configuration: the rule's (git's own options are read exactly: --git-d is refused)", async () => {
    await allows("git clone --qu --no-checkout d1/d2/d3/ev empty && git -C empty status")
    await allows("git init --qu empty && git -C empty status")
  })
})

describe("downloads (LineFills.downloadedInto)", () => {
  it("wget's O only after flags that take no value; curl's config files", async () => {
    await servingGitdir(async (url) => {
      // `-UOK` is the user agent `OK`: wget names the file from Content-Disposition.
      await asks(`wget -q -UOK --content-disposition ${url}/x && git status`)
      await asks(`curl -s -K k ${url}/x && git status`)
      await asks(`curl -s --config k ${url}/x && git status`)
      for (const home of ["CURL_HOME=.", "XDG_CONFIG_HOME=.", "HOME=."]) await asks(`${home} curl -s ${url}/x && git status`)
      // With -O naming the one file, settings that may make wget recursive (not installed servers: decisions only).
      for (const line of [`wget -qO f -e recursive=on ${url}/`, `wget -qO f --recur ${url}/`, `WGETRC=w wget -qO f ${url}/`]) await asks(`${line} && git status`, ".", false)
      // A file the line names, or `-q` before the home's .curlrc: the rule's.
      await allows(`wget -q -UOK -O f ${url}/x && git status`)
      await allows(`wget -qO- ${url}/x && git status`)
      await allows(`CURL_HOME=. curl -q -s ${url}/x && git status`)
      await allows(`curl -s ${url}/x && git status`)
    })
  })
})
