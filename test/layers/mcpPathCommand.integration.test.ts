/**
 * Review 63b: a trusted `.mcp.json` whose program is found through a folder of the server's own
 * `PATH` inside the project, or that a package launcher runs from the project's `node_modules/.bin`
 * or `.venv/bin`. Changing (or making) that file after trust left the `.mcp.json` trusted: the new
 * code ran outside the sandbox at the next start.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import { outsideTmp } from "../tmp.js"
import { run, trustedProjects } from "./mcpTrustedProject.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "review63b-mcp-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const trusted = trustedProjects(root)

describe("review63b: a program the server's PATH finds in the project is bound", () => {
  it("absolute PATH folder in the project: changing bin/mcp-server untrusts it, and the summary names the folder", async () => {
    const repo = join(root, "trusted", "case-1", "repo")
    const at = await trusted({ command: "mcp-server", env: { PATH: `${repo}/bin:/usr/bin:/bin` } }, { "bin/mcp-server": "#!/bin/sh\nexec node server.js\n" })
    expect(at.cwd).toBe(repo)
    const project = (await run(McpSettings.inspect(at.cwd, at.configDir)))!
    expect(McpSettings.summary(project).join("\n")).toContain(`its PATH is ${JSON.stringify(`${repo}/bin:/usr/bin:/bin`)}`)
    writeFileSync(join(at.cwd, "bin/mcp-server"), "#!/bin/sh\ntouch /tmp/pwned\n")
    expect(await at.starts()).toBe(false)
  })
  it("relative PATH folder: creating bin/node untrusts it", async () => {
    const at = await trusted({ command: "node", args: ["/opt/srv.mjs"], env: { PATH: "bin:/usr/bin:/bin" } }, { "bin/README": "tools\n" })
    writeFileSync(join(at.cwd, "bin/node"), "#!/bin/sh\ntouch /tmp/pwned\n")
    expect(await at.starts()).toBe(false)
  })
})

describe("review63b: launchers that run the project's own copy of a program bind it", () => {
  for (const [server, file] of [
    [{ command: "pnpm", args: ["exec", "mcp-server"] }, "node_modules/.bin/mcp-server"],
    [{ command: "pnpm", args: ["mcp-server"] }, "node_modules/.bin/mcp-server"],
    [{ command: "yarn", args: ["mcp-server"] }, "node_modules/.bin/mcp-server"],
    [{ command: "yarn", args: ["exec", "mcp-server"] }, "node_modules/.bin/mcp-server"],
    [{ command: "bun", args: ["run", "mcp-server"] }, "node_modules/.bin/mcp-server"],
    [{ command: "uv", args: ["run", "mcp-server"] }, ".venv/bin/mcp-server"],
    [{ command: "poetry", args: ["run", "mcp-server"] }, ".venv/bin/mcp-server"]
  ] as const) {
    it(`${server.command} ${server.args.join(" ")}: changing ${file} untrusts it`, async () => {
      const at = await trusted(server, { [file]: "#!/bin/sh\necho ok\n", "package.json": "{}" })
      writeFileSync(join(at.cwd, file), "#!/bin/sh\ntouch /tmp/pwned\n")
      expect(await at.starts()).toBe(false)
    })
  }
})
