/**
 * A repository's `.mcp.json` or `.effect-agent/settings.json` that is there but cannot be read — a
 * named pipe, a socket, a link to a device, a folder, a file over the cap — made every `run` in the
 * clone exit 1 ("cannot be read (not a regular file)"): a repository could stop the agent running in
 * it. The file is now skipped with one line saying so, as an instructions file is, and the run goes
 * on. Each run is killed if it does not end (SIGKILL: a process blocked in `open(2)` ignores SIGTERM),
 * so a hang fails the test rather than holding the suite; nothing waits on time otherwise.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import * as NodeNet from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runOrKill } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-unreadable-"))
const sockets: Array<NodeNet.Server> = []
afterAll(() => {
  for (const server of sockets) server.close()
  rmSync(dir, { recursive: true, force: true })
})
const script = join(dir, "script.json")
writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["the answer"] }] }))

const plant: Record<string, (path: string) => Promise<void>> = {
  "a named pipe": async (path) => void execFileSync("mkfifo", [path]),
  "a socket": (path) =>
    new Promise((resolve) => {
      const server = NodeNet.createServer().listen(path, () => resolve())
      sockets.push(server)
    }),
  "a link to /dev/zero": async (path) => symlinkSync("/dev/zero", path),
  "a folder": async (path) => mkdirSync(path),
  "a file over the cap": async (path) => writeFileSync(path, " ".repeat(1024 * 1024 + 1))
}

describe("a project's file that cannot be read is skipped, and the run goes on", () => {
  let n = 0
  for (const file of [".mcp.json", ".effect-agent/settings.json"]) {
    for (const [what, make] of Object.entries(plant)) {
      it(`${file} as ${what}`, async () => {
        const cwd = join(dir, `repo-${n++}`)
        mkdirSync(dirname(join(cwd, file)), { recursive: true })
        await make(join(cwd, file))
        const done = await runOrKill(["run", "hello", "--script", script], cwd)
        expect(done.signal).toBe(null)
        expect(done.code, done.stderr).toBe(0)
        expect(done.stdout).toContain("the answer")
        const warnings = done.stderr.split("\n").filter((line) => line.includes(file))
        expect(warnings).toHaveLength(1)
        expect(warnings[0]).toMatch(/cannot be read \(.+\); skipped$/)
      })
    }
  }

  it("a file that reads but is invalid still stops the run, naming it", async () => {
    const cwd = join(dir, "invalid")
    mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
    writeFileSync(join(cwd, ".effect-agent", "settings.json"), "{")
    const done = await runOrKill(["run", "hello", "--script", script], cwd)
    expect(done.code).toBe(1)
    expect(done.stderr).toContain(".effect-agent/settings.json")
  })
})
