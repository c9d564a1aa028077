/**
 * A Streamable HTTP MCP server that is hostile or broken, probed with real processes on 127.0.0.1:
 * the SDK's fixture server (test/fixtures/mcp/server.mjs --http) and small endpoints without the SDK.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as McpTools from "../../src/layers/McpTools.js"
import { expectWellFormedLog, tempDir } from "../helpers.js"
import { ends, httpFixture, turns } from "./mcpEngine.js"

const starting = (servers: McpTools.Options["servers"], cwd: string, options: Partial<McpTools.Options> = {}) =>
  McpTools.make({ servers, cwd, connectTimeout: "20 seconds", ...options }).pipe(Effect.flip, Effect.scoped)

/** The answers' cap in these tests: the fixture's hostile answers are 4 MiB. */
const maxAnswerBytes = 1024 * 1024

layer(NodeContext.layer)("a hostile or broken MCP server over HTTP", (it) => {
  // fetch follows a redirect to any origin and keeps every header but Authorization; the SDK (1.32)
  // follows one only within the origin. A probe that held: kept so that an SDK update that changes
  // it shows here.
  it.scoped("a redirect to another origin is not followed: the server fails start_failed naming where it led, and the headers never reach it", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const elsewhere = yield* httpFixture("server.mjs", cwd, { MARKER_DIR: cwd, REQUIRE_HEADER: "secret-value" }, ["--http"])
      const moved = yield* httpFixture("redirect-http.mjs", cwd, { TARGET: elsewhere.url })
      const error = yield* starting({ moved: { url: moved.url, headers: { "x-test": "secret-value" } } }, cwd)
      expect(error).toMatchObject({ reason: "start_failed", message: expect.stringContaining(`Redirect to ${elsewhere.url} not followed`) })
      expect(error.message).not.toContain("secret-value")
    }))

  // A server that shows the agent's headers back (a proxy's error page, a debugging server): the
  // call's failure or result goes into the session's log and to the model. Before, the error's
  // message held `Authorization: Bearer …` and `x-api-key` whole in tool.failed.
  for (const answer of ["echo", "echo-result"] as const) {
    it.scoped(`a call answered with the request's headers (${answer === "echo" ? "a 500 page" : "the tool's result"}): no header's value reaches the log or the model`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: answer })
        const { events, requests } = yield* turns({
          cwd,
          servers: { echo: { url: server.url, headers: { Authorization: "Bearer sk-secret-token-1", "x-api-key": "key-secret-2" } } },
          policy: { rules: [{ name: "echo", decision: "allow", tool: "mcp__echo__*" }] },
          responses: [{ toolCalls: [{ tool: "mcp__echo__flood", args: {} }] }, { chunks: ["went on"] }]
        }, ["go"])
        expectWellFormedLog(events)
        expect(ends(events)).toEqual([
          answer === "echo"
            ? expect.objectContaining({ errorCode: "mcp_invalid_response", message: expect.stringContaining("[redacted]") })
            : expect.objectContaining({ result: expect.stringContaining("\"authorization\":\"[redacted]\"") })
        ])
        expect(JSON.stringify(events)).not.toMatch(/secret/)
        expect(JSON.stringify(requests)).not.toMatch(/secret/)
      }))
  }

  it.scoped("a connection dropped mid-answer: the call fails mcp_server_failed or mcp_invalid_response at once, and the turn goes on", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: "drop" })
      const { events } = yield* turns({
        cwd,
        servers: { drop: { url: server.url } },
        policy: { rules: [{ name: "drop", decision: "allow", tool: "mcp__drop__*" }] },
        options: { callTimeout: "1 hour" },
        responses: [{ toolCalls: [{ tool: "mcp__drop__flood", args: {} }] }, { chunks: ["went on"] }]
      }, ["go"])
      expect(ends(events)).toEqual([expect.objectContaining({ errorCode: expect.stringMatching(/^mcp_(server_failed|invalid_response)$/) })])
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
    }))

  // The SDK's event-stream parser joins every `data:` line of one event until a blank line; the cap
  // counted bytes since the last line end. One answer split over many short `data:` lines (pretty
  // JSON) passed any size: 100 MiB listed with the default cap (1.1 GiB held), 4 MiB with a 1 MiB
  // cap. Now the cap counts bytes since the last event's end, and a cut answer fails the listing at
  // once (before, it waited the whole start-up limit: 20 s by default, here an hour).
  it.scoped("an answer of one event over many short data: lines past the cap: the listing fails list_failed at once", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: "sse-lines", AT: "tools/list" })
      const error = yield* starting({ lines: { url: server.url } }, cwd, { maxAnswerBytes, connectTimeout: "1 hour" })
      expect(error).toMatchObject({ reason: "list_failed", message: expect.stringContaining(`over ${maxAnswerBytes} bytes in one event`) })
    }))

  // The stream the SDK opens with GET after start-up, for what the server sends unasked, has the
  // same cap: its 4 MiB event breaks the connection, and the call (never answered) fails at once.
  const floods = {
    "sse-lines": "a call answered with one event over many short data: lines past the cap",
    "sse-lines-open": "a call answered with one event over many short data: lines past the cap, never ended",
    "get-stream": "the long-lived GET stream carrying one event past the cap"
  } as const
  for (const [answer, title] of Object.entries(floods)) {
    it.scoped(`${title}: the call fails mcp_invalid_response at once, and the turn goes on`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: answer })
        const { events } = yield* turns({
          cwd,
          servers: { lines: { url: server.url } },
          policy: { rules: [{ name: "lines", decision: "allow", tool: "mcp__lines__*" }] },
          options: { maxAnswerBytes, callTimeout: "1 hour" },
          responses: [{ toolCalls: [{ tool: "mcp__lines__flood", args: {} }] }, { chunks: ["went on"] }]
        }, ["go"])
        expect(ends(events)).toEqual([expect.objectContaining({ errorCode: "mcp_invalid_response", message: expect.stringContaining("in one event") })])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }))
  }

  // The SDK reads a response as an event stream only when its media type is `text/event-stream`
  // (parameters aside); the cap looked for those words anywhere in the header. A JSON answer with
  // them in a parameter was counted line by line and read whole by the SDK.
  it.scoped("a JSON answer with text/event-stream in a parameter of its type is capped whole: list_failed", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: "json-labelled", AT: "tools/list" })
      const error = yield* starting({ labelled: { url: server.url } }, cwd, { maxAnswerBytes, connectTimeout: "1 hour" })
      expect(error).toMatchObject({ reason: "list_failed", message: expect.stringContaining(`over ${maxAnswerBytes} bytes`) })
    }))

  // A cut answer to the listing or to start-up waited the whole start-up limit (20 s by default, an
  // hour here); a call already failed at once. Now both fail as soon as the connection breaks.
  for (const at of ["tools/list", "initialize"] as const) {
    it.scoped(`a connection dropped mid-answer to ${at}: ${at === "initialize" ? "start_failed" : "list_failed"} at once`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const server = yield* httpFixture("endless-http.mjs", cwd, { ANSWER: "drop", AT: at })
        const error = yield* starting({ drop: { url: server.url } }, cwd, { connectTimeout: "1 hour" })
        expect(error).toMatchObject({ reason: at === "initialize" ? "start_failed" : "list_failed", message: expect.stringContaining("SSE stream disconnected") })
      }))
  }
})
