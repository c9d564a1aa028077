/**
 * What a server lists is checked and cleaned before the model is offered it (and the log records
 * it): a tool whose input schema is not a JSON Schema is left out, with a note naming it, and the
 * secrets the server's configuration gives it are hidden in its tools' descriptions and schemas.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as McpTools from "../../src/layers/McpTools.js"
import { tempDir } from "../helpers.js"

const listing = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [new URL("../fixtures/mcp/listing.mjs", import.meta.url).pathname],
  env
})

const wide = (env: Record<string, string>) => ({ command: process.execPath, args: [new URL("../fixtures/mcp/wide.mjs", import.meta.url).pathname], env })

layer(NodeContext.layer)("a server's tool list", (it) => {
  // reach45: the SDK's client compiled every listed tool's output schema (Ajv) inside listTools, before
  // the agent's bounds saw the list: one schema Ajv refuses failed the whole list ("did not list its
  // tools: type must be JSONType…"), every tool of the server lost. Now a schema is compiled at its
  // tool's first result: the list is read, that tool's call fails, the others answer. (The cost of
  // compiling 10,000 on listing: bench/mcp-output-schemas.ts.)
  it.scoped("a tool whose output schema Ajv cannot compile: the server's tools are listed, that tool's call fails tool_error, another's answers", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const tools = yield* McpTools.make({ servers: { wide: wide({ TOOLS: "2", BAD_OUTPUT_SCHEMA: "1" }) }, cwd })
      expect(tools.router.definitions.map((d) => d.name)).toEqual(["mcp__wide__t0", "mcp__wide__t1"])
      const call = (tool: string) =>
        Effect.flatMap(tools.router.prepare({ toolCallId: tool, tool, args: {} }, cwd), (prepared) => Effect.either(tools.router.execute(prepared, {} as never)))
      const bad = yield* call("mcp__wide__t0")
      expect(Either.isLeft(bad) && bad.left).toMatchObject({ errorCode: "tool_error", message: expect.stringContaining("nonsense") })
      expect(yield* call("mcp__wide__t1")).toEqual(Either.right({ result: "ok" }))
      // A schema that compiles is still checked, at the call: a result that does not match fails.
      const checked = yield* McpTools.make({ servers: { checked: wide({ OUTPUT_PROPERTIES: "1" }) }, cwd })
      const prepared = yield* checked.router.prepare({ toolCallId: "c", tool: "mcp__checked__t0", args: {} }, cwd)
      const mismatch = yield* Effect.either(checked.router.execute(prepared, {} as never))
      expect(Either.isLeft(mismatch) && mismatch.left).toMatchObject({ errorCode: "tool_error", message: expect.stringContaining("p0") })
    }))

  // Compiled at a call, a schema still costs the agent's thread in proportion to its size: one past
  // 64 KiB is left out, as an input schema no vendor takes is, with a note saying so.
  it.scoped("a tool whose output schema is larger than 64 KiB is left out with a note; one under it is offered", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const notes: Array<string> = []
      const onToolLeftOut = (note: string) => Effect.sync(() => notes.push(note))
      // 1,000 properties of about 80 bytes each: some 80 KB a schema.
      const large = yield* McpTools.make({ servers: { large: wide({ TOOLS: "2", OUTPUT_PROPERTIES: "1000" }) }, cwd, onToolLeftOut })
      expect(large.router.definitions).toEqual([])
      expect(large.listings()[0]!.leftOut.map((l) => l.tool)).toEqual(["t0", "t1"])
      expect(notes).toEqual([0, 1].map((i) =>
        `MCP server "large": its tool "t${i}" is left out: its output schema is larger than 64 KiB, past what the agent compiles to check the tool's results`
      ))
      const small = yield* McpTools.make({ servers: { small: wide({ TOOLS: "2", OUTPUT_PROPERTIES: "100" }) }, cwd, onToolLeftOut })
      expect(small.router.definitions.map((d) => d.name)).toEqual(["mcp__small__t0", "mcp__small__t1"])
      expect(notes).toHaveLength(2)
    }))


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
