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
