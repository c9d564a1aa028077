/**
 * mend65trust item 3: a server's script named through a link or `..` outside the project
 * (`node /outside/link.js`, a link into the project; `python3 ../link/server.py`) was bound by its
 * text alone, which is outside the project: trust bound nothing, and the project's file it leads to,
 * changed after trust, ran at the next start. Scripts are bound by real path now, as `PATH` folders
 * are; one named through `/proc` or `/dev/fd` is refused.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import { outsideTmp } from "../tmp.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-mcp-script-link-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)
let count = 0

const at = () => {
  const dir = join(root, `case${++count}`)
  const cwd = join(dir, "proj")
  const configDir = join(dir, "config")
  const outside = join(dir, "outside")
  for (const folder of [cwd, configDir, outside]) mkdirSync(folder, { recursive: true })
  return { dir, cwd, configDir, outside }
}
const trusted = async (cwd: string, configDir: string, server: { command: string; args: Array<string> }) => {
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: server } }))
  const inspected = (await run(McpSettings.inspect(cwd, configDir)))!
  await run(TrustStore.trust(configDir, inspected.path, inspected.sha256))
  expect(Object.keys((await run(McpSettings.load({ cwd, configDir }))).servers)).toEqual(["x"])
}
const started = async (cwd: string, configDir: string) => Object.keys((await run(McpSettings.load({ cwd, configDir }))).servers)

describe("a server's script by real path", () => {
  it("node /outside/link.js, a link to the project's file: its change after trust is seen", async () => {
    const { configDir, cwd, outside } = at()
    writeFileSync(join(cwd, "server.js"), "// the server you trusted\n")
    symlinkSync(join(cwd, "server.js"), join(outside, "link.js"))
    await trusted(cwd, configDir, { command: "node", args: [join(outside, "link.js")] })
    writeFileSync(join(cwd, "server.js"), "require('child_process').execSync('touch pwned')\n")
    expect(await started(cwd, configDir)).toEqual([])
  })

  it("node /outside/dir/server.js, a folder on the way that links into the project", async () => {
    const { configDir, cwd, outside } = at()
    mkdirSync(join(cwd, "tools"))
    writeFileSync(join(cwd, "tools", "server.js"), "// the server you trusted\n")
    symlinkSync(join(cwd, "tools"), join(outside, "dir"))
    await trusted(cwd, configDir, { command: "node", args: [join(outside, "dir", "server.js")] })
    writeFileSync(join(cwd, "tools", "server.js"), "// changed\n")
    expect(await started(cwd, configDir)).toEqual([])
  })

  it("python3 ../link/server.py, spelt through .. and a link back into the project", async () => {
    const { configDir, cwd, dir } = at()
    writeFileSync(join(cwd, "server.py"), "# the server you trusted\n")
    symlinkSync(cwd, join(dir, "link"))
    await trusted(cwd, configDir, { command: "python3", args: ["../link/server.py"] })
    writeFileSync(join(cwd, "server.py"), "# changed\n")
    expect(await started(cwd, configDir)).toEqual([])
  })

  it("node /proc/self/cwd/server.js is refused: it names the project only in the server", async () => {
    const { configDir, cwd } = at()
    writeFileSync(join(cwd, "server.js"), "// server\n")
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: "node", args: ["/proc/self/cwd/server.js"] } } }))
    const refused = await Effect.runPromise(Effect.flip(McpSettings.inspect(cwd, configDir)).pipe(Effect.provide(NodeContext.layer)))
    expect(refused.message).toContain("/proc")
  })
})
