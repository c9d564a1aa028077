/**
 * What a server lists is checked and cleaned before the model is offered it (and the log records
 * it): a tool whose input schema is not a JSON Schema is left out, with a note naming it, and the
 * secrets the server's configuration gives it are hidden in its tools' descriptions and schemas.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as McpTools from "../../src/layers/McpTools.js"
import { tempDir } from "../helpers.js"

const listing = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [new URL("../fixtures/mcp/listing.mjs", import.meta.url).pathname],
  env
})

layer(NodeContext.layer)("a server's tool list", (it) => {
  // Before, the SDK checked only `type: "object"`: `{"type":"any"}` or a `$ref` to nothing was
  // offered as it came, and a vendor answered 400 to every request of the session.
  it.scoped("a tool whose input schema is not a JSON Schema is left out with a note naming it and why; the server's other tools are offered", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const notes: Array<string> = []
      const tools = yield* McpTools.make({ servers: { listing: listing() }, cwd, onToolLeftOut: (note) => Effect.sync(() => notes.push(note)) })
      expect(tools.router.definitions.map((d) => d.name)).toEqual(["mcp__listing__good", "mcp__listing__draft7", "mcp__listing__refs", "mcp__listing__positive", "mcp__listing__whoami"])
      // Draft-04's boolean bound is offered as the number every vendor takes (on main the tool was left out: "must be number").
      expect(tools.router.definitions.find((d) => d.name === "mcp__listing__positive")!.inputSchema).toEqual({ type: "object", properties: { ttl: { type: "integer", exclusiveMinimum: 0 } } })
      expect(notes).toEqual([
        expect.stringMatching(/^MCP server "listing": its tool "any" is left out: its input schema is not a valid JSON Schema \(.*type.*\)$/),
        expect.stringMatching(/^MCP server "listing": its tool "missing_ref" is left out: its input schema is not a valid JSON Schema \(.*#\/definitions\/missing.*\)$/)
      ])
      expect(tools.listings()[0]!.leftOut).toEqual([
        { tool: "any", reason: expect.stringContaining("type") },
        { tool: "missing_ref", reason: expect.stringContaining("#/definitions/missing") }
      ])
      // The hash is of what is offered.
      expect(tools.listings()[0]!.hash).toBe(McpTools.hashOf(tools.router.definitions))
    }))

  // Before, results and errors were redacted, but a description or schema that echoed the server's
  // key went to the model in every request and into `mcp.tools_listed`.
  it.scoped("the secrets of a server's configuration are hidden in its tools' descriptions and schemas, the hash is of what is offered", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const secret = "sk-live-0123456789abcdef"
      const tools = yield* McpTools.make({ servers: { listing: listing({ API_TOKEN: secret }) }, cwd, onToolLeftOut: () => Effect.void })
      const listed = JSON.stringify(tools.router.sources?.())
      expect(listed).not.toContain(secret)
      expect(JSON.stringify(tools.router.definitions)).not.toContain(secret)
      const whoami = tools.router.definitions.find((d) => d.name === "mcp__listing__whoami")!
      expect(whoami.description).toBe("Acts as the account of key [redacted]")
      expect(whoami.inputSchema).toEqual({ type: "object", properties: { key: { type: "string", default: "[redacted]", description: "\"[redacted]\"" } } })
      expect(tools.listings()[0]!.hash).toBe(McpTools.hashOf(tools.router.definitions))
    }))
})
