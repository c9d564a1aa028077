/**
 * Review 64a: a trusted `.mcp.json` whose bare command is found through a `PATH` folder that reaches
 * the project without naming it — `/proc/self/cwd/bin` (the server's own cwd, the project), or a
 * link to the project outside it — ran the project's `bin/mcp-server`, bound by no name: changing
 * it after trust left the file trusted. And the connection fell back to the bare name when it found
 * no program, so the child searched its `PATH` itself, after moving into the project.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpConnection from "../../src/layers/mcp/McpConnection.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import { outsideTmp } from "../tmp.js"
import { run, trustedProjects } from "./mcpTrustedProject.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "review64a-mcp-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const trusted = trustedProjects(root)

describe("review64a: PATH folders that reach the project without naming it", () => {
  it("/proc/self/cwd/bin: trust refuses it, naming the folder", async () => {
    const at = join(root, "proc")
    mkdirSync(join(at, "repo", "bin"), { recursive: true })
    mkdirSync(join(at, "config"))
    writeFileSync(join(at, "repo", "bin", "mcp-server"), "#!/bin/sh\nexec node server.js\n")
    writeFileSync(join(at, "repo", ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: "mcp-server", env: { PATH: "/proc/self/cwd/bin:/usr/bin:/bin" } } } }))
    const inspected = await run(Effect.either(McpSettings.inspect(join(at, "repo"), join(at, "config"))))
    expect(Either.isLeft(inspected) && inspected.left.message).toContain(`its server "x" names "/proc/self/cwd/bin", which leads through /proc or /dev`)
  })

  it("a link to the project outside it, made after trust, named in PATH: changing bin/mcp-server untrusts it", async () => {
    const link = join(root, "link-to-repo")
    const at = await trusted({ command: "mcp-server", env: { PATH: `${link}/bin:/usr/bin:/bin` } }, { "bin/mcp-server": "#!/bin/sh\nexec node server.js\n" })
    symlinkSync(at.cwd, link)
    writeFileSync(join(at.cwd, "bin/mcp-server"), "#!/bin/sh\ntouch /tmp/pwned\n")
    expect(await at.starts()).toBe(false)
  })

  it("a link to the project there at trust: the summary shows the PATH, and changing bin/mcp-server untrusts it", async () => {
    const link = join(root, "link-to-repo-2")
    const repo = join(root, "trusted", "case-2", "repo")
    mkdirSync(repo, { recursive: true })
    symlinkSync(repo, link)
    const at = await trusted({ command: "mcp-server", env: { PATH: `${link}/bin:/usr/bin:/bin` } }, { "bin/mcp-server": "#!/bin/sh\nexec node server.js\n" })
    expect(at.cwd).toBe(repo)
    const project = (await run(McpSettings.inspect(at.cwd, at.configDir)))!
    expect(McpSettings.summary(project).join("\n")).toContain(`its PATH is ${JSON.stringify(`${link}/bin:/usr/bin:/bin`)}, which names the project's`)
    expect(McpSettings.summary(project).join("\n")).toContain("  bin/mcp-server")
    writeFileSync(join(at.cwd, "bin/mcp-server"), "#!/bin/sh\ntouch /tmp/pwned\n")
    expect(await at.starts()).toBe(false)
  })
})

const connection = (cwd: string, server: { command: string; args?: Array<string>; env?: Record<string, string> }) =>
  McpConnection.make({ name: "x", server, cwd, prefix: [], connectTimeout: Duration.minutes(5), callTimeout: Duration.hours(1) })

layer(NodeContext.layer)("review64a: the program a server runs by name", (it) => {
  const project = () => {
    const cwd = realpathSync(mkdtempSync(join(root, "conn-")))
    mkdirSync(join(cwd, "repo", "bin"), { recursive: true })
    const marker = join(cwd, "ran")
    writeFileSync(join(cwd, "repo", "bin", "mcp-server"), `#!/bin/sh\ntouch ${JSON.stringify(marker)}\n`)
    chmodSync(join(cwd, "repo", "bin", "mcp-server"), 0o755)
    return { outside: cwd, cwd: join(cwd, "repo"), marker }
  }

  it.effect("a PATH through /proc is never searched: not found, typed, and the project's file does not run", () =>
    Effect.gen(function*() {
      const { cwd, marker } = project()
      const conn = yield* connection(cwd, { command: "mcp-server", env: { PATH: "/proc/self/cwd/bin:/usr/bin:/bin" } })
      const listed = yield* Effect.either(conn.listTools)
      yield* conn.close
      expect(Either.isLeft(listed) && listed.left.message).toBe(`MCP server "x": "mcp-server" was not found`)
      expect(existsSync(marker)).toBe(false)
    }))

  it.effect("the project's program reached through a link outside it is refused", () =>
    Effect.gen(function*() {
      const { cwd, marker, outside } = project()
      mkdirSync(join(outside, "links"))
      symlinkSync(join(cwd, "bin", "mcp-server"), join(outside, "links", "mcp-server"))
      const conn = yield* connection(cwd, { command: "mcp-server", env: { PATH: `${join(outside, "links")}:/usr/bin:/bin` } })
      const listed = yield* Effect.either(conn.listTools)
      yield* conn.close
      expect(Either.isLeft(listed) && listed.left.message).toContain(`"mcp-server" is the project's "bin/mcp-server", reached through a link or a PATH trust does not cover`)
      expect(existsSync(marker)).toBe(false)
    }))
})
