/**
 * A cassette standing in for an MCP server: a session recorded against the real fixture server
 * (test/fixtures/mcp/server.mjs, over stdio, with the SDK), exported as `export-script` exports it,
 * replays with no server process to the same log, byte for byte; a call the recording lacks fails
 * typed at once.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import type { JsonObject } from "../../src/domain/Json.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Cassette from "../../src/layers/Cassette.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as McpCassette from "../../src/layers/mcp/McpCassette.js"
import * as McpTools from "../../src/layers/McpTools.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { ToolRouter } from "../../src/services/ToolRouter.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"

const serverScript = new URL("../fixtures/mcp/server.mjs", import.meta.url).pathname
const starts = (dir: string) => existsSync(join(dir, "started")) ? readFileSync(join(dir, "started"), "utf8").trim().split("\n").length : 0

const call = (tool: string, args: JsonObject) => ({ tool: `mcp__fixture__${tool}`, args })
/**
 * Two turns: echo, add twice (its arguments in another order: one recorded answer each), a
 * server-side failure (garbage: it stops the server, started again for the next call), an answer.
 * One call per response: calls made together run in parallel, and their events interleave by timing
 * (against a server as against a cassette), so only sequential calls give one log byte for byte.
 */
const responses: ReadonlyArray<FakeModelProvider.ScriptedResponse> = [
  { chunks: ["Calling."], toolCalls: [call("echo", { text: "hi" })] },
  { toolCalls: [call("add", { a: 2, b: 3 })] },
  { toolCalls: [call("add", { b: 3, a: 2 })] },
  { toolCalls: [call("garbage", {})] },
  { chunks: ["done"] },
  { toolCalls: [call("echo", { text: "again" })] },
  { chunks: ["bye"] }
]
const allow: PermissionPolicy.Options = { rules: [{ name: "fixture", decision: "allow", tool: "mcp__fixture__*" }] }

const session = <E, R>(tools: Layer.Layer<ToolRouter, E, R>, script: FakeModelProvider.Options, cwd: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
    yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
    yield* collect(engine.runTurn({ sessionId, userMessage: "once more" }))
    return yield* collect(engine.replaySession({ sessionId }))
  }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, script).pipe(
    Layer.provide(Layer.mergeAll(tools, PermissionPolicy.layer(allow))),
    Layer.provide(NodeContext.layer)
  )))

const ends = (events: ReadonlyArray<AgentEvent>) => events.flatMap((e) => (e.type === "tool.completed" || e.type === "tool.failed" ? [e.payload] : []))

layer(NodeContext.layer)("a cassette standing in for an MCP server", (it) => {
  it.scoped("recorded against the real server, exported, replayed with no server: the same log, byte for byte", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const markers = yield* tempDir
      const server = { command: process.execPath, args: [serverScript], env: { MARKER_DIR: markers } }
      const recorded = yield* session(
        McpTools.extend({ servers: { fixture: server }, cwd }).pipe(Layer.provide(WorkspaceTools.layer())),
        { responses },
        cwd
      )
      expectWellFormedLog(recorded)
      // Started, and started again after the garbage answer stopped it.
      const started = starts(markers)
      expect(started).toBe(2)
      expect(ends(recorded)).toEqual([
        expect.objectContaining({ result: "echo: hi" }),
        expect.objectContaining({ result: "5" }),
        expect.objectContaining({ result: "5" }),
        expect.objectContaining({ errorCode: "mcp_invalid_response" }),
        expect.objectContaining({ result: "echo: again" })
      ])

      // Through JSON, as `effect-agent export-script` writes it.
      const script = JSON.parse(JSON.stringify(Cassette.fromEvents(recorded))) as FakeModelProvider.Script
      expect(Object.keys(script.mcp ?? {})).toEqual(["fixture"])
      expect(script.mcp!.fixture!.calls.map((c) => c.tool)).toEqual(["mcp__fixture__echo", "mcp__fixture__add", "mcp__fixture__add", "mcp__fixture__garbage", "mcp__fixture__echo"])

      const replayed = yield* session(
        Layer.effect(ToolRouter, Effect.map(ToolRouter, (base) => McpCassette.router(script.mcp!, base))).pipe(Layer.provide(WorkspaceTools.layer())),
        script,
        cwd
      )
      // No server was started for the replay, and its log is the recording's, byte for byte.
      expect(starts(markers)).toBe(started)
      expect(JSON.stringify(replayed)).toBe(JSON.stringify(recorded))
    }), 60_000)

  it.scoped("a call the recording does not have fails typed at once, naming the call; the turn goes on", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const recording: McpCassette.Recording = {
        fixture: {
          tools: [{ name: "mcp__fixture__echo", description: "Repeats the text it is given.", inputSchema: { type: "object" } }],
          hash: "a".repeat(64),
          calls: [{ tool: "mcp__fixture__echo", args: { text: "hi" }, result: "echo: hi" }]
        }
      }
      const events = yield* session(
        Layer.effect(ToolRouter, Effect.map(ToolRouter, (base) => McpCassette.router(recording, base))).pipe(Layer.provide(WorkspaceTools.layer())),
        { responses: [{ toolCalls: [call("echo", { text: "hi" }), call("echo", { text: "other" })] }, { chunks: ["ok"] }, { toolCalls: [call("echo", { text: "hi" })] }, { chunks: ["ok"] }] },
        cwd
      )
      expectWellFormedLog(events)
      expect(ends(events)).toEqual([
        expect.objectContaining({ result: "echo: hi" }),
        expect.objectContaining({ errorCode: "mcp_not_recorded", message: expect.stringContaining(`mcp__fixture__echo {"text":"other"}`) }),
        // The one recorded answer was used: the same call again is not in the recording.
        expect.objectContaining({ errorCode: "mcp_not_recorded" })
      ])
      expect(events.filter((e) => e.type === "turn.completed").map((e) => e.payload)).toEqual([
        expect.objectContaining({ stopReason: "final" }),
        expect.objectContaining({ stopReason: "final" })
      ])
      // The recorded list is what the log records, with its hash.
      expect(events.find((e) => e.type === "mcp.tools_listed")?.payload).toMatchObject({ server: "fixture", hash: "a".repeat(64) })
    }), 60_000)

  it("the recording leaves out what the engine decided (a denied call), keeps the server's own failures", () => {
    const at = (sequence: number, type: string, payload: unknown) =>
      ({ id: `e${sequence}`, sessionId: "s", turnId: "turn_1", sequence, timestamp: "2026-01-01T00:00:00.000Z", type, payload }) as AgentEvent
    const recording = McpCassette.fromEvents([
      at(1, "mcp.tools_listed", { server: "gh", tools: [{ name: "mcp__gh__issue", description: "d", inputSchema: {} }], hash: "h1" }),
      at(2, "model.tool_call_requested", { toolCallId: "t1", tool: "mcp__gh__issue", args: { n: 1 } }),
      at(3, "tool.failed", { toolCallId: "t1", errorCode: "permission_denied", message: "no" }),
      at(4, "model.tool_call_requested", { toolCallId: "t2", tool: "mcp__gh__issue", args: { n: 2 } }),
      at(5, "tool.failed", { toolCallId: "t2", errorCode: "tool_error", message: "not found" }),
      at(6, "model.tool_call_requested", { toolCallId: "t3", tool: "read_file", args: { path: "x" } }),
      at(7, "tool.completed", { toolCallId: "t3", result: "x" }),
      at(8, "mcp.tools_listed", { server: "gh", tools: [], hash: "h2" })
    ])
    expect(recording).toEqual({
      gh: {
        tools: [{ name: "mcp__gh__issue", description: "d", inputSchema: {} }],
        hash: "h1",
        calls: [{ tool: "mcp__gh__issue", args: { n: 2 }, failure: { errorCode: "tool_error", message: "not found" } }]
      }
    })
    expect(McpCassette.fromEvents([at(1, "model.delta", { text: "no MCP here" })])).toBeUndefined()
  })
})
