import { describe, expect, it } from "@effect/vitest"
import * as McpConfig from "../../src/layers/mcp/McpConfig.js"
import * as McpTools from "../../src/layers/McpTools.js"

describe("MCP configuration files", () => {
  it("parses the common shape and refuses unknown keys, sse, bad names and other schemes with one line", () => {
    const ok = McpConfig.parse(JSON.stringify({ mcpServers: { a: { command: "x", args: ["1"], env: { K: "v" } }, b: { url: "http://127.0.0.1:1/mcp", headers: { X: "y" } } } }), "f.json")
    expect(ok._tag).toBe("Right")
    const bad = (value: unknown) => {
      const parsed = McpConfig.parse(JSON.stringify(value), "f.json")
      return parsed._tag === "Left" ? parsed.left : "parsed"
    }
    expect(bad({ mcpServers: { a: { command: "x", arg: [] } } })).toMatch(/^f\.json: mcpServers\.a/)
    expect(bad({ mcpServers: { a: { type: "sse", url: "http://h/sse" } } })).toContain("\"sse\" transport is not supported")
    expect(bad({ mcpServers: { "a b": { command: "x" } } })).toContain("a server's name")
    expect(bad({ mcpServers: { "a__b": { command: "x" } } })).toContain("a server's name")
    // `docs_`'s tools would be `mcp__docs___…`, which `mcp__docs__*` (every tool of `docs`) matches.
    expect(bad({ mcpServers: { "docs_": { command: "x" } } })).toContain("not ending in _")
    expect(McpConfig.parse(JSON.stringify({ mcpServers: { "_docs": { command: "x" }, "docs-": { command: "x" }, "a_b": { command: "x" } } }), "f.json")._tag).toBe("Right")
    expect(bad({ mcpServers: { a: { url: "file:///etc/passwd" } } })).toMatch(/^f\.json: mcpServers\.a/)
    expect(bad({ servers: {} })).toMatch(/^f\.json: /)
    expect(McpConfig.parse("{", "f.json")).toMatchObject({ _tag: "Left", left: expect.stringContaining("not valid JSON") })
  })

  it("describes a server without its env values or header values", () => {
    expect(McpConfig.describe("gh", { command: "npx", args: ["-y", "server"], env: { GITHUB_TOKEN: "secret" } })).toBe("gh: runs \"npx -y server\" with GITHUB_TOKEN set")
    expect(McpConfig.describe("web", { url: "https://example.test/mcp", headers: { Authorization: "Bearer secret" } })).not.toContain("secret")
  })

  it("tool names: sanitised, at most 64 characters; rule patterns", () => {
    expect(McpTools.toolName("git-hub", "create.issue")).toBe("mcp__git-hub__create_issue")
    expect(McpTools.toolName("s", "x".repeat(100))).toHaveLength(64)
    expect(McpTools.isToolName("mcp__github__*")).toBe(true)
    expect(McpTools.isToolName("mcp__github__create_issue")).toBe(true)
    expect(McpTools.isToolName("mcp__*")).toBe(false)
  })
})
