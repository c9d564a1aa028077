/**
 * Red team 13: the `package.json` of a folder a `.mcp.json`'s server names is read for its `main`
 * (trust binds the file node would run). It was read with `readFile`, whole, following links, any
 * kind of file: a repository shipping `srv/package.json` as a link to `/dev/zero` (or
 * `/dev/urandom`) made `effect-agent trust` — and, once the user trusted an earlier version of the
 * file, every session's start in the clone — read until the string was too long: 600 MB of memory
 * and seconds of the event loop. Now it is read as a regular file only, at most 1 MiB.
 *
 * Run in a process of its own: its peak memory (`maxRSS`) is the measure, and a test worker's
 * is the peak of every file it ran before.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-package-main-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const mcpFiles = new URL("../../dist/layers/mcp/McpFiles.js", import.meta.url).href

/** What `McpFiles.bound` says of a project whose server runs `node srv`, and how far the process's peak memory rose (MB). */
const boundIn = (cwd: string): { readonly states: Record<string, string>; readonly grewMb: number } => {
  const script = `
    const F = await import(${JSON.stringify(mcpFiles)})
    const before = process.resourceUsage().maxRSS
    const bound = await F.bound(${JSON.stringify(cwd)}, F.namedPaths(${JSON.stringify(cwd)}, { x: { command: "node", args: ["srv"] } }))
    const grewMb = (process.resourceUsage().maxRSS - before) / 1024
    process.stdout.write(JSON.stringify({ states: Object.fromEntries(bound.map((b) => [b.path, b.state])), grewMb }))`
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 120_000 }))
}

const project = (name: string, packageJson: (file: string) => void) => {
  const cwd = join(root, name)
  mkdirSync(join(cwd, "srv"), { recursive: true })
  writeFileSync(join(cwd, "srv", "evil.js"), "// run by node srv\n")
  packageJson(join(cwd, "srv", "package.json"))
  return cwd
}

describe("a server's folder's package.json is read bounded, a regular file only", () => {
  it("a link to /dev/zero is not read into memory", () => {
    const cwd = project("zero", (file) => symlinkSync("/dev/zero", file))
    const { grewMb, states } = boundIn(cwd)
    expect(states["srv/package.json"]).toBe("special")
    expect(grewMb).toBeLessThan(64)
  })

  it("a regular package.json's main is still bound", () => {
    const cwd = project("regular", (file) => writeFileSync(file, JSON.stringify({ main: "evil.js" })))
    expect(boundIn(cwd).states["srv/evil.js"]).toMatch(/^sha256:/)
  })
})
