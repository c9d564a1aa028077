/**
 * review65a: an ordinary argument (a label of 32+ characters) is taken for a key, and each of its
 * words of 4+ characters becomes a "secret": hidden from every result, tool name and description.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as McpTools from "../../src/layers/McpTools.js"

const fixture = new URL("../fixtures/mcp/server.mjs", import.meta.url).pathname

layer(NodeContext.layer)("review65a: over-redaction", (it) => {
  it.scoped("a long label makes ordinary words secrets", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.make({ servers: { fx: { command: process.execPath, args: [fixture, "--label", "Echo fixture server that repeats text"] } }, cwd: "/" })
      const names = tools.router.definitions.map((d) => d.name)
      console.log("tools:", names.join(", "))
      const prepared = yield* tools.router.prepare({ toolCallId: "a", tool: "mcp__fx__echo", args: { text: "the server repeats this text" } }, "/")
      const output = yield* tools.router.execute(prepared, {} as never)
      console.log("echo result:", output.result)
      expect(names).toContain("mcp__fx__echo")
      expect(output.result).toBe("echo: the server repeats this text")
    }), 30_000)
})
