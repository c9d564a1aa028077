/** review48: uvRun (CommandPaths.ts:447-461) returns at the first -m, before later --directory, and misses a clustered -m. uv not installed: decisions only. */
import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { decide } from "../layers/exactGitRule.js"
import { scratch } from "../layers/gitRepositories.js"
const { base } = scratch("review48uv")
let made = 0
const pythonFolder = (module: string, below = "") => {
  const cwd = join(base, `p${made++}`)
  mkdirSync(join(cwd, below), { recursive: true })
  writeFileSync(join(cwd, below, module), `print("ran")\n`)
  writeFileSync(join(cwd, below, "data.json"), `{"a": 1}\n`)
  return cwd
}
describe("uv run's -m", () => {
  it("control: uv run --directory sub -m json.tool asks", async () => {
    expect((await decide(pythonFolder("json.py", "sub"), "uv run --directory sub -m json.tool data.json")).policy).toBe("repository-python")
  })
  for (const [line, below] of [
    ["uv run -m --directory sub json.tool data.json", "sub"],
    ["uv run -m --directory=sub json.tool data.json", "sub"],
    ["uv run -qm json.tool data.json", ""],
    // mend48: --module as a flag, and -m after a value-taking option's value.
    ["uv run --module --directory sub json.tool data.json", "sub"],
    ["uv run -p 3 -qm --directory sub json.tool data.json", "sub"]
  ] as const) {
    it(line, async () => {
      expect((await decide(pythonFolder("json.py", below), line)).policy).toBe("repository-python")
    })
  }
  it("a group whose `p` takes the rest is no -m: uv run -pm json.tool runs the program json.tool", async () => {
    expect((await decide(pythonFolder("json.py", ""), "uv run -pm json.tool data.json")).policy).not.toBe("repository-python")
  })
})
