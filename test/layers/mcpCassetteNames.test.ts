/**
 * The MCP cassette's router quotes a tool name it has no tool for as every router does
 * (`ToolRouter.unknownTool`): cut past 100 characters, its control and format characters escaped.
 * It repeated the model's name whole and raw — 10 KB, or a `\r` and a bidi override that rewrote
 * the line a terminal showed the failure on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as McpCassette from "../../src/layers/mcp/McpCassette.js"

const recording: McpCassette.Recording = {
  fixture: { tools: [{ name: "mcp__fixture__echo", description: "Repeats.", inputSchema: { type: "object" } }], hash: "a".repeat(64), calls: [] }
}

describe("the MCP cassette: a tool it has none of", () => {
  for (const name of ["mcp__fixture__echo\r\u202eowned", `mcp__${"x".repeat(10_000)}`]) {
    it.effect(`${JSON.stringify(name.slice(0, 30))}… — unknown_tool, the name bounded and escaped`, () =>
      Effect.gen(function*() {
        const router = McpCassette.router(recording)
        const prepared = yield* Effect.either(router.prepare({ toolCallId: "c", tool: name, args: {} }, "/work"))
        expect(Either.isLeft(prepared) && prepared.left.errorCode).toBe("unknown_tool")
        const message = Either.isLeft(prepared) ? prepared.left.message : ""
        expect(message.length).toBeLessThan(300)
        expect(message).not.toMatch(/[\r\u202e]/)
      }))
  }
})
