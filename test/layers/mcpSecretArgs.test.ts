/**
 * Review 63b: a stdio server given its key in `args` (`--api-key X`, `--token=X`, `--header
 * "Authorization: Bearer X"`) that echoed it in an error put the key into `tool.failed` and the
 * model's context: only `env` values were hidden.
 */
import { describe, expect, it } from "vitest"
import * as McpSecrets from "../../src/layers/mcp/McpSecrets.js"

describe("McpSecrets.of hides the values of secret-named options in a stdio server's args", () => {
  it("--api-key X, --token=X, --header/-H 'Authorization: …'; not other options' values", () => {
    const secrets = McpSecrets.of({
      command: "node",
      args: ["srv.mjs", "--api-key", "ctx7sk-2b9f0c1e-aaaa", "--token=tok-123456", "--header", "Authorization: Bearer bearer-abcdef", "-H", "X-Api-Key: hk-7890", "--port", "3000"]
    })
    const text = McpSecrets.redact("401 for ctx7sk-2b9f0c1e-aaaa tok-123456 bearer-abcdef hk-7890 on port 3000 srv.mjs", secrets)
    expect(text).toBe("401 for [redacted] [redacted] [redacted] [redacted] on port 3000 srv.mjs")
  })
})

describe("review64a: the secrets of a stdio server's args in other shapes", () => {
  const cases: Record<string, ReadonlyArray<string>> = {
    "-k KEY": ["-k", "sk-live-BBBBBBBBBBBBBBBBBBBBBBBB"],
    "--url with a key in its query": ["--url", "https://api.example.com/mcp?api_key=sk-live-CCCCCCCCCCCCCCCCCCC"],
    "a URL's userinfo": ["https://user:sk-live-DDDDDDDDDDDDDDDDDDDD@example.com/mcp"],
    "a positional Authorization header": ["Authorization: Bearer sk-live-EEEEEEEEEEEEEEEEEEEE"],
    "JSON with an apiKey": ["--config", JSON.stringify({ server: { apiKey: "sk-live-FFFFFFFFFFFFFFFFFFFF" } })],
    "API_KEY=…": ["API_KEY=sk-live-GGGGGGGGGGGGGGGGGGGG"],
    "a database URL's password": ["postgresql://app:sk-live-HHHHHHHHHHHHHHHHHH@db:5432/x"],
    "--url=… with a token": ["--url=https://h.example/x?token=sk-live-KKKKKKKKKKKKKKKKKK"],
    "--password -value": ["--password", "-hunter2-secret-value"]
  }
  for (const [name, args] of Object.entries(cases)) {
    it(name, () => {
      const secret = /(-hunter2-secret-value|sk-live-[A-Z]+)/.exec(args.join(" "))![1]!
      const secrets = McpSecrets.of({ command: "node", args: ["srv.js", ...args] })
      expect(McpSecrets.redact(`failed: ${secret} (srv.js)`, secrets)).toBe("failed: [redacted] (srv.js)")
    })
  }

  it("the word Bearer is not a secret; names, versions, paths and ports are not either", () => {
    const secrets = McpSecrets.of({
      command: "node",
      args: ["srv.js", "--header", "Authorization: Bearer sk-live-EEEEEEEEEEEEEEEEEEEE", "--model", "Qwen2.5-Coder-32B-Instruct", "--root", "/home/user/projects/some-long-folder-2024", "-p", "3000", "--auth-header=Bearer sk-live-LLLLLLLLLLLLLLLLL"]
    })
    expect(McpSecrets.redact("Bearer tokens; Qwen2.5-Coder-32B-Instruct in /home/user/projects/some-long-folder-2024 on 3000", secrets))
      .toBe("Bearer tokens; Qwen2.5-Coder-32B-Instruct in /home/user/projects/some-long-folder-2024 on 3000")
  })
})

describe("review65a: secrets still shown, and ordinary words hidden", () => {
  it("--pass X, --pwd X, DB_PASS; env values that are URLs with a password (DATABASE_URL, REDIS_URL)", () => {
    const secrets = McpSecrets.of({
      command: "x",
      args: ["--pass", "hunter2hunter2", "--pwd", "swordfish42"],
      env: { DATABASE_URL: "postgresql://u:S3cretPg@db/x", REDIS_URL: "redis://:S3cretRd@r:6379", DB_PASS: "letmein99" }
    })
    expect(McpSecrets.redact("hunter2hunter2 swordfish42 postgresql://u:S3cretPg@db redis://:S3cretRd@r letmein99", secrets))
      .toBe("[redacted] [redacted] postgresql://u:[redacted]@db redis://:[redacted]@r [redacted]")
  })
  it("a long label is no key: its words stay in results; --bypass's value is no password", () => {
    const secrets = McpSecrets.of({ command: "node", args: ["srv.mjs", "--label", "Echo fixture server that repeats text", "--bypass", "cache-layer"] })
    expect(secrets).toEqual([])
  })
})
