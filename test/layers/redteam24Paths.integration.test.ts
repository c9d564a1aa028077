/**
 * Red team round 24, the line reader (review41): a `cd` after `command`, `builtin` or bash's `time`
 * moves the line's shell as any `cd` does; `GIT_CONFIG_PARAMETERS` is read as git reads it (`'\''`
 * inside a value); and more places, git folders or config files than the check reads make the git
 * ask instead of being dropped. Each line, run by the shell, ran the hostile `core.fsmonitor` (git
 * 2.39), and an exact rule for it allowed it (the cases failed before).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { cpSync, existsSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { decide, fsmonitor } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/** Plain folders (no repository) holding the hostile repository at d1/d2/d3/ev. */
const { repository, hostile, folder } = hostileBelow("redteam24p", fsmonitor)
/** Whether running the line with `shell` ran the hostile core.fsmonitor, whose marker lands where git works (`at`). */
const fires = (cwd: string, line: string, at = cwd, shell = "/bin/bash") => {
  const marker = join(at, "fsmonitor-ran")
  rmSync(marker, { force: true })
  try {
    execFileSync(shell, ["-c", line], { cwd, stdio: "pipe" })
  } catch { /* git status fails where the hook fails */ }
  return existsSync(marker)
}

describe("a cd the place tracking did not see", () => {
  it("`command cd`, `command -p cd`, `command -- cd`, `builtin cd`, `time cd`, in eval too: asks", async () => {
    for (const [line, shell] of [
      ["command cd d1/d2/d3/ev; git status", "/bin/sh"],
      ["command -p cd d1/d2/d3/ev && git status", "/bin/sh"],
      ["command -- cd d1/d2/d3/ev && git status", "/bin/sh"],
      ["builtin cd d1/d2/d3/ev; git status", "/bin/bash"],
      ["command builtin cd d1/d2/d3/ev; git status", "/bin/bash"],
      ["time cd d1/d2/d3/ev; git status", "/bin/bash"],
      ["time -p cd d1/d2/d3/ev; git status", "/bin/bash"],
      ["eval 'command cd d1/d2/d3/ev'; git status", "/bin/sh"],
      ["eval 'builtin cd d1/d2/d3/ev'; git status", "/bin/bash"],
      ["command cd; git status", "/bin/sh"],
      ["builtin popd; git status", "/bin/bash"]
    ] as const) {
      const cwd = folder()
      if (!line.includes("cd;") && !line.includes("popd")) expect.soft(fires(cwd, line, join(cwd, "d1/d2/d3/ev"), shell), `${line} runs ev's fsmonitor`).toBe(true)
      expect.soft((await decide(folder(), line)).decision, line).toBe("ask")
    }
  })

  it("a git after more cds than the check follows (8 places): asks", async () => {
    // Every place the check reads exists and holds nothing hostile within its search; the 4th cd's is not read.
    const workspace = () => {
      const cwd = repository()
      writeFileSync(join(cwd, ".gitignore"), "*\n")
      cpSync(hostile, join(cwd, "a/a/a/x/y/z/ev"), { recursive: true })
      return cwd
    }
    const line = "cd a; cd a; cd a; cd x/y/z/ev; git status"
    const cwd = workspace()
    expect(fires(cwd, line, join(cwd, "a/a/a/x/y/z/ev"))).toBe(true)
    expect((await decide(workspace(), line)).decision).toBe("ask")
  })

  it("`command -v cd` runs no cd: the line is read as before", async () => {
    expect((await decide(folder(), "command -v cd && git status")).decision).toBe("allow")
  })
})

describe("GIT_CONFIG_PARAMETERS as git reads it", () => {
  it("a value holding '\\'' or '\\!' names the whole file; a text git cannot read asks", async () => {
    const cwd = repository()
    writeFileSync(join(cwd, ".gitignore"), "*\n")
    writeFileSync(join(cwd, "ev'il.cfg"), fsmonitor)
    writeFileSync(join(cwd, "ev!il.cfg"), fsmonitor)
    for (const line of [
      `GIT_CONFIG_PARAMETERS="'include.path'='${cwd}/ev'\\''il.cfg'" git status`,
      `GIT_CONFIG_PARAMETERS="'include.path'='${cwd}/ev'\\!'il.cfg'" git status`,
      `GIT_CONFIG_PARAMETERS="'include.path=${cwd}/ev'\\''il.cfg'" git status`
    ]) {
      expect.soft(fires(cwd, line), line).toBe(true)
      expect.soft((await decide(cwd, line)).decision, line).toBe("ask")
    }
    // Not git's format: git refuses it, and the check does not guess.
    expect((await decide(cwd, `GIT_CONFIG_PARAMETERS="include.path=${cwd}/g.cfg" git status`)).decision).toBe("ask")
  })
})

describe("more config files than the check reads", () => {
  it("a 9th include (GIT_CONFIG_KEY/VALUE, GIT_CONFIG_PARAMETERS) or a 9th GIT_CONFIG_GLOBAL: asks", async () => {
    const cwd = repository()
    writeFileSync(join(cwd, ".gitignore"), "*\n")
    writeFileSync(join(cwd, "evil.cfg"), fsmonitor)
    const pairs = Array.from({ length: 8 }, (_, i) => `GIT_CONFIG_KEY_${i}=include.path GIT_CONFIG_VALUE_${i}=${cwd}/n${i}.cfg`).join(" ")
    const params = Array.from({ length: 8 }, (_, i) => `'include.path'='${cwd}/n${i}.cfg'`).join(" ")
    const globals = Array.from({ length: 8 }, (_, i) => `export GIT_CONFIG_GLOBAL=n${i}.cfg; `).join("")
    for (const line of [
      `GIT_CONFIG_COUNT=9 ${pairs} GIT_CONFIG_KEY_8=include.path GIT_CONFIG_VALUE_8=${cwd}/evil.cfg git status`,
      `GIT_CONFIG_PARAMETERS="${params} 'include.path'='${cwd}/evil.cfg'" git status`,
      `${globals}GIT_CONFIG_GLOBAL=evil.cfg git status`
    ]) {
      expect.soft(fires(cwd, line), line).toBe(true)
      expect.soft((await decide(cwd, line)).decision, line).toBe("ask")
    }
  })
})
