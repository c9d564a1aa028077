/**
 * Projects whose `.mcp.json` runs one server, trusted as they are when made: what the tests of the
 * files a trusted server runs (`mcpTrustedFiles`, `mcpUnboundPrograms`) change afterwards, asking
 * whether the server still starts.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"

export const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)

/** Makes, under `root`, a project whose `.mcp.json` runs `server` (with `files` in it), trusted as it is now. */
export const trustedProjects = (root: string) => {
  let count = 0
  return async (server: Record<string, unknown>, files: Record<string, string> = {}) => {
    const at = join(root, "trusted", `case-${++count}`)
    const cwd = join(at, "repo")
    const configDir = join(at, "config")
    mkdirSync(cwd, { recursive: true })
    mkdirSync(configDir, { recursive: true })
    execFileSync("git", ["init", "-q"], { cwd })
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(join(cwd, name, ".."), { recursive: true })
      writeFileSync(join(cwd, name), content)
    }
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: server } }))
    const project = (await run(McpSettings.inspect(cwd, configDir)))!
    await run(TrustStore.trust(configDir, project.path, project.sha256))
    const starts = async () => Object.keys((await run(McpSettings.load({ cwd, configDir }))).servers).includes("x")
    expect(await starts()).toBe(true)
    return { cwd, configDir, starts }
  }
}
