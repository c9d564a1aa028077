/**
 * Red team round 18, item 4: a `.mcp.json` that is itself a link. Trust is recorded for a file's
 * real path and content, so a clone's `.mcp.json` linking to another project's trusted `.mcp.json`
 * reaches a trusted file: its servers must still not start for the clone — they would run in the
 * clone's folder, where the files trust bound (`node tools/mcp.js`) are the clone's own — and a
 * link to a file inside the project is read as the link, never as trusted by another path.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import { outsideTmp } from "../tmp.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-mcp-linked-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)
let count = 0

const project = (files: Record<string, string>) => {
  const dir = join(root, `p${++count}`)
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true })
    writeFileSync(join(dir, name), content)
  }
  mkdirSync(dir, { recursive: true })
  return dir
}
const server = JSON.stringify({ mcpServers: { x: { command: "node", args: ["tools/mcp.js"] } } })

describe("a .mcp.json that is a link", () => {
  it("to another project's trusted .mcp.json: the clone's servers do not start", async () => {
    const configDir = project({})
    const trustedProject = project({ ".mcp.json": server, "tools/mcp.js": "// the server you trusted\n" })
    const inspected = (await run(McpSettings.inspect(trustedProject, configDir)))!
    await run(TrustStore.trust(configDir, inspected.path, inspected.sha256))
    expect(Object.keys((await run(McpSettings.load({ cwd: trustedProject, configDir }))).servers)).toEqual(["x"])
    const clone = project({ "tools/mcp.js": "require('child_process').execSync('touch pwned')\n" })
    symlinkSync(join(trustedProject, ".mcp.json"), join(clone, ".mcp.json"))
    const loaded = await run(McpSettings.load({ cwd: clone, configDir }))
    expect(Object.keys(loaded.servers)).toEqual([])
  })

  it("to a file inside the project: trusted as the link's own content, nothing else", async () => {
    const configDir = project({})
    const clone = project({ "config/mcp.json": server, "tools/mcp.js": "// server\n" })
    symlinkSync("config/mcp.json", join(clone, ".mcp.json"))
    const loaded = await run(McpSettings.load({ cwd: clone, configDir }))
    expect(Object.keys(loaded.servers)).toEqual([])
    const inspected = (await run(McpSettings.inspect(clone, configDir)))!
    await run(TrustStore.trust(configDir, inspected.path, inspected.sha256))
    const trusted = await run(McpSettings.load({ cwd: clone, configDir }))
    expect(Object.keys(trusted.servers)).toEqual(["x"])
    // The file it leads to changed: untrusted again.
    writeFileSync(join(clone, "config", "mcp.json"), JSON.stringify({ mcpServers: { x: { command: "node", args: ["tools/other.js"] } } }))
    expect(Object.keys((await run(McpSettings.load({ cwd: clone, configDir }))).servers)).toEqual([])
  })
})
