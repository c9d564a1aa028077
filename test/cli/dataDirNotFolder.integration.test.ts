/**
 * A repository whose `.effect-agent` is a file, or whose `.effect-agent/sessions` or `blobs` is a
 * file or a named pipe, made every `run` in the clone (default data dir) fail with the store's
 * `ENOTDIR` error, which said neither why nor what to do. Such a data dir is now refused up front
 * as a linked one is: one line naming the entry and `--data-dir`, exit 1, nothing written, nothing
 * waited on. Each run is killed if it does not end, so a hang fails the test.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runOrKill } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-data-dir-kind-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const script = join(dir, "script.json")
writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["the answer"] }] }))

const cases: ReadonlyArray<readonly [what: string, entry: string, plant: (cwd: string) => void]> = [
  [".effect-agent as a file", ".effect-agent", (cwd) => writeFileSync(join(cwd, ".effect-agent"), "x")],
  [".effect-agent as a named pipe", ".effect-agent", (cwd) => void execFileSync("mkfifo", [join(cwd, ".effect-agent")])],
  ["sessions as a file", ".effect-agent/sessions", (cwd) => writeFileSync(join(cwd, ".effect-agent", "sessions"), "x")],
  ["sessions as a named pipe", ".effect-agent/sessions", (cwd) => void execFileSync("mkfifo", [join(cwd, ".effect-agent", "sessions")])],
  ["blobs as a file", ".effect-agent/blobs", (cwd) => writeFileSync(join(cwd, ".effect-agent", "blobs"), "x")]
]

describe("a data dir whose folders are not folders is refused with one plain line", () => {
  cases.forEach(([what, entry, plant], n) => {
    it(what, async () => {
      const cwd = join(dir, `repo-${n}`)
      mkdirSync(cwd)
      if (entry !== ".effect-agent") mkdirSync(join(cwd, ".effect-agent"))
      plant(cwd)
      const before = readdirSync(cwd).sort()
      const done = await runOrKill(["run", "hello", "--script", script], cwd)
      expect(done.signal).toBe(null)
      expect(done.code).toBe(1)
      expect(done.stdout).not.toContain("the answer")
      expect(done.stderr).toContain(`${entry} is not a folder`)
      expect(done.stderr).toContain("--data-dir")
      expect(done.stderr).not.toContain("ENOTDIR")
      expect(readdirSync(cwd).sort()).toEqual(before)
    })
  })

  it("a data dir you name elsewhere runs as before", async () => {
    const cwd = join(dir, "named")
    mkdirSync(cwd)
    writeFileSync(join(cwd, ".effect-agent"), "x")
    const done = await runOrKill(["run", "hello", "--script", script, "--data-dir", join(dir, "data")], cwd)
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain("the answer")
  })
})
