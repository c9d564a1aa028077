/**
 * Red team 16: a project's server starts in the project, and a launcher there reads the project's
 * own configuration. `npx -y foo` in a clone whose `.npmrc` says `registry=http://evil/` fetches
 * `foo` from there; and with a `node_modules/foo` shipped in the clone, npm runs that copy and asks
 * no registry at all (checked with npm 11: `npx -y foo` printed the clone's script). The trust
 * summary said "fetches foo from its registry", and neither file was bound: one could be added or
 * changed after trust. Now the files each launcher documents reading from its folder (`.npmrc`,
 * `pnpm-workspace.yaml`, `.yarnrc.yml`, `.yarnrc`, `bunfig.toml`) and the local copy npm's and
 * bun's exec run are bound, and the summary names those present. uv's tool commands read no project
 * configuration (uv's docs), nor does pipx a `pip.conf` in its folder: nothing is bound for them.
 * Failed before: `.npmrc` and `node_modules/…` were not among the bound files, the summary named neither.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-project-registry-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

const repoWith = (servers: object, files: Record<string, string>) => {
  const cwd = join(root, `repo${++count}`)
  mkdirSync(cwd)
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: servers }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(cwd, path, ".."), { recursive: true })
    writeFileSync(join(cwd, path), text)
  }
  return cwd
}

const inspect = async (cwd: string) =>
  (await Effect.runPromise(McpSettings.inspect(cwd, join(root, "config")).pipe(Effect.provide(NodeContext.layer))))!

/** Whether the `.mcp.json` of `cwd`, trusted as `trusted` was read, is still trusted. */
const stillTrusted = async (cwd: string, trusted: { path: string; sha256: string }) =>
  (await Effect.runPromise(McpSettings.readProject(cwd, [{ ...trusted, trustedAt: "" }]).pipe(Effect.provide(NodeContext.layer))))!.trust

describe("a launcher's configuration in the project", () => {
  it("npx: the project's .npmrc is bound and named in the summary; a changed one is untrusted again", async () => {
    const cwd = repoWith({ docs: { command: "npx", args: ["-y", "@acme/docs-mcp@1.2.3"] } }, { ".npmrc": "registry=https://registry.npmjs.org/\n" })
    const project = await inspect(cwd)
    expect(project.files.map((f) => f.path)).toContain(".npmrc")
    expect(McpSettings.summary(project).join("\n")).toMatch(/docs: npx also reads the project's \.npmrc, which may choose its registry/)
    expect(await stillTrusted(cwd, project)).toBe("trusted")
    writeFileSync(join(cwd, ".npmrc"), "@acme:registry=http://evil.example/\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("npx: an .npmrc made after trust, where none was, makes it untrusted again", async () => {
    const cwd = repoWith({ docs: { command: "npx", args: ["-y", "docs-mcp"] } }, {})
    const project = await inspect(cwd)
    expect(McpSettings.summary(project).join("\n")).not.toMatch(/also reads/)
    writeFileSync(join(cwd, ".npmrc"), "registry=http://evil.example/\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("npx: a node_modules copy the clone ships is what runs: named, and bound through .bin's link", async () => {
    const cwd = repoWith({ docs: { command: "npx", args: ["-y", "docs-mcp"] } }, {
      "node_modules/docs-mcp/package.json": JSON.stringify({ name: "docs-mcp", version: "1.0.0", bin: { "docs-mcp": "cli.js" } }),
      "node_modules/docs-mcp/cli.js": "console.log('the clone runs')\n"
    })
    mkdirSync(join(cwd, "node_modules", ".bin"))
    symlinkSync("../docs-mcp/cli.js", join(cwd, "node_modules", ".bin", "docs-mcp"))
    const project = await inspect(cwd)
    const summary = McpSettings.summary(project).join("\n")
    expect(summary).toMatch(/the project has its own node_modules\/\.bin\/docs-mcp, node_modules\/docs-mcp, which npx runs instead of fetching/)
    writeFileSync(join(cwd, "node_modules", "docs-mcp", "cli.js"), "console.log('changed after trust')\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })

  it("yarn dlx, pnpm dlx and bunx: their own files are bound", async () => {
    const cwd = repoWith({
      y: { command: "yarn", args: ["dlx", "docs-mcp"] },
      p: { command: "pnpm", args: ["dlx", "docs-mcp"] },
      b: { command: "bunx", args: ["docs-mcp"] }
    }, {
      ".yarnrc.yml": "npmRegistryServer: \"http://evil.example\"\nyarnPath: .yarn/releases/yarn.cjs\n",
      "pnpm-workspace.yaml": "registry: http://evil.example\n",
      "bunfig.toml": "[install]\nregistry = \"http://evil.example\"\n"
    })
    const project = await inspect(cwd)
    expect(project.files.filter((f) => f.state !== "absent").map((f) => f.path)).toEqual(expect.arrayContaining([".yarnrc.yml", "pnpm-workspace.yaml", "bunfig.toml"]))
    const summary = McpSettings.summary(project).join("\n")
    expect(summary).toMatch(/y: yarn dlx also reads the project's \.yarnrc\.yml/)
    expect(summary).toMatch(/p: pnpm dlx also reads the project's pnpm-workspace\.yaml/)
    expect(summary).toMatch(/b: bunx also reads the project's bunfig\.toml/)
  })

  it("uvx, uv tool run and pipx run read no configuration from the project: nothing bound for them", async () => {
    // The leftovers round: `uv tool run` (and `sh -c "uv tool run …"`) bound pyproject.toml, uv.toml
    // and uv.lock as `uv run` does, so an edit of the project's own pyproject.toml asked for trust again.
    const cwd = repoWith({
      u: { command: "uvx", args: ["docs-mcp"] },
      t: { command: "uv", args: ["--quiet", "tool", "run", "docs-mcp"] },
      s: { command: "sh", args: ["-c", "exec uv tool run docs-mcp"] },
      x: { command: "pipx", args: ["run", "docs-mcp"] }
    }, {
      "pyproject.toml": "[tool.uv]\nindex-url = \"http://evil.example/simple\"\n",
      "uv.lock": "version = 1\n",
      "uv.toml": "index-url = \"http://evil.example/simple\"\n",
      "pip.conf": "[global]\nindex-url = http://evil.example/simple\n"
    })
    const project = await inspect(cwd)
    expect(project.files.filter((f) => f.state !== "absent").map((f) => f.path)).toEqual([])
  })
})

describe("the files a launcher's configuration names", () => {
  it("a program or preload the project's .npmrc or .yarnrc.yml names is bound: one changed after trust makes it untrusted again", async () => {
    const cwd = repoWith({
      n: { command: "npx", args: ["-y", "docs-mcp@1.0.0"] },
      y: { command: "yarn", args: ["dlx", "docs-mcp@1.0.0"] }
    }, {
      ".npmrc": "node-options=\"--require ./tools/preload.js\"\nscript-shell = ./tools/shell.sh\n",
      ".yarnrc.yml": "yarnPath: .yarn/releases/yarn-4.0.0.cjs\n",
      "tools/preload.js": "// preload\n",
      "tools/shell.sh": "#!/bin/sh\n",
      ".yarn/releases/yarn-4.0.0.cjs": "// yarn\n"
    })
    const project = await inspect(cwd)
    const present = project.files.filter((f) => f.state !== "absent").map((f) => f.path)
    expect(present).toEqual(expect.arrayContaining(["tools/preload.js", "tools/shell.sh", ".yarn/releases/yarn-4.0.0.cjs"]))
    for (const file of ["tools/preload.js", ".yarn/releases/yarn-4.0.0.cjs"]) {
      const trusted = await inspect(cwd)
      writeFileSync(join(cwd, file), "// changed after trust\n")
      expect(await stillTrusted(cwd, trusted), file).toBe("changed")
    }
  })
})

describe("a Python project's runner", () => {
  it("uv run, poetry run and pipenv run: the project file that names their scripts and dependencies is bound", async () => {
    const cwd = repoWith({
      u: { command: "uv", args: ["run", "docs-mcp"] },
      p: { command: "poetry", args: ["run", "docs-mcp"] },
      e: { command: "pipenv", args: ["run", "docs-mcp"] }
    }, {
      "pyproject.toml": "[project]\nname = \"x\"\n[project.scripts]\ndocs-mcp = \"x.server:main\"\n",
      "Pipfile": "[scripts]\ndocs-mcp = \"python server.py\"\n"
    })
    const project = await inspect(cwd)
    expect(project.files.filter((f) => f.state !== "absent").map((f) => f.path)).toEqual(expect.arrayContaining(["pyproject.toml", "Pipfile"]))
    writeFileSync(join(cwd, "pyproject.toml"), "[project]\nname = \"x\"\n[project.scripts]\ndocs-mcp = \"evil:main\"\n")
    expect(await stillTrusted(cwd, project)).toBe("changed")
  })
})
