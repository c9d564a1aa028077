/**
 * `npm run agent`: it runs the bundled CLI and bundles only when dist is not the bundle of the
 * current sources (`scripts/bundle-cli.mjs --if-stale`: a hash of the inputs and a record of what
 * was written, never clocks). In a copy of the repository (sources, scripts, manifests; the
 * dependencies linked), so the dist other tests run is never rewritten: the first call bundles,
 * the next reuses it, an edited source or a damaged dist bundles again — the command never runs a
 * stale CLI — and `npm run -s agent -- …` prints the command's output only.
 */
import { execFile } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const copy = mkdtempSync(join(tmpdir(), "effect-agent-agent-script-"))
afterAll(() => rmSync(copy, { recursive: true, force: true }))

for (const entry of ["src", "scripts", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"]) {
  cpSync(join(root, entry), join(copy, entry), { recursive: true })
}
symlinkSync(join(root, "node_modules"), join(copy, "node_modules"))

const execAsync = promisify(execFile)
/** `npm run -s agent -- …` in the copy: its stdout. */
const agent = async (...args: ReadonlyArray<string>) =>
  (await execAsync("npm", ["run", "-s", "agent", "--", ...args], { cwd: copy, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 })).stdout

const bin = join(copy, "dist", "cli", "bin.js")
const builtAt = () => statSync(bin).mtimeMs
const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version
/** What `effect-agent --version` prints: the version's one line, nothing else. */
const versionOutput = `${version}\n`
const description = "An Effect-TS runtime for coding agents"

describe("npm run agent", () => {
  it("bundles when dist is missing, reuses a current bundle, bundles again after an edit or damage; stdout is the command's", async () => {
    // No dist: bundled, and stdout is the version alone (no npm banner, nothing from the bundler).
    expect(await agent("--version")).toBe(versionOutput)
    const first = builtAt()

    // Current: not bundled again.
    expect(await agent("--version")).toBe(versionOutput)
    expect(builtAt()).toBe(first)

    // An edited source: the next call runs the edit.
    const cli = join(copy, "src", "cli", "Cli.ts")
    const source = readFileSync(cli, "utf8")
    expect(source).toContain(description)
    writeFileSync(cli, source.replace(description, "An edited description"))
    expect(await agent("--help")).toContain("An edited description")
    const second = builtAt()
    expect(second).not.toBe(first)

    // Edited back to the very same text: bundled again (content decides, not which is newer).
    writeFileSync(cli, source)
    expect(await agent("--help")).toContain(description)

    // A damaged dist (the bundle overwritten, as tsc's unbundled emit would): bundled again.
    writeFileSync(bin, "console.log('stale')\n")
    expect(await agent("--version")).toBe(versionOutput)
  }, 300_000)
})
