/**
 * `effect-agent sessions` with titles (issue 23) as a real subprocess: each line ends with the
 * session's title (its first message's, or the one `sessions rename` gave), never a control
 * character from a hostile message; `--cwd` and `--search` narrow the list.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run, sessionIdIn } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-sessions-"))
const dataDir = join(dir, "data")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const listed = async (...flags: ReadonlyArray<string>) => {
  const result = await run(["sessions", "--data-dir", dataDir, ...flags])
  expect(result.code, result.stderr).toBe(0)
  return result.stdout
}

describe("effect-agent sessions: titles, rename, --cwd, --search", () => {
  it("lists each session with its title; rename replaces it; --cwd and --search narrow the list; a hostile title stays inert", async () => {
    const web = join(dir, "web")
    const api = join(dir, "api", "nested")
    mkdirSync(web, { recursive: true })
    mkdirSync(api, { recursive: true })
    const parser = sessionIdIn((await run(["run", "Refactor the parser\nso it streams", "--data-dir", dataDir], { cwd: web })).stderr)!
    const hostile = sessionIdIn((await run(["run", "\x1b]0;pwned\x07\x1b[2J\x1b[31mDeploy\x1b[0m now\x07 please", "--data-dir", dataDir], { cwd: api })).stderr)!
    expect(parser).toBeDefined()
    expect(hostile).toBeDefined()

    const all = await listed()
    expect(all).toMatch(new RegExp(`^${parser} .*  Refactor the parser$`, "m"))
    expect(all).toMatch(new RegExp(`^${hostile} .*  Deploy now please$`, "m"))
    // eslint-disable-next-line no-control-regex
    expect(all).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/)

    const renamed = await run(["sessions", "rename", parser, "Parser \x1b[1mwork\x1b[0m\n", "--data-dir", dataDir])
    expect(renamed.code, renamed.stderr).toBe(0)
    expect(renamed.stdout).toBe(`${parser}  Parser work\n`)
    expect(await listed()).toMatch(new RegExp(`^${parser} .*  Parser work$`, "m"))

    // Narrowed: by directory (and what is under it), by words of the title or the id, any case.
    expect((await listed("--cwd", join(dir, "api"))).trim().split("\n").map((l) => l.split(" ")[0])).toEqual([hostile])
    expect((await listed("--cwd", web, "--search", "PARSER")).trim().split("\n").map((l) => l.split(" ")[0])).toEqual([parser])
    expect((await listed("--search", hostile.slice(-6))).trim().split("\n").map((l) => l.split(" ")[0])).toEqual([hostile])
    const none = await run(["sessions", "--search", "no such words", "--data-dir", dataDir])
    expect(none).toMatchObject({ code: 0, stdout: "" })
    expect(none.stderr).toContain("No session matches.")

    // A title that is empty once made plain is refused, naming the field; nothing changes.
    const empty = await run(["sessions", "rename", parser, "\x1b[2J  ", "--data-dir", dataDir])
    expect(empty.code).toBe(1)
    expect(empty.stderr).toMatch(/title.*must not be empty/)
    const unknown = await run(["sessions", "rename", "sess_nope", "x", "--data-dir", dataDir])
    expect(unknown.code).toBe(1)
    expect(await listed()).toMatch(new RegExp(`^${parser} .*  Parser work$`, "m"))
  })
})
