/**
 * Leftovers 41, item 3: a tool call's arguments are stored twice — in `model.tool_call_requested` and
 * again in `tool.started` (CONTRACT.md's table gives both `{ toolCallId, tool, args }`, and a reader of
 * `tool.started` alone, a client joining mid-call, sees what runs). Measured with 1 MiB of arguments
 * (docs/events.md): the JSONL log is 2.10 MB, a loaded session holds them once (the transcript's call;
 * ≈ 1.4 MB retained), a client that collects every event holds both (≈ 2.3 MB). Kept: dropping either
 * copy changes an event's content. This pins what the docs say.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { collect, engineLayer, tempDir, testTools } from "../helpers.js"

const argumentBytes = 1024 * 1024

describe("a tool call's arguments", () => {
  it.scoped("are stored in model.tool_call_requested and again, the same, in tool.started: the log holds them twice", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const args = { content: "x".repeat(argumentBytes) }
      const layer = engineLayer(JsonlEventStore.layer({ dataDir }), { responses: [{ chunks: ["Saving."], toolCalls: [{ tool: "save", args }] }, { chunks: ["Saved."] }] }).pipe(
        Layer.provideMerge(testTools({ save: { risk: "read", run: () => Effect.succeed({ result: "saved" }) } })),
        Layer.provideMerge(PermissionPolicy.layer()),
        Layer.provideMerge(NodeContext.layer)
      )
      const events = yield* Effect.provide(
        Effect.gen(function*() {
          const engine = yield* SessionEngine
          const session = yield* engine.createSession({ cwd: "/work", client: "test" })
          return yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "go" }))
        }),
        layer
      )
      const requested = events.find((event) => event.type === "model.tool_call_requested")
      const started = events.find((event) => event.type === "tool.started")
      expect(requested?.payload).toMatchObject({ args })
      expect(started?.payload).toMatchObject({ args })
      const log = readFileSync(join(dataDir, "sessions", `${started!.sessionId}.jsonl`), "utf8")
      const lines = log.split("\n").filter((line) => line.length > argumentBytes).map((line) => JSON.parse(line).type)
      expect(lines).toEqual(["model.tool_call_requested", "tool.started"])
      expect(log.length).toBeLessThan(2 * argumentBytes + 16 * 1024)
    }).pipe(Effect.provide(NodeContext.layer)))
})
