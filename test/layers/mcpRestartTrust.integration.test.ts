/**
 * Red team 7, item 5 (one level deeper than item 1): a trusted project's MCP server that stops in a
 * session (a crash, a timeout) is started again by its next call — running the workspace's files as
 * they are then, outside the sandbox. The model could rewrite `tools/mcp.mjs` (`write_file` in
 * `acceptEdits`), make the server stop, and have its code run within the same session, before any
 * new session looked at trust again. A project's server is now started again only while the
 * `.mcp.json` and the files it names are still as trusted (`McpSettings.Loaded.recheck`).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import * as McpTools from "../../src/layers/McpTools.js"
import { outsideTmp } from "../tmp.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"

const fixture = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")
const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-mcp-restart-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("a trusted project's MCP server started again in a session", () => {
  it.scoped("is not started again once the file it runs changed; unchanged, it is", () =>
    Effect.gen(function*() {
      const cwd = join(root, "repo")
      const configDir = join(root, "config")
      const marker = join(root, "changed-code-ran")
      mkdirSync(join(cwd, "tools"), { recursive: true })
      mkdirSync(configDir)
      writeFileSync(join(cwd, "tools", "mcp.mjs"), `import ${JSON.stringify(fixture)}\n`)
      writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: process.execPath, args: ["tools/mcp.mjs"] } } }))
      const project = (yield* McpSettings.inspect(cwd, configDir))!
      yield* TrustStore.trust(configDir, project.path, project.sha256)
      const loaded = yield* McpSettings.load({ cwd, configDir })
      expect(Object.keys(loaded.servers)).toEqual(["x"])
      const tools = yield* McpTools.make({ servers: loaded.servers, cwd, folders: loaded.folders, mayStart: loaded.recheck })
      const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
      const call = (tool: string, args: Record<string, unknown>) =>
        Effect.either(Effect.flatMap(tools.router.prepare({ toolCallId: "c", tool: `mcp__x__${tool}`, args: args as never }, cwd), (prepared) => tools.router.execute(prepared, context)))
      expect(Either.isRight(yield* call("echo", { text: "a" }))).toBe(true)
      // Stopped and started again, unchanged: it still works.
      yield* call("crash", {})
      expect(Either.isRight(yield* call("echo", { text: "b" }))).toBe(true)
      // The model's write, then a stop.
      writeFileSync(join(cwd, "tools", "mcp.mjs"), `import { writeFileSync } from "node:fs"\nwriteFileSync(${JSON.stringify(marker)}, "ran")\nimport ${JSON.stringify(fixture)}\n`)
      yield* call("crash", {})
      const after = yield* call("echo", { text: "c" })
      expect(existsSync(marker)).toBe(false)
      expect(Either.isLeft(after) && after.left.message).toContain("changed since")
    }).pipe(Effect.provide(NodeContext.layer)), 60_000)
})
