/**
 * Leftovers 41, item 1: trust binds files that are absent when trusted, in the folders above the
 * project too (`McpFiles.foldersAbove`: up to the home folder, or `/` for a project outside it —
 * `/tmp`, a shared mount, where other users write). A file appearing there after trust makes the
 * `.mcp.json` untrusted again, which is right: the launcher reads it. But one naming more paths than
 * trust covers (`McpFiles.limits.names`) made the trusted project's every session fail at its start
 * ("… name over 1024 paths …"), the run with it, not just its MCP servers — a local user's
 * `/tmp/.npmrc`, or the agent's own write of the project's `.npmrc` (an edit in `acceptEdits`),
 * stopped every later session there until the user found the file. As a launcher's configuration
 * that points out (`mcpConfigPointsOut`): such a project is untrusted again at a session's start,
 * and `trust` refuses it. Failed before: the three "still starts" cases failed the load (on main d3707db).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as McpFiles from "../../src/layers/mcp/McpFiles.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-over-limits-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(Effect.either(effect).pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<any>)

/** A project `sub` inside a folder `top` (the folder above it), its `.mcp.json` trusted in a config folder of its own. */
const trustedProject = async () => {
  const top = join(root, `p${++count}`)
  const cwd = join(top, "sub")
  const configDir = join(top, "config")
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { docs: { command: "npx", args: ["-y", "docs-mcp"] } } }))
  writeFileSync(join(cwd, "package.json"), "{}")
  const inspected = await run(McpSettings.inspect(cwd, configDir))
  if (inspected._tag !== "Right") throw new Error(`not trusted: ${inspected.left.message}`)
  await Effect.runPromise(TrustStore.trust(configDir, inspected.right.path, inspected.right.sha256).pipe(Effect.provide(NodeContext.layer)))
  return { top, cwd, configDir }
}

/** An `.npmrc` whose `node-options` names more of its folder's files than trust covers. */
const manyNames = `node-options=${Array.from({ length: McpFiles.limits.names + 10 }, (_, i) => `--require ./m${i}.js`).join(" ")}\n`

describe("a trusted project whose launcher's configuration comes to name more than trust covers", () => {
  for (const where of ["the project's .npmrc", "an .npmrc absent at trust in the folder above"] as const) {
    it(`${where}: the session still starts, the project's servers untrusted`, async () => {
      const { configDir, cwd, top } = await trustedProject()
      const loaded = () => run(McpSettings.load({ cwd, configDir }))
      const before = await loaded()
      expect(before._tag).toBe("Right")
      expect(Object.keys(before.right.servers)).toEqual(["docs"])
      writeFileSync(join(where === "the project's .npmrc" ? cwd : top, ".npmrc"), manyNames)
      const after = await loaded()
      expect(after._tag, after._tag === "Left" ? after.left.message : "").toBe("Right")
      expect(after.right.servers).toEqual({})
      expect(after.right.project.trust).toBe("changed")
      // Review 44, item 3: the note said "(it changed since you trusted it)", naming neither the file
      // nor the limit (the .mcp.json did not change). Failed on main.
      const note = after.right.notes.join("\n")
      expect(note).not.toContain("it changed since you trusted it")
      expect(note).toContain(`${join(where === "the project's .npmrc" ? cwd : top, ".npmrc")} name over ${McpFiles.limits.names} paths`)
      expect(note).toContain("start them from a script it names")
      // `trust --list` says so too, rather than failing.
      const status = await run(McpSettings.entryStatus({ path: join(cwd, ".mcp.json"), sha256: before.right.project.sha256, trustedAt: "" }))
      expect(status._tag === "Right" ? status.right : status.left.message).toBe("changed")
    })
  }

  it("files holding more than trust reads in all (links to one sparse 64 MiB file): the session still starts, the servers untrusted", async () => {
    const { configDir, cwd, top } = await trustedProject()
    const large = join(top, "large.js")
    writeFileSync(large, "")
    truncateSync(large, McpFiles.limits.bytes)
    const links = Array.from({ length: McpFiles.limits.totalBytes / McpFiles.limits.bytes + 1 }, (_, i) => `m${i}.js`)
    for (const link of links) symlinkSync(large, join(cwd, link))
    writeFileSync(join(cwd, ".npmrc"), `node-options=${links.map((link) => `--require ./${link}`).join(" ")}\n`)
    const after = await run(McpSettings.load({ cwd, configDir }))
    expect(after._tag, after._tag === "Left" ? after.left.message : "").toBe("Right")
    expect(after.right.servers).toEqual({})
    expect(after.right.project.trust).toBe("changed")
    expect(after.right.notes.join("\n")).toContain("MiB trust reads")
    const inspected = await run(McpSettings.inspect(cwd, configDir))
    expect(inspected._tag === "Left" ? inspected.left.message : "trusted").toContain("MiB trust reads")
  })

  it("trust refuses it, naming the limit", async () => {
    const { cwd, top } = await trustedProject()
    writeFileSync(join(top, ".npmrc"), manyNames)
    const inspected = await run(McpSettings.inspect(cwd, join(top, "config")))
    expect(inspected._tag).toBe("Left")
    expect(inspected.left.message).toContain(`${join(top, ".npmrc")} name over ${McpFiles.limits.names} paths`)
  })
})
