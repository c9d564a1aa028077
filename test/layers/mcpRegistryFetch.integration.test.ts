/**
 * Trust of a `.mcp.json` is for the line the user saw: a server `npx -y foo` runs whatever the
 * registry serves as `foo` at each start, and trust cannot bind that. The summary shown before
 * trusting says so for each such server, and whether an exact version is pinned. Before, it showed
 * the line alone.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as RegistryFetch from "../../src/layers/mcp/RegistryFetch.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-registry-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("a .mcp.json server fetched from a registry", () => {
  it("the trust summary says trust covers the line, not what the registry serves, and whether a version is pinned", async () => {
    const cwd = join(root, "repo")
    mkdirSync(cwd)
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({
      mcpServers: {
        loose: { command: "npx", args: ["-y", "@acme/mcp-server"] },
        pinned: { command: "npx", args: ["-y", "@acme/mcp-server@1.4.2"] },
        py: { command: "uvx", args: ["--from", "acme-mcp==0.3.1", "acme-mcp"] },
        local: { command: "node", args: ["server.js"] }
      }
    }))
    const project = (await Effect.runPromise(McpSettings.inspect(cwd, join(root, "config")).pipe(Effect.provide(NodeContext.layer))))!
    const lines = McpSettings.summary(project)
    const about = (name: string) => lines.filter((line) => line.startsWith(`  ${name}: `) && line.includes("registry"))
    expect(about("loose")).toEqual([expect.stringMatching(/npx fetches "@acme\/mcp-server" from its registry at each start: trust covers this line, not what the registry serves; no exact version is pinned/)])
    expect(about("pinned")).toEqual([expect.stringMatching(/"@acme\/mcp-server@1\.4\.2" .*\(an exact version is pinned\)$/)])
    expect(about("py")).toEqual([expect.stringMatching(/uvx fetches "acme-mcp==0\.3\.1" .*\(an exact version is pinned\)$/)])
    expect(about("local")).toEqual([])
  })

  it("knows the launchers that fetch, and the package each names", () => {
    expect(RegistryFetch.fetchedBy("pnpm", ["dlx", "foo@2.0.0"])).toEqual({ launcher: "pnpm dlx", pkg: "foo@2.0.0", pinned: true })
    expect(RegistryFetch.fetchedBy("/usr/bin/bunx", ["foo@latest"])).toEqual({ launcher: "bunx", pkg: "foo@latest", pinned: false })
    expect(RegistryFetch.fetchedBy("npm", ["exec", "--package=foo@^1", "--", "foo"])).toEqual({ launcher: "npm exec", pkg: "foo@^1", pinned: false })
    expect(RegistryFetch.fetchedBy("uv", ["tool", "run", "acme"])).toMatchObject({ launcher: "uv tool", pkg: "acme" })
    expect(RegistryFetch.fetchedBy("pipx", ["run", "acme==1.0.0"])).toMatchObject({ pinned: true })
    expect(RegistryFetch.fetchedBy("npm", ["run", "serve"])).toBeUndefined()
    expect(RegistryFetch.fetchedBy("node", ["server.js"])).toBeUndefined()
  })
})
