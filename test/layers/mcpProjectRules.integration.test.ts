/**
 * A trusted project's own rules naming MCP tools are for its own `.mcp.json` servers (mend65trust
 * item 1): before, the project could not write `allow mcp__docs__*` at all (an allow in a project's
 * file had to give a command or a path, which no MCP call has), and a rule naming MCP tools with no
 * origin would have covered the user's own server of that name. An untrusted project's allow
 * rules still allow nothing.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-rules-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0

const setup = (project: unknown, user?: unknown) => {
  const at = join(root, `case-${++count}`)
  const cwd = join(at, "repo")
  const configDir = join(at, "config")
  mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
  mkdirSync(configDir, { recursive: true })
  writeFileSync(join(cwd, ".effect-agent", "settings.json"), JSON.stringify(project))
  if (user !== undefined) writeFileSync(join(configDir, "settings.json"), JSON.stringify(user))
  return { cwd, configDir }
}
const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(effect.pipe(Effect.provide(NodeContext.layer)) as Effect.Effect<A, E>)
const trust = async (at: { readonly cwd: string; readonly configDir: string }) => {
  const project = (await run(ProjectSettings.inspect(at.cwd, at.configDir)))!
  await run(TrustStore.trust(at.configDir, project.path, project.sha256))
}
const call = (tool: string, projectServer: boolean): PreparedCall => ({
  toolCallId: "call_1",
  tool,
  args: {},
  risk: "network",
  sequential: false,
  paths: [],
  scope: tool,
  input: {},
  ...(projectServer ? { projectServer: true as const } : {})
})
const decide = (loaded: ProjectSettings.Loaded, tool: string, projectServer: boolean) =>
  PermissionPolicy.decide(loaded.policy, { sessionId: "s", cwd: "/tmp", call: call(tool, projectServer), remembered: [] }).decision

const docs = { rules: [{ decision: "allow", tool: "mcp__docs__*" }] }

describe("a project's rules naming MCP tools", () => {
  it("a trusted project's allow covers its own server of that name", async () => {
    const at = setup(docs)
    await trust(at)
    const loaded = await run(ProjectSettings.load(at))
    expect(decide(loaded, "mcp__docs__search", true)).toBe("allow")
  })

  it("never covers your own server of the same name", async () => {
    const at = setup({ rules: [{ decision: "allow", tool: "mcp__github__*" }, { decision: "allow", tool: "mcp__github__create_issue" }] })
    await trust(at)
    const loaded = await run(ProjectSettings.load(at))
    expect(decide(loaded, "mcp__github__create_issue", false)).toBe("ask")
    expect(decide(loaded, "mcp__github__create_issue", true)).toBe("allow")
  })

  it("an untrusted project's allow covers neither", async () => {
    const at = setup(docs)
    const loaded = await run(ProjectSettings.load(at))
    expect(decide(loaded, "mcp__docs__search", true)).toBe("ask")
    expect(decide(loaded, "mcp__docs__search", false)).toBe("ask")
  })

  it("a project's deny still covers both origins; your own rule still covers yours only", async () => {
    const at = setup({ rules: [{ decision: "deny", tool: "mcp__docs__drop" }] }, { rules: [{ decision: "allow", tool: "mcp__docs__*" }] })
    await trust(at)
    const loaded = await run(ProjectSettings.load(at))
    expect(decide(loaded, "mcp__docs__drop", true)).toBe("deny")
    expect(decide(loaded, "mcp__docs__drop", false)).toBe("deny")
    expect(decide(loaded, "mcp__docs__search", false)).toBe("allow")
    expect(decide(loaded, "mcp__docs__search", true)).toBe("ask")
  })

  it("trust's summary says the rule is for the project's own server", async () => {
    const at = setup(docs)
    const project = (await run(ProjectSettings.inspect(at.cwd, at.configDir)))!
    expect(ProjectSettings.summary(project).join("\n")).toContain("this project's own MCP server")
  })
})
