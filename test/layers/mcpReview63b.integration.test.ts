/**
 * Review 63b's hostile and careless servers: a Python server run with `-m` in a project whose root
 * has a file named like a standard module, a server that stops reading its stdin and floods the
 * agent with requests, and (through the built library) a server that ignores its stdin's end while
 * an embedder's program has nothing else to wait for.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { execFile } from "node:child_process"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpConnection from "../../src/layers/mcp/McpConnection.js"
import { tempDir } from "../helpers.js"

const fixture = (name: string) => new URL(`../fixtures/mcp/${name}`, import.meta.url).pathname

const connection = (cwd: string, server: { command: string; args: Array<string>; env?: Record<string, string> }) =>
  McpConnection.make({ name: "x", server, cwd, prefix: [], connectTimeout: Duration.minutes(5), callTimeout: Duration.hours(1) })

layer(NodeContext.layer)("review 63b: MCP servers that a project or the server itself turns against the agent", (it) => {
  it.scoped("python3 -m <installed module>: a json.py at the project's root is not imported in its place (PYTHONSAFEPATH)", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = join(cwd, "shadow-ran")
      writeFileSync(join(cwd, "json.py"), `open(${JSON.stringify(marker)}, "w").write("ran")\nraise SystemExit(3)\n`)
      const conn = yield* connection(cwd, { command: "python3", args: ["-m", "mcp63fixture"], env: { PYTHONPATH: fixture("py") } })
      const tools = yield* Effect.either(conn.listTools)
      yield* conn.close
      expect(existsSync(marker)).toBe(false)
      expect(Either.isRight(tools) && tools.right.map((tool) => tool.name)).toEqual(["t"])
    }))

  it.scoped("a server that stops reading and sends pings forever is stopped once its unread answers pass the cap: the next call fails mcp_server_failed", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const warnings: Array<string> = []
      const onWarning = (warning: Error) => warnings.push(warning.name)
      process.on("warning", onWarning)
      yield* Effect.addFinalizer(() => Effect.sync(() => process.off("warning", onWarning)))
      const conn = yield* connection(cwd, { command: process.execPath, args: [fixture("flood.mjs")], env: { PAD: "20000" } })
      yield* conn.listTools
      const call = yield* Effect.either(conn.callTool("t", {}))
      expect(Either.isLeft(call) && call.left.errorCode).toBe("mcp_server_failed")
      expect(Either.isLeft(call) && call.left.message).toContain("bytes of the agent's messages unread")
      expect(warnings).not.toContain("MaxListenersExceededWarning")
      yield* conn.close
    }), 300_000)

  it.effect("an embedder's program whose scope stops a server that ignores its stdin's end waits for the stop and sees the error", () =>
    Effect.gen(function*() {
      const program = `
        import * as Effect from ${JSON.stringify(new URL("../../node_modules/effect/dist/esm/Effect.js", import.meta.url).pathname)}
        import { McpTools } from ${JSON.stringify(new URL("../../dist/mcp.js", import.meta.url).pathname)}
        Effect.runPromise(Effect.scoped(McpTools.make({ servers: { hang: { command: process.execPath, args: [${JSON.stringify(fixture("hang.mjs"))}] } }, cwd: process.cwd(), connectTimeout: "1 second" })))
          .then(() => console.log("ok"), (e) => { console.log("ERR", String(e).slice(0, 200)); process.exitCode = 1 })`
      const out = yield* Effect.async<string>((resume) => {
        execFile(process.execPath, ["--input-type=module", "-e", program], { timeout: 120_000 }, (_error, stdout) => resume(Effect.succeed(stdout)))
      })
      expect(out).toMatch(/^(?:ok|ERR)/)
    }), 180_000)
})
