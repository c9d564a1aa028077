/**
 * Red team round 23, one level deeper: config files a git reads because the line says so in ways
 * rounds 19–22 did not read, a config file the line writes before its git reads it, and a
 * here-string fed to a shell.
 *
 * Round 19 read `-c include.path=` and `GIT_CONFIG_GLOBAL`; git also includes what
 * `GIT_CONFIG_PARAMETERS` and the `GIT_CONFIG_KEY_<n>`/`VALUE_<n>` pairs name, and `--config-env`
 * takes the file from a variable. A config file the line names was read as it was at the check,
 * though a `cp` of the same line replaced it first; and `bash <<< '…'` ran a script the check never
 * read. Under an exact rule for each line git 2.39 ran the included `core.fsmonitor` (the cases
 * failed before).
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { asks, decide, fsmonitor, mine } from "./exactGitRule.js"
import { ran, scratch } from "./gitRepositories.js"

const { repository } = scratch("redteam23d")
const clone = "d1/d2/d3/clone"

/** A repository with a hostile config file and a hostile clone past the search, and a harmless g.cfg. */
const workspace = () => {
  const cwd = repository()
  mkdirSync(join(cwd, "d1", "d2", "d3"), { recursive: true })
  writeFileSync(join(cwd, "d1", "d2", "d3", "evil.cfg"), fsmonitor)
  writeFileSync(join(cwd, "g.cfg"), "[user]\n\tname = x\n")
  repository(fsmonitor, join(cwd, clone))
  return cwd
}

describe("what a line makes its git read, one level deeper", () => {
  it("a config file included through GIT_CONFIG_PARAMETERS, the counted pairs or --config-env: asks", async () => {
    for (const line of [
      `GIT_CONFIG_PARAMETERS="'include.path'='CWD/d1/d2/d3/evil.cfg'" git status`,
      `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=include.path GIT_CONFIG_VALUE_0=CWD/d1/d2/d3/evil.cfg git status`,
      `export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=include.path GIT_CONFIG_VALUE_0=CWD/d1/d2/d3/evil.cfg; git status`,
      `V=CWD/d1/d2/d3/evil.cfg git --config-env=include.path=V status`
    ]) {
      const cwd = workspace()
      const written = line.replaceAll("CWD", cwd)
      expect(await decide(cwd, written), line).toMatchObject(asks)
      expect(ran(cwd, written, cwd), line).toBe(true)
    }
  })

  it("a config file the line writes before its git reads it, and a here-string a shell runs: asks", async () => {
    for (const line of [
      "cp d1/d2/d3/evil.cfg g.cfg && GIT_CONFIG_GLOBAL=g.cfg git status",
      "cp d1/d2/d3/evil.cfg g.cfg && git -c include.path=CWD/g.cfg status",
      `bash <<< 'git -C ${clone} status'`
    ]) {
      const cwd = workspace()
      const written = line.replaceAll("CWD", cwd)
      expect(await decide(cwd, written), line).toMatchObject(asks)
      expect(ran(cwd, `/bin/bash -c "${written.replaceAll('"', '\\"')}"`, line.startsWith("bash") ? join(cwd, clone) : cwd), line).toBe(true)
    }
  })

  it("held: a harmless config file the line names, and a here-string no shell runs", async () => {
    const cwd = workspace()
    for (const line of ["GIT_CONFIG_GLOBAL=g.cfg git status", `git -c include.path=${cwd}/g.cfg status`, `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=${cwd}/d1/d2/d3/evil.cfg git status`, "cat <<< 'a b' && git status"]) {
      expect(await decide(cwd, line), line).toMatchObject(mine)
    }
  })
})
