/**
 * Review 65a: a router whose servers were stopped (its scope closed: ACP session/close, serve's LRU,
 * a cwd's shared set let go) started its server again at the next call from a turn that still held
 * it (`Turn` takes its router once, at its start) — outside any scope, so nothing ever stopped that
 * process. Now a call after the close fails, typed, and starts nothing.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { onTestFinished } from "vitest"
import * as McpTools from "../../src/layers/McpTools.js"
import { alive } from "../processes.js"

const stubborn = new URL("../fixtures/mcp/stubborn.mjs", import.meta.url).pathname

layer(NodeContext.layer)("review65a: calls after the servers' scope closed", (it) => {
  it.scoped("a call through a closed router fails mcp_server_failed and starts no server", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const tools = yield* McpTools.make({ servers: { stubborn: { command: process.execPath, args: [stubborn] } }, cwd: "/" }).pipe(Scope.extend(scope))
      const pid = (id: string) =>
        Effect.gen(function*() {
          const prepared = yield* tools.router.prepare({ toolCallId: id, tool: "mcp__stubborn__pid", args: {} }, "/")
          const output = yield* tools.router.execute(prepared, {} as never)
          const n = Number(output.result)
          onTestFinished(() => {
            if (alive(n)) process.kill(n, "SIGKILL")
          })
          return n
        })
      const first = yield* pid("a")
      yield* Scope.close(scope, Exit.void)
      expect(alive(first)).toBe(false)
      // The turn that began before the close still holds `tools.router`.
      const after = yield* Effect.either(pid("b"))
      expect(after._tag === "Left" && after.left).toMatchObject({ errorCode: "mcp_server_failed", message: "MCP server \"stubborn\": the session's servers were stopped" })
    }), 60_000)
})
