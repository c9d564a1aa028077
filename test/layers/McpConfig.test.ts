import { describe, expect, it } from "@effect/vitest"
import * as McpConfig from "../../src/layers/mcp/McpConfig.js"
import * as McpSecrets from "../../src/layers/mcp/McpSecrets.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as McpTools from "../../src/layers/McpTools.js"

/** An HTTP server's line as `mcp` listings show it, and the summary of a `.mcp.json` holding it, shown before it is trusted. */
const shownBeforeTrust = (name: string, url: string) => {
  const project = { path: "/p/.mcp.json", sha256: "0", file: { mcpServers: { [name]: { url } } }, files: [] } as unknown as McpSettings.Project
  return { line: McpConfig.describe(name, { url }), summary: McpSettings.summary(project).join("\n") }
}

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

  it("a __proto__ server name, env variable or header is refused, not dropped", () => {
    // JSON.stringify cannot write an own `__proto__` key: the texts are written out.
    for (const text of ['{"mcpServers": {"__proto__": {"command": "x"}}}', '{"mcpServers": {"a": {"command": "x", "env": {"__proto__": "v"}}}}', '{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"__proto__": "v"}}}}']) {
      expect(McpConfig.parse(text, "f.json")).toMatchObject({ _tag: "Left", left: expect.stringContaining("__proto__") })
    }
  })

  it("describes a server without its env values or header values", () => {
    expect(McpConfig.describe("gh", { command: "npx", args: ["-y", "server"], env: { GITHUB_TOKEN: "secret" } })).toBe("gh: runs \"npx -y server\" with GITHUB_TOKEN set")
    expect(McpConfig.describe("web", { url: "https://example.test/mcp", headers: { Authorization: "Bearer secret" } })).not.toContain("secret")
  })

  it("describes a server's URL without its query values, userinfo or fragment (a token in them), in the trust summary too", () => {
    // On main the URL was printed whole: `?token=…` and `user:pw@` in the summary shown before trusting.
    const url = "https://alice:pw-1234@example.test:8443/mcp/v1?token=tok-5678&region=eu&sk-bare-secret#frag-9012"
    const { line, summary } = shownBeforeTrust("web", url)
    expect(line).toBe("web: connects to \"https://[redacted]@example.test:8443/mcp/v1?token=[redacted]&region=[redacted]&[redacted]#[redacted]\"")
    expect(summary).toContain("web: connects to")
    for (const secret of ["alice", "pw-1234", "tok-5678", "eu", "sk-bare-secret", "frag-9012"]) {
      expect(line).not.toContain(secret)
      expect(summary).not.toContain(secret)
    }
    expect(McpConfig.describe("plain", { url: "http://127.0.0.1:1/mcp" })).toBe("plain: connects to \"http://127.0.0.1:1/mcp\"")
  })

  it("a URL's query values and userinfo are the server's secrets: hidden in what it answers (errors, results)", () => {
    const secrets = McpSecrets.of({ url: "https://alice:pw-1234@example.test/mcp?token=tok-5678", headers: { Authorization: "Bearer head-0000" } })
    const echoed = McpSecrets.redact("401 for https://alice:pw-1234@example.test/mcp?token=tok-5678 (Bearer head-0000)", secrets)
    for (const secret of ["pw-1234", "tok-5678", "head-0000"]) expect(echoed).not.toContain(secret)
    // A setting is no token: `?stream=true` does not blank every `true` of the server's results.
    expect(McpSecrets.redact("true json", McpSecrets.of({ url: "https://example.test/mcp?stream=true&format=json" }))).toBe("true json")
  })

  it.each([
    ["https://example.test/mcp?token=abc%2Bdef%2Fghi%3D", ["abc%2Bdef%2Fghi%3D", "abc%2bdef%2fghi%3d", "abc+def/ghi="]],
    ["https://example.test/mcp?key=sk+live+12345678", ["sk+live+12345678", "sk live 12345678"]],
    ["https://example.test/mcp?key=sk%2Dlive%2D12345678", ["sk%2Dlive%2D12345678", "sk-live-12345678"]]
  ])("a query token is hidden in every form an error may echo it in: as %s writes it, escapes in lower case, decoded", (url, forms) => {
    const secrets = McpSecrets.of({ url })
    for (const form of forms) expect(McpSecrets.redact(`401 Unauthorized: GET ${form}`, secrets)).toBe("401 Unauthorized: GET [redacted]")
  })

  it("a token in the URL's path (a hosted server's /u/<key>/sse) is hidden: in the line, the trust summary and what the server answers", () => {
    // On main the path was printed whole, and not among the server's secrets.
    const url = "https://mcp.example.com/u/sk-live-abc123def456/sse"
    const { line, summary } = shownBeforeTrust("hosted", url)
    expect(line).toBe("hosted: connects to \"https://mcp.example.com/u/[redacted]/sse\"")
    expect(summary).toContain("https://mcp.example.com/u/[redacted]/sse")
    expect(summary).not.toContain("abc123def456")
    const secrets = McpSecrets.of({ url })
    expect(McpSecrets.redact(`404 for GET /u/sk-live-abc123def456/sse`, secrets)).toBe("404 for GET /u/[redacted]/sse")
    // Escaped in the URL: hidden as written, with its escapes in lower case, and decoded.
    const escaped = McpSecrets.of({ url: "https://mcp.example.com/k/abc%2Bdef%3D12345678/mcp" })
    for (const form of ["abc%2Bdef%3D12345678", "abc%2bdef%3d12345678", "abc+def=12345678"]) {
      expect(McpSecrets.redact(`GET /k/${form}/mcp`, escaped)).toBe("GET /k/[redacted]/mcp")
    }
  })

  // redact40 (review40 F3): on main a path segment was a secret by the query's rule (8 characters with a
  // letter and a digit): `context7-mcp` was blanked in every result of its server ("Use the [redacted]
  // resolve-library-id tool"), a repository's `DeepSeek-V3`, a version's `1.0.0-beta1`.
  it.each([
    "https://example.test/mcp/v1/sse",
    "https://example.test/api/2024-11-05/model-context-protocol-server/mcp",
    "https://server.smithery.ai/@upstash/context7-mcp/mcp",
    "https://gitmcp.io/deepseek-ai/DeepSeek-V3",
    "https://gitmcp.io/microsoft/TypeScriptSamples2",
    "https://gitmcp.io/Qwen/Qwen2.5-Coder-32B-Instruct",
    "https://gitmcp.io/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
    "https://mcp.example.com/v2024-11-05/sse",
    "https://mcp.example.com/releases/1.0.0-beta1/mcp",
    "https://mcp.example.com/releases/v20241105/mcp",
    "https://mcp.example.com/sk-learn-docs/mcp",
    "https://gitmcp.io/org/gpt4o-mini-2024-07-18",
    "https://gitmcp.io/owner/repo/tree/a1b2c3d"
  ])("a URL path's names and versions stay: %s is no token, and blanks nothing", (url) => {
    expect(McpConfig.describe("s", { url })).toBe(`s: connects to ${JSON.stringify(url)}`)
    expect(McpSecrets.of({ url })).toEqual([])
  })

  it.each([
    ["https://mcp.example.com/u/sk-live-abc123def456/sse", "sk-live-abc123def456"],
    ["https://gateway.example.com/k/Zx8kP2qLm9RtV4wN7yB3cJ6hF1dS5gA0/v1", "Zx8kP2qLm9RtV4wN7yB3cJ6hF1dS5gA0"],
    ["https://mcp.example.com/k/abc%2Bdef%3D12345678/mcp", "abc%2Bdef%3D12345678"],
    ["https://mcp.example.com/gh/ghp_abcdefghijklmnopqrstuvwxyz0123456789/mcp", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["https://mcp.example.com/gh/ghp_R2d2C3po/mcp", "ghp_R2d2C3po"],
    ["https://mcp.example.com/s/xoxb-1234-5678-AbCdEfGh/mcp", "xoxb-1234-5678-AbCdEfGh"],
    ["https://mcp.example.com/s/sk_live_4eC39HqLyjWDarjtT1zdp7dc/mcp", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"],
    ["https://mcp.example.com/aws/AKIAIOSFODNN7EXAMPLE/mcp", "AKIAIOSFODNN7EXAMPLE"],
    ["https://actions.zapier.com/mcp/123e4567-e89b-12d3-a456-426614174000/sse", "123e4567-e89b-12d3-a456-426614174000"],
    ["https://mcp.example.com/t/9f86d081884c7d659a2feaa0c55ad015/mcp", "9f86d081884c7d659a2feaa0c55ad015"],
    ["https://mcp.example.com/t/a8Kq3Zp9Lm2Xw7Rt/mcp", "a8Kq3Zp9Lm2Xw7Rt"],
    ["https://mcp.example.com/license/A7KD-9QXZ-M3PL-T8WN/mcp", "A7KD-9QXZ-M3PL-T8WN"]
  ])("a key in a URL's path stays hidden: %s", (url, key) => {
    const line = McpConfig.describe("s", { url })
    expect(line).toContain("/[redacted]/")
    expect(line).not.toContain(key)
    expect(McpSecrets.of({ url })).toContain(key)
  })

  it("a URL's settings blank nothing: a protocol date, words of a query split on its spaces", () => {
    const secrets = McpSecrets.of({ url: "https://example.test/mcp?api-version=2024-11-05&q=release+notes+2024" })
    expect(McpSecrets.redact(`{"protocolVersion":"2024-11-05"} the release notes of 2024`, secrets)).toBe(`{"protocolVersion":"2024-11-05"} the release notes of 2024`)
  })

  it("tool names: sanitised, at most 64 characters; rule patterns", () => {
    expect(McpTools.toolName("git-hub", "create.issue")).toBe("mcp__git-hub__create_issue")
    expect(McpTools.toolName("s", "x".repeat(100))).toHaveLength(64)
    expect(McpTools.isToolName("mcp__github__*")).toBe(true)
    expect(McpTools.isToolName("mcp__github__create_issue")).toBe(true)
    expect(McpTools.isToolName("mcp__*")).toBe(false)
  })
})
