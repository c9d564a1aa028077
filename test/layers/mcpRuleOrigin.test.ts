/**
 * A rule naming MCP tools covers only servers of its origin: your `mcp__github__*` is for your
 * server named `github`, not for a trusted project's `.mcp.json` server that shares the name (its
 * calls are `projectServer`). Before, the name alone decided and the project's tools ran unasked.
 */
import { describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const call = (projectServer: boolean): PreparedCall => ({
  toolCallId: "call_1",
  tool: "mcp__github__create_issue",
  args: {},
  risk: "network",
  sequential: false,
  paths: [],
  scope: "mcp__github__create_issue",
  input: {},
  ...(projectServer ? { projectServer: true as const } : {})
})
const decide = (rules: ReadonlyArray<PermissionPolicy.Rule>, projectServer: boolean) =>
  PermissionPolicy.decide({ rules }, { sessionId: "s", cwd: "/tmp", call: call(projectServer), remembered: [] })
const yours: PermissionPolicy.Rule = { name: "allow mcp__github__*", decision: "allow", tool: "mcp__github__*" }
const theProjects: PermissionPolicy.Rule = { name: "project github", decision: "allow", tool: "mcp__github__*", projectServer: true }

describe("MCP rules by origin", () => {
  it("your allow covers your server, and a project's server of the same name asks, saying why", () => {
    expect(decide([yours], false).decision).toBe("allow")
    const asked = decide([yours], true)
    expect(asked.decision).toBe("ask")
    expect(asked.reason).toContain("your rule allow mcp__github__* is for your own MCP servers")
    expect(decide([{ ...yours, tool: "mcp__github__create_issue" }], true).decision).toBe("ask")
  })

  it("a projectServer rule covers the project's server only; deny rules cover both", () => {
    expect(decide([theProjects], true).decision).toBe("allow")
    expect(decide([theProjects], false).decision).toBe("ask")
    expect(decide([{ name: "no", decision: "deny", tool: "mcp__github__*" }, theProjects], true).decision).toBe("deny")
    expect(decide([{ name: "*", decision: "allow", tool: "*" }], true).decision).toBe("allow")
  })
})
