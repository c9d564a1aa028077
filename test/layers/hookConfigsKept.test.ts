/**
 * `HookConfigsKept.keep` after a command, called directly (no sandbox needed): package.json's git
 * hook runners' keys put back without losing the user's bytes (review 57b).
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as HookConfigsKept from "../../src/layers/workspace/HookConfigsKept.js"
import * as RunsLater from "../../src/layers/workspace/RunsLater.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-hook-configs-kept-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
let n = 0
/** A cwd whose package.json is `text` (mode `mode`), and what was there "before a command". */
const workspace = async (text: string, mode = 0o644) => {
  const cwd = NodePath.join(root, `w${++n}`)
  NodeFs.mkdirSync(cwd)
  const file = NodePath.join(cwd, "package.json")
  NodeFs.writeFileSync(file, text, { mode })
  NodeFs.chmodSync(file, mode)
  return { cwd, file, was: await HookConfigsKept.before(cwd, []) }
}

describe("the put-back of package.json's hook keys after a command", () => {
  it("a file that re-serialising would change (CRLF, big and 1.50 numbers, \\u escapes, duplicate keys) comes back byte for byte; the command's is set aside", async () => {
    const before = '{\r\n  "name": "x",\r\n  "big": 12345678901234567890,\r\n  "f": 1.50,\r\n  "s": "caf\\u00e9",\r\n  "scripts": {"a": "b"},\r\n  "scripts": {"test": "vitest"}\r\n}\r\n'
    const { cwd, file, was } = await workspace(before, 0o600)
    const commands = before.replace('"name": "x",', '"name": "x",\r\n  "lint-staged": {"*": "touch /tmp/owned"},')
    NodeFs.writeFileSync(file, commands)
    const said = await HookConfigsKept.keep(was)
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before)
    expect(NodeFs.statSync(file).mode & 0o777).toBe(0o600)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json.set-aside"), "utf8")).toBe(commands)
    expect(said.join("\n")).toContain("package.json.set-aside")
  })

  it("a file re-serialised as it is keeps the command's other change and the file's mode", async () => {
    const before = `{\n  "name": "x",\n  "version": "1.0.0"\n}\n`
    const { cwd, file, was } = await workspace(before, 0o600)
    NodeFs.writeFileSync(file, `{\n  "name": "x",\n  "version": "2.0.0",\n  "simple-git-hooks": {\n    "pre-commit": "touch /tmp/owned"\n  }\n}\n`)
    const said = await HookConfigsKept.keep(was)
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before.replace("1.0.0", "2.0.0"))
    expect(NodeFs.statSync(file).mode & 0o777).toBe(0o600)
    expect(NodeFs.existsSync(NodePath.join(cwd, "package.json.set-aside"))).toBe(false)
    expect(said).toEqual(["package.json's simple-git-hooks (put back as they were)"])
  })
})

// Review 57b: husky 4's, simple-git-hooks' and nano-staged's own config files were neither asked for
// by the file tools nor set aside after a command that made them.
const hookRunnerConfigs = [
  ".huskyrc", ".huskyrc.json", ".huskyrc.js", "husky.config.js", ".simple-git-hooks.json", ".simple-git-hooks.cjs", "simple-git-hooks.cjs",
  "simple-git-hooks.js", "simple-git-hooks.mjs", "simple-git-hooks.json", ".nano-staged.json", "nano-staged.json", "nano-staged.cjs",
  ".nano-staged.mjs", "nano-staged.yaml", ".nanostagedrc"
]
describe("hook runners' own config files", () => {
  it("are what the file tools protect, at any depth and in any case", () => {
    for (const name of hookRunnerConfigs) {
      expect(RunsLater.inProtectedFolder(name), name).toBe(true)
      expect(RunsLater.inProtectedFolder(`packages/web/${name.toUpperCase()}`), name).toBe(true)
    }
    for (const name of ["husky.md", "simple-git-hooks.md", "nano-staged.txt", "src/huskyrc.ts"]) expect(RunsLater.inProtectedFolder(name), name).toBe(false)
  })

  it("one a command made where there was none is set aside", async () => {
    const { cwd, was } = await workspace(`{}\n`)
    for (const name of hookRunnerConfigs) NodeFs.writeFileSync(NodePath.join(cwd, name), "touch /tmp/owned\n")
    const said = (await HookConfigsKept.keep(was)).join("\n")
    for (const name of hookRunnerConfigs) {
      expect(NodeFs.existsSync(NodePath.join(cwd, name)), name).toBe(false)
      expect(said).toContain(`${name}.set-aside`)
    }
  })
})
