/**
 * Review 64a: a launcher told to run from a folder of the project (`pnpm --dir tools exec x`, `yarn
 * --cwd tools x`, `npx --prefix tools x`, `uv run --directory tools x`) runs that folder's
 * `node_modules/.bin/x` or `.venv/bin/x`, which trust did not bind (only the root's); and one that
 * builds the project's sources at each start (`uvx --from . x`, `pipx run --spec . x`) bound nothing.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import { outsideTmp } from "../tmp.js"
import { run, trustedProjects } from "./mcpTrustedProject.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "review64a-dirs-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const trusted = trustedProjects(root)

describe("review64a: launchers told to run from a subfolder, or to build the project", () => {
  for (const [server, file] of [
    [{ command: "pnpm", args: ["--dir", "tools", "exec", "mcp-server"] }, "tools/node_modules/.bin/mcp-server"],
    [{ command: "pnpm", args: ["-C", "tools", "mcp-server"] }, "tools/node_modules/.bin/mcp-server"],
    [{ command: "pnpm", args: ["--dir=tools/sub", "exec", "mcp-server"] }, "tools/package.json"],
    [{ command: "yarn", args: ["--cwd", "tools", "mcp-server"] }, "tools/node_modules/.bin/mcp-server"],
    [{ command: "bun", args: ["--cwd", "tools", "run", "mcp-server"] }, "tools/node_modules/.bin/mcp-server"],
    [{ command: "npx", args: ["--prefix", "tools", "mcp-server"] }, "tools/node_modules/.bin/mcp-server"],
    [{ command: "uv", args: ["run", "--directory", "tools", "mcp-server"] }, "tools/.venv/bin/mcp-server"],
    [{ command: "uv", args: ["run", "--project", "tools", "mcp-server"] }, "tools/pyproject.toml"],
    [{ command: "poetry", args: ["-C", "tools", "run", "mcp-server"] }, "tools/.venv/bin/mcp-server"]
  ] as const) {
    it(`${server.command} ${server.args.join(" ")}: changing ${file} untrusts it`, async () => {
      const at = await trusted(server, { [file]: "#!/bin/sh\necho ok\n", "tools/package.json": "{}", "pyproject.toml": "[project]\nname='x'\n" })
      writeFileSync(join(at.cwd, file), "#!/bin/sh\ntouch /tmp/pwned\n")
      expect(await at.starts()).toBe(false)
    })
  }

  for (const [command, args, spec] of [
    ["uvx", ["--from", ".", "mcp-server"], "."],
    ["uv", ["tool", "run", "--from", "./tools", "mcp-server"], "./tools"],
    ["uvx", ["--with", "file:///opt/x", "mcp-server"], "file:///opt/x"],
    ["pipx", ["run", "--spec", ".", "mcp-server"], "."]
  ] as const) {
    it(`${command} ${args.join(" ")}: trust refuses it, naming what it builds`, async () => {
      const at = join(root, "builds", `${command}-${args.length}-${spec.length}`)
      mkdirSync(join(at, "repo"), { recursive: true })
      mkdirSync(join(at, "config"))
      writeFileSync(join(at, "repo", "setup.py"), "print('x')\n")
      writeFileSync(join(at, "repo", ".mcp.json"), JSON.stringify({ mcpServers: { x: { command, args } } }))
      const inspected = await run(Effect.either(McpSettings.inspect(join(at, "repo"), join(at, "config"))))
      expect(Either.isLeft(inspected) && inspected.left.message).toContain(`its server "x" builds ${JSON.stringify(spec)}, local sources, at each start, which trust cannot bind`)
    })
  }
})

// mend65trust item 5: a workspace package's program, named by package (`--filter`, `-w`, yarn's
// `workspace`), ran from a folder trust never bound (only the root's `node_modules/.bin`).
describe("mend65trust: launchers told to run a workspace package's program", () => {
  for (const [command, args, option] of [
    ["pnpm", ["--filter", "tools", "exec", "mcp-server"], "--filter"],
    ["pnpm", ["-F", "tools", "mcp-server"], "-F"],
    ["pnpm", ["--filter=tools", "mcp-server"], "--filter=tools"],
    ["yarn", ["workspace", "tools", "mcp-server"], "workspace"],
    ["npm", ["exec", "-w", "tools", "mcp-server"], "-w"],
    ["npm", ["exec", "--workspace=tools", "--", "mcp-server"], "--workspace=tools"],
    ["bun", ["--filter", "tools", "mcp-server"], "--filter"]
  ] as const) {
    it(`${command} ${args.join(" ")}: trust refuses it, naming the option`, async () => {
      const at = join(root, "workspaces", `${command}-${args.join("_").replace(/[^a-z_-]/gi, "")}`)
      mkdirSync(join(at, "repo", "tools"), { recursive: true })
      mkdirSync(join(at, "config"))
      writeFileSync(join(at, "repo", ".mcp.json"), JSON.stringify({ mcpServers: { x: { command, args } } }))
      const inspected = await run(Effect.either(McpSettings.inspect(join(at, "repo"), join(at, "config"))))
      expect(Either.isLeft(inspected) && inspected.left.message).toContain(`its server "x" runs a workspace package's program (${JSON.stringify(option)})`)
    })
  }
})
