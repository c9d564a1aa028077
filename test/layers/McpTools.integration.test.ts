import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { JsonObject } from "../../src/domain/Json.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as McpTools from "../../src/layers/McpTools.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { collect, expectWellFormedLog, tempDir } from "../helpers.js"
import { ends, engineWith, httpFixture, lines, turns, untilWritten } from "./mcpEngine.js"

const serverScript = new URL("../fixtures/mcp/server.mjs", import.meta.url).pathname

const stdioServer = (markerDir: string, env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [serverScript],
  env: { MARKER_DIR: markerDir, ...env }
})

/** Starts the fixture over Streamable HTTP on a free port of 127.0.0.1; stopped with the scope. */
const httpServer = (markerDir: string, env: Record<string, string> = {}) => httpFixture("server.mjs", markerDir, { MARKER_DIR: markerDir, ...env }, ["--http"])

const allowAll: PermissionPolicy.Options = { rules: [{ name: "fixture", decision: "allow", tool: "mcp__fixture__*" }] }

const call = (tool: string, args: JsonObject = {}, id?: string) => ({ tool: `mcp__fixture__${tool}`, args, ...(id === undefined ? {} : { id }) })

layer(NodeContext.layer)("MCP tools from a real server", (it) => {
  for (const transport of ["stdio", "http"] as const) {
    it.scoped(`${transport}: the server's tools are offered as mcp__fixture__*; a call allowed by a rule runs and its result reaches the model`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        // Over HTTP the server refuses requests without the configured header.
        const server = transport === "stdio" ? stdioServer(cwd) : { url: (yield* httpServer(cwd, { REQUIRE_HEADER: "let-me-in" })).url, headers: { "x-test": "let-me-in" } }
        const { events, requests } = yield* turns({
          cwd,
          servers: { fixture: server },
          policy: allowAll,
          responses: [{ toolCalls: [call("echo", { text: "hello" }), call("add", { a: 2, b: 3 })] }, { chunks: ["done"] }]
        }, ["go"])
        expectWellFormedLog(events)
        expect(ends(events)).toEqual(expect.arrayContaining([
          expect.objectContaining({ toolCallId: "call_1", result: "echo: hello" }),
          expect.objectContaining({ toolCallId: "call_2", result: "5" })
        ]))
        const offered = requests[0]!.tools.map((t) => t.name)
        expect(offered).toEqual(expect.arrayContaining(["read_file", "shell", "mcp__fixture__echo", "mcp__fixture__add", "mcp__fixture__wait"]))
        expect(requests[0]!.tools.find((t) => t.name === "mcp__fixture__echo")).toMatchObject({
          description: "Repeats the text it is given.",
          inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
        })
        const results = JSON.stringify(requests[1]!.messages)
        expect(results).toContain("echo: hello")
        // The permission engine judged it: the rule that allowed it is recorded.
        const resolved = events.filter((e) => e.type === "permission.resolved").map((e) => e.payload)
        expect(resolved).toEqual([
          expect.objectContaining({ decision: "allow", policy: "fixture" }),
          expect.objectContaining({ decision: "allow", policy: "fixture" })
        ])
        // The tools the server offered are recorded once, before the request that offered them.
        const listed = events.filter((e) => e.type === "mcp.tools_listed")
        expect(listed).toHaveLength(1)
        expect(listed[0]!.payload).toMatchObject({ server: "fixture", hash: expect.stringMatching(/^[0-9a-f]{64}$/) })
        expect(listed[0]!.type === "mcp.tools_listed" && listed[0]!.payload.tools.map((t) => t.name)).toEqual(
          requests[0]!.tools.map((t) => t.name).filter((name) => name.startsWith("mcp__"))
        )
        expect(events.findIndex((e) => e.type === "mcp.tools_listed")).toBeLessThan(events.findIndex((e) => e.type === "context.built"))
        // The context estimate counts the MCP tools' descriptions.
        const built = events.find((e) => e.type === "context.built")
        expect(built?.type === "context.built" && built.payload.tokens.tools).toBeGreaterThan(0)
      }))
  }

  it.scoped("default mode asks before an MCP tool runs; a deny rule names it and it never reaches the server", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const servers = { fixture: stdioServer(cwd) }
      const layer = engineWith({ cwd, servers, responses: [{ toolCalls: [call("echo", { text: "a" })] }, { chunks: ["ok"] }], policy: {} })
      const asked = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const session = yield* engine.createSession({ cwd, client: "test" })
        const seen = yield* Deferred.make<string>()
        const fiber = yield* engine.runTurn({ sessionId: session.sessionId, userMessage: "go" }).pipe(
          Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(seen, e.payload.toolCallId) : Effect.void),
          Stream.runCollect,
          Effect.fork
        )
        const toolCallId = yield* Deferred.await(seen)
        yield* engine.resolvePermission({ sessionId: session.sessionId, toolCallId, decision: "allow" })
        yield* Fiber.join(fiber)
        return yield* collect(engine.replaySession({ sessionId: session.sessionId }))
      }).pipe(Effect.provide(layer))
      expect(asked.filter((e) => e.type === "permission.requested").map((e) => e.payload)).toEqual([
        expect.objectContaining({ tool: "mcp__fixture__echo", risk: "network" })
      ])
      expect(ends(asked)).toEqual([expect.objectContaining({ result: "echo: a" })])

      const denied = yield* turns({
        cwd,
        servers,
        policy: { rules: [{ name: "no-echo", decision: "deny", tool: "mcp__fixture__echo" }, ...allowAll.rules!] },
        responses: [{ toolCalls: [call("echo", { text: "b" }), call("add", { a: 1, b: 1 })] }, { chunks: ["ok"] }]
      }, ["go"])
      expect(ends(denied.events)).toEqual(expect.arrayContaining([
        expect.objectContaining({ toolCallId: "call_1", errorCode: "permission_denied" }),
        expect.objectContaining({ toolCallId: "call_2", result: "2" })
      ]))
      // readOnly denies MCP tools outright.
      const readOnly = yield* turns({ cwd, servers, policy: { mode: "readOnly" }, responses: [{ toolCalls: [call("echo", { text: "c" })] }, { chunks: ["ok"] }] }, ["go"])
      expect(ends(readOnly.events)).toEqual([expect.objectContaining({ errorCode: "permission_denied" })])
    }))

  for (const transport of ["stdio", "http"] as const) {
    it.scoped(`${transport}: a cancel mid-call reaches the server as notifications/cancelled`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = transport === "stdio" ? stdioServer(cwd) : { url: (yield* httpServer(cwd)).url }
        const layer = engineWith({ cwd, servers: { fixture: server }, policy: allowAll, responses: [{ toolCalls: [call("wait")] }, { chunks: ["never"] }] })
        const events = yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const session = yield* engine.createSession({ cwd, client: "test" })
          const started = yield* Deferred.make<void>()
          const fiber = yield* engine.runTurn({ sessionId: session.sessionId, userMessage: "go" }).pipe(
            Stream.tap((e) => e.type === "tool.started" ? Deferred.succeed(started, undefined) : Effect.void),
            Stream.runCollect,
            Effect.fork
          )
          yield* Deferred.await(started)
          // The server has the request once it says it waits.
          yield* untilWritten(cwd, "waiting")
          yield* engine.cancelTurn({ sessionId: session.sessionId })
          yield* Fiber.join(fiber)
          return yield* collect(engine.replaySession({ sessionId: session.sessionId }))
        }).pipe(Effect.provide(layer))
        expect(ends(events)).toEqual([expect.objectContaining({ errorCode: "cancelled" })])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
        // The server saw the cancellation of the request it was running (awaited: it arrives a moment after).
        yield* untilWritten(cwd, "cancelled")
        expect(lines(cwd, "cancelled")).toEqual(lines(cwd, "waiting"))
      }))
  }

  for (const transport of ["stdio", "http"] as const) {
    it.scoped(`${transport}: a cancel mid-call to a server that ignores it and never answers ends the turn cancelled, and the next turn's call is answered`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = transport === "stdio" ? stdioServer(cwd) : { url: (yield* httpServer(cwd)).url }
        // No time limit could end the call: the test's clock is a TestClock, so only the cancel can.
        const layer = engineWith({
          cwd,
          servers: { fixture: server },
          policy: allowAll,
          responses: [{ toolCalls: [call("hang")] }, { toolCalls: [call("echo", { text: "next" })] }, { chunks: ["done"] }]
        })
        const events = yield* Effect.gen(function*() {
          const engine = yield* SessionEngine
          const session = yield* engine.createSession({ cwd, client: "test" })
          const fiber = yield* engine.runTurn({ sessionId: session.sessionId, userMessage: "go" }).pipe(Stream.runCollect, Effect.fork)
          // The server has the request once it says it hangs.
          yield* untilWritten(cwd, "hanging")
          yield* engine.cancelTurn({ sessionId: session.sessionId })
          yield* Fiber.join(fiber)
          yield* Stream.runDrain(engine.runTurn({ sessionId: session.sessionId, userMessage: "again" }))
          return yield* collect(engine.replaySession({ sessionId: session.sessionId }))
        }).pipe(Effect.provide(layer))
        expectWellFormedLog(events)
        expect(ends(events)).toEqual([
          expect.objectContaining({ toolCallId: "call_1", errorCode: "cancelled" }),
          expect.objectContaining({ result: "echo: next" })
        ])
        expect(events.filter((e) => e.type === "turn.completed").map((e) => e.payload.stopReason)).toEqual(["cancelled", "final"])
      }))
  }

  it.scoped("stdio: a server that crashes mid-call is a typed failure, the turn goes on, and the next call starts it again", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const { events, requests } = yield* turns({
        cwd,
        servers: { fixture: stdioServer(cwd) },
        policy: allowAll,
        responses: [{ toolCalls: [call("crash")] }, { toolCalls: [call("echo", { text: "again" })] }, { chunks: ["done"] }]
      }, ["go"])
      expectWellFormedLog(events)
      expect(ends(events)).toEqual([
        { toolCallId: "call_1", errorCode: "mcp_server_failed", message: expect.stringContaining("started again on the next call") },
        expect.objectContaining({ toolCallId: "call_2", result: "echo: again" })
      ])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(lines(cwd, "started")).toHaveLength(2)
      expect(JSON.stringify(requests[1]!.messages)).toContain("closed the connection")
    }))

  it.scoped("a server restarted with another tool list: the next request offers it, and the log records the change before it", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const { events, requests } = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const session = yield* engine.createSession({ cwd, client: "test" })
        // The running server read its variant when it started (with the layer); its next start offers one more tool, and the crash makes that start happen.
        writeFileSync(join(cwd, "variant"), "2")
        yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "go" }))
        return {
          events: yield* collect(engine.replaySession({ sessionId: session.sessionId })),
          requests: yield* Effect.flatMap(FakeModel, (m) => m.requests)
        }
      }).pipe(Effect.provide(engineWith({
        cwd,
        servers: { fixture: stdioServer(cwd) },
        policy: allowAll,
        responses: [{ toolCalls: [call("crash")] }, { toolCalls: [call("extra")] }, { chunks: ["done"] }]
      })))
      expectWellFormedLog(events)
      const listed = events.flatMap((e) => e.type === "mcp.tools_listed" ? [e.payload] : [])
      expect(listed).toHaveLength(2)
      expect(listed[0]!.hash).not.toBe(listed[1]!.hash)
      expect(listed[1]!.tools.map((t) => t.name)).toContain("mcp__fixture__extra")
      expect(requests[1]!.tools.map((t) => t.name)).toContain("mcp__fixture__extra")
      expect(ends(events)).toEqual([
        expect.objectContaining({ toolCallId: "call_1", errorCode: "mcp_server_failed" }),
        expect.objectContaining({ toolCallId: "call_2", result: "extra ran" })
      ])
    }))

  it.scoped("a server that does not answer hits the time limit: the call fails timeout and the turn goes on", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const { events } = yield* turns({
        cwd,
        servers: { fixture: stdioServer(cwd) },
        policy: allowAll,
        options: { callTimeout: "1 second" },
        responses: [{ toolCalls: [call("hang")] }, { toolCalls: [call("echo", { text: "after" })] }, { chunks: ["done"] }]
      }, ["go"])
      expect(ends(events)).toEqual([
        expect.objectContaining({ toolCallId: "call_1", errorCode: "timeout" }),
        expect.objectContaining({ toolCallId: "call_2", result: "echo: after" })
      ])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  for (const transport of ["stdio", "http"] as const) {
    it.scoped(`${transport}: a server that answers garbage gives mcp_invalid_response and the turn goes on`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = transport === "stdio" ? stdioServer(cwd) : { url: (yield* httpServer(cwd)).url }
        const { events } = yield* turns({
          cwd,
          servers: { fixture: server },
          policy: allowAll,
          responses: [{ toolCalls: [call("garbage")] }, { toolCalls: [call("echo", { text: "after" })] }, { chunks: ["done"] }]
        }, ["go"])
        expect(ends(events)).toEqual([
          expect.objectContaining({ toolCallId: "call_1", errorCode: "mcp_invalid_response" }),
          expect.objectContaining({ toolCallId: "call_2", result: "echo: after" })
        ])
      }))
  }

  it.scoped("results are capped; the server runs with the allow-listed environment plus its config's env, git told to use bare repositories only when named", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      process.env.MCP_TEST_SECRET_TOKEN = "do-not-pass"
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.MCP_TEST_SECRET_TOKEN))
      const { events } = yield* turns({
        cwd,
        // The config's own git setting is kept, and safe.bareRepository comes after it (a server
        // running git in a clone that committed a bare repository folder must not run its config).
        servers: { fixture: stdioServer(cwd, { GIVEN: "by-config", GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "user.name", GIT_CONFIG_VALUE_0: "t" }) },
        policy: allowAll,
        options: { maxResultBytes: 100 },
        responses: [{
          toolCalls: [
            call("big", { bytes: 5000 }),
            call("env", { name: "MCP_TEST_SECRET_TOKEN" }),
            call("env", { name: "GIVEN" }),
            call("env", { name: "GIT_CONFIG_COUNT" }),
            call("env", { name: "GIT_CONFIG_KEY_1" }),
            call("env", { name: "GIT_CONFIG_VALUE_1" })
          ]
        }, { chunks: ["done"] }]
      }, ["go"])
      const byId = Object.fromEntries(ends(events).map((e) => [e.toolCallId, "result" in e ? e.result : e.errorCode]))
      expect(byId.call_1).toMatch(/^x{100}\n\[… truncated: 4900 more bytes\]$/)
      expect(byId.call_2).toBe("MCP_TEST_SECRET_TOKEN=(unset)")
      expect(byId.call_3).toBe("GIVEN=by-config")
      expect([byId.call_4, byId.call_5, byId.call_6]).toEqual(["GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_1=safe.bareRepository", "GIT_CONFIG_VALUE_1=explicit"])
    }))

  it.scoped("two tools that would share a name are an error naming both; a server that cannot start names itself", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const collision = yield* Effect.flip(McpTools.make({ servers: { fixture: stdioServer(cwd, { TOOLS_VARIANT: "collide" }) }, cwd }).pipe(Effect.scoped))
      expect(collision).toMatchObject({ _tag: "McpError", reason: "name_collision", message: expect.stringContaining("mcp__fixture__e_cho") })
      const badName = yield* Effect.flip(McpTools.make({ servers: { "a__b": stdioServer(cwd) }, cwd }).pipe(Effect.scoped))
      expect(badName).toMatchObject({ _tag: "McpError", reason: "invalid_config" })
      const missing = yield* Effect.flip(McpTools.make({ servers: { nope: { command: "no-such-mcp-server-program" } }, cwd }).pipe(Effect.scoped))
      expect(missing).toMatchObject({ _tag: "McpError", reason: "start_failed", message: expect.stringContaining("\"nope\"") })
    }))

  it.scoped("a hostile server's list: pages that never end are a typed error; a megabyte description is cut", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const endless = yield* Effect.flip(McpTools.make({ servers: { fixture: stdioServer(cwd, { TOOLS_VARIANT: "endless" }) }, cwd }).pipe(Effect.scoped))
      expect(endless).toMatchObject({ _tag: "McpError", reason: "list_failed", message: expect.stringContaining("more than 100 pages") })
      const { events } = yield* turns({ servers: { fixture: stdioServer(cwd, { TOOLS_VARIANT: "huge" }) }, responses: [{ chunks: ["ok"] }], cwd }, ["hi"])
      const listed = events.find((e) => e.type === "mcp.tools_listed")
      const description = listed?.type === "mcp.tools_listed" ? listed.payload.tools[0]!.description : ""
      expect(description.length).toBeLessThan(5000)
      expect(description).toMatch(/description cut at 4096 characters\)$/)
    }))

  // JSON.parse reads what JSON.stringify cannot write again: a result or a schema nested 200,000 deep.
  // Before, the result's stringify threw inside the call (a defect, not a tool failure), and the
  // list's hash threw while the servers were being started.
  it.scoped("a hostile server's answers nested too deep: the call fails mcp_invalid_response and the turn goes on; such a schema is a typed list_failed", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const deep = (env: Record<string, string> = {}) => ({ command: process.execPath, args: [new URL("../fixtures/mcp/deep.mjs", import.meta.url).pathname], env })
      const { events } = yield* turns({
        servers: { hostile: deep() },
        responses: [{ toolCalls: [{ tool: "mcp__hostile__deep", args: {} }] }, { chunks: ["went on"] }],
        policy: { rules: [{ name: "hostile", decision: "allow", tool: "mcp__hostile__*" }] },
        cwd
      }, ["go"])
      expect(ends(events)).toEqual([expect.objectContaining({ errorCode: "mcp_invalid_response" })])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expectWellFormedLog(events)
      const schema = yield* Effect.flip(McpTools.make({ servers: { hostile: deep({ DEEP_SCHEMA: "1" }) }, cwd }).pipe(Effect.scoped))
      expect(schema).toMatchObject({ _tag: "McpError", reason: "list_failed", message: expect.stringContaining("\"deep\"") })
    }))

  // A server's list goes into every model request and into the log (mcp.tools_listed). Before, one
  // page of 20,000 tools was kept whole (only a next page was not asked for past 10,000), and a tool
  // whose schema was 2 MB as well: every later request carried them, past any model's context.
  it.scoped("a hostile server's list too large: more than 1,000 tools or more than 1 MiB of tools is a typed list_failed", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const wide = (env: Record<string, string>) => ({ command: process.execPath, args: [new URL("../fixtures/mcp/wide.mjs", import.meta.url).pathname], env })
      // What came of listing: the error, or how many tools were offered (small either way, to print).
      const listing = (env: Record<string, string>) =>
        McpTools.make({ servers: { hostile: wide(env) }, cwd }).pipe(
          Effect.map((tools) => ({ listed: tools.listings()[0]!.tools.length })),
          Effect.catchAll((error) => Effect.succeed({ reason: error.reason, message: error.message })),
          Effect.scoped
        )
      expect(yield* listing({ TOOLS: "20000" })).toEqual({ reason: "list_failed", message: expect.stringContaining("more than 1000 tools") })
      expect(yield* listing({ SCHEMA_BYTES: String(2 * 1024 * 1024) })).toEqual({ reason: "list_failed", message: expect.stringMatching(/more than 1 MiB .*"t0"/) })
      // At the limits: 1,000 small tools, or one tool with a 512 KiB schema, are listed.
      expect(yield* listing({ TOOLS: "1000" })).toEqual({ listed: 1000 })
      expect(yield* listing({ SCHEMA_BYTES: String(512 * 1024) })).toEqual({ listed: 1 })
    }))

  // The SDK reads an HTTP server's JSON answer whole and an event stream's line whole, without a
  // limit: a server that never ended one held all it sent in memory until the call's time limit
  // (60 s: gigabytes on a fast link). The fixture sends 4 MiB and leaves the answer open; the cap
  // here is 1 MiB. Before, each call ended `timeout` after holding all of it.
  for (const answer of ["json", "sse"] as const) {
    it.scoped(`http: an answer that never ends (${answer}) is cut at the cap: the call fails mcp_invalid_response and the turn goes on`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: answer })
        const { events } = yield* turns({
          servers: { endless: { url: server.url } },
          responses: [{ toolCalls: [{ tool: "mcp__endless__flood", args: {} }] }, { chunks: ["went on"] }],
          policy: { rules: [{ name: "endless", decision: "allow", tool: "mcp__endless__*" }] },
          options: { maxAnswerBytes: 1024 * 1024 },
          cwd
        }, ["go"])
        expect(ends(events)).toEqual([expect.objectContaining({ errorCode: "mcp_invalid_response" })])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }), 120_000)
  }
})
