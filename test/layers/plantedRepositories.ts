/** The red-team loader tests' common ground: fresh repositories holding given files, and whether a line ran one of them. */
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { execFileSync } from "node:child_process"
import { scratch } from "./gitRepositories.js"

/** A scratch folder `base` for `name`, and `folder`, which makes a repository below it holding `files`. */
export const plantedRepositories = (name: string) => {
  const { base, repository } = scratch(name)
  let made = 0
  /** A repository holding `files` (an executable when the text starts with `#!`). */
  const folder = (files: Readonly<Record<string, string>> = {}) => {
    const cwd = repository("", join(base, `r${made++}`))
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(cwd, path)), { recursive: true })
      writeFileSync(join(cwd, path), text)
      if (text.startsWith("#!")) chmodSync(join(cwd, path), 0o755)
    }
    return cwd
  }
  return { base, folder }
}

/** Whether running `line` with bash in `cwd` left `mark` there (the repository's file ran). */
export const runs = (cwd: string, line: string, mark = "ran") => {
  rmSync(join(cwd, mark), { force: true })
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // What counts is whether the repository's file ran.
  }
  return existsSync(join(cwd, mark))
}

/** A Python line that leaves `ran` in `cwd`. */
export const touches = (cwd: string) => `open(${JSON.stringify(join(cwd, "ran"))}, "w")\n`
