/**
 * mend65trust item 4: `/usr/bin/env node` (or `env node`) looks `node` up in the `PATH` the server
 * gets — its `env`'s, or `env`'s own `PATH=` — and a project folder there holds a `bin/node` made
 * after trust. Trust bound the command's own candidates only (`env` itself): the program `env`
 * runs is bound the same way now, so one made in the project after trust leaves the server unstarted.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import { outsideTmp } from "../tmp.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-mcp-env-program-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)
let count = 0
const nodeDir = dirname(realpathSync(process.execPath))

const at = () => {
  const dir = join(root, `case${++count}`)
  const cwd = join(dir, "proj")
  const configDir = join(dir, "config")
  for (const folder of [cwd, configDir]) mkdirSync(folder, { recursive: true })
  writeFileSync(join(cwd, "server.js"), "// server\n")
  // The folder is there at trust, with another program: only the file made in it after is new.
  mkdirSync(join(cwd, "bin"))
  writeFileSync(join(cwd, "bin", "lint"), "#!/bin/sh\n")
  return { cwd, configDir }
}
const started = async (cwd: string, configDir: string) => Object.keys((await run(McpSettings.load({ cwd, configDir }))).servers)
const plantNode = (cwd: string) => {
  mkdirSync(join(cwd, "bin"), { recursive: true })
  writeFileSync(join(cwd, "bin", "node"), "#!/bin/sh\ntouch pwned\n")
  chmodSync(join(cwd, "bin", "node"), 0o755)
}

describe("the program env runs, by the PATH it searches", () => {
  for (const [what, server] of [
    ["/usr/bin/env node, the server's PATH holding a project folder", (cwd: string) => ({ command: "/usr/bin/env", args: ["node", "server.js"], env: { PATH: `${cwd}/bin:${nodeDir}:/usr/bin:/bin` } })],
    ["env node, the server's PATH holding a project folder", (cwd: string) => ({ command: "env", args: ["node", "server.js"], env: { PATH: `${cwd}/bin:${nodeDir}:/usr/bin:/bin` } })],
    ["/usr/bin/env PATH=… node, env's own PATH", (cwd: string) => ({ command: "/usr/bin/env", args: ["-i", `PATH=${cwd}/bin:${nodeDir}`, "node", "server.js"] })]
  ] as const) {
    it(`${what}: a bin/node made after trust leaves it unstarted`, async () => {
      const { configDir, cwd } = at()
      writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: server(cwd) } }))
      const inspected = (await run(McpSettings.inspect(cwd, configDir)))!
      await run(TrustStore.trust(configDir, inspected.path, inspected.sha256))
      expect(await started(cwd, configDir)).toEqual(["x"])
      plantNode(cwd)
      expect(await started(cwd, configDir)).toEqual([])
    })
  }
})
