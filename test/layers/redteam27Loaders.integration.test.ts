/**
 * Red team round 27: what a line's environment makes a program load from the repository. Each line asked below was
 * allowed by an exact rule for it on main (3a3c7d0: the cases failed before the fix); run with bash 5.2 and git 2.39,
 * each ran the repository's executable in place of the system's program.
 */
import { describe, expect, it } from "@effect/vitest"
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { execFileSync } from "node:child_process"
import { decide } from "./exactGitRule.js"
import { scratch } from "./gitRepositories.js"

const { base, repository } = scratch("redteam27")
let made = 0
/** A repository holding, in each of `folders`, executables named `names` that leave `ran` in cwd. */
const folder = (folders: ReadonlyArray<string>, names: ReadonlyArray<string> = ["git", "ls"]) => {
  const cwd = repository("", join(base, `r${made++}`))
  for (const d of folders) {
    mkdirSync(join(cwd, d), { recursive: true })
    for (const name of names) {
      writeFileSync(join(cwd, d, name), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
      chmodSync(join(cwd, d, name), 0o755)
    }
  }
  return cwd
}
const runs = (cwd: string, line: string) => {
  rmSync(join(cwd, "ran"), { force: true })
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // What counts is whether the repository's program ran.
  }
  return existsSync(join(cwd, "ran"))
}
const programAsks = async (line: string, folders: ReadonlyArray<string>, named: string, run = true) => {
  if (run) expect(runs(folder(folders), line), `${line} runs the repository's program`).toBe(true)
  const decided = await decide(folder(folders), line)
  expect(decided.decision, line).toBe("ask")
  expect(decided.policy, line).toBe("repository-python")
  expect(decided.reason, line).toContain(named)
}

describe("a relative or empty PATH entry on the line (CommandPaths, PythonShadows)", () => {
  it("runs the repository's git or ls in place of the system's, however the line sets PATH", async () => {
    await programAsks("PATH=bin:/usr/bin:/bin git status", ["bin"], "bin/git")
    await programAsks("PATH=:/usr/bin:/bin git status", ["."], "git")
    await programAsks("PATH=.:/usr/bin:/bin ls", ["."], "ls")
    await programAsks("export PATH=x:/usr/bin:/bin; git status", ["x"], "x/git")
    await programAsks("cd bin && PATH=.:/usr/bin:/bin git status", ["bin"], "bin/git")
    await programAsks("env PATH=bin:/usr/bin:/bin git status", ["bin"], "bin/git")
    await programAsks("env -C bin PATH=.:/usr/bin:/bin git status", ["bin"], "bin/git")
    await programAsks("set -a; PATH=bin:/usr/bin:/bin; git status", ["bin"], "bin/git")
    await programAsks("PATH=bin:/usr/bin:/bin; export PATH; git status", ["bin"], "bin/git")
    await programAsks("bash -c 'PATH=bin:/usr/bin:/bin git status'", ["bin"], "bin/git")
  })

  it("held: an empty last entry, $PWD and $PATH are words the shell expands or paths outside, asked already", async () => {
    for (const line of ["PATH=/usr/bin:/bin: git status", "PATH=$PWD/bin:/usr/bin:/bin git status", "export PATH=./x:$PATH; git status"]) {
      expect((await decide(folder(["bin", "x", "."]), line)).decision, line).toBe("ask")
    }
  })

  it("the repository's own tool no system folder has, or no program in the folder: the rule's", async () => {
    for (const line of ["PATH=node_modules/.bin:/usr/bin:/bin jest", "PATH=bin:/usr/bin:/bin git status"]) {
      expect((await decide(folder(["node_modules/.bin"], ["jest"]), line)).decision, line).toBe("allow")
    }
    // A file named like a program that nobody may run is no program.
    const cwd = folder([])
    mkdirSync(join(cwd, "bin"))
    writeFileSync(join(cwd, "bin", "git"), "notes\n")
    expect((await decide(cwd, "PATH=bin:/usr/bin:/bin git status")).decision).toBe("allow")
  })
})

describe("GIT_EXEC_PATH, LD_LIBRARY_PATH and GCONV_PATH searched from the repository (CommandPaths, PythonShadows)", () => {
  it("git puts GIT_EXEC_PATH first on the PATH of what it starts: git fetch ran the repository's git-upload-pack", async () => {
    const cwd = folder([], [])
    const origin = repository("", join(base, `o${made++}`))
    execFileSync("git", ["commit", "-q", "--allow-empty", "-m", "i"], { cwd: origin, stdio: "pipe" })
    execFileSync("git", ["remote", "add", "origin", origin], { cwd, stdio: "pipe" })
    mkdirSync(join(cwd, "x"))
    writeFileSync(join(cwd, "x", "git-upload-pack"), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
    chmodSync(join(cwd, "x", "git-upload-pack"), 0o755)
    expect(runs(cwd, "GIT_EXEC_PATH=x git fetch origin")).toBe(true)
    const decided = await decide(cwd, "GIT_EXEC_PATH=x git fetch origin")
    expect(decided.decision).toBe("ask")
    expect(decided.reason).toContain("x/git-upload-pack")
    await programAsks("GIT_EXEC_PATH=bin git status", ["bin"], "bin/git", false)
  })

  it("a shared library in a relative LD_LIBRARY_PATH entry stands in for the one ls loads (built with gcc where installed)", async () => {
    const cwd = folder([], [])
    writeFileSync(join(cwd, "f.c"), `#include <stdio.h>\n__attribute__((constructor)) static void f(void) { fclose(fopen(${JSON.stringify(join(cwd, "ran"))}, "w")); }\n`)
    if (existsSync("/usr/bin/gcc")) {
      execFileSync("/usr/bin/gcc", ["-shared", "-fPIC", "-o", "libselinux.so.1", "f.c"], { cwd, stdio: "pipe" })
      expect(runs(cwd, "LD_LIBRARY_PATH=. ls")).toBe(true)
    } else writeFileSync(join(cwd, "libselinux.so.1"), "")
    for (const line of ["LD_LIBRARY_PATH=. ls", "export LD_LIBRARY_PATH=:/usr/lib; ls", "GCONV_PATH=. iconv -f UTF-8 f.c"]) {
      const decided = await decide(cwd, line)
      expect(decided.decision, line).toBe("ask")
    }
    writeFileSync(join(cwd, "gconv-modules"), "")
    expect((await decide(cwd, "GCONV_PATH=. iconv -f UTF-8 f.c")).reason).toContain("gconv-modules")
    // No library there: the rule's.
    expect((await decide(folder([]), "LD_LIBRARY_PATH=. ls")).decision).toBe("allow")
  })
})

describe("a line naming many folders to search first (CommandPaths.searchedFolders)", () => {
  it("reads at most 64 of them; past that it asks", async () => {
    const many = Array.from({ length: 65 }, (_, i) => `d${i}`).join(":")
    expect((await decide(folder([]), `PATH=${many}:/usr/bin git status`)).decision).toBe("ask")
    const few = Array.from({ length: 64 }, (_, i) => `d${i}`).join(":")
    expect((await decide(folder([]), `PATH=${few}:/usr/bin git status`)).decision).toBe("allow")
  })
})
