/**
 * review55: two subagents at once in one cwd. A's shell command's snapshot took B's `write_file`
 * as A's change, and rewinding A (as docs/sessions.md advises for a subagent's changes) deleted
 * B's file. Ordered by files, not time: A's command starts, B writes, then A's command ends.
 */
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect } from "../helpers.js"

const engine = (model: FakeModelProvider.Options) =>
  SessionEngineModule.layer().pipe(
    Layer.provideMerge(PreImages.layer()),
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({ mode: "bypass" })),
    Layer.provideMerge(MemoryEventStore.layer),
    Layer.provideMerge(FakeModelProvider.layer({ record: true, ...model })),
    Layer.provideMerge(IdGenerator.layerSequential),
    Layer.provideMerge(NodeContext.layer)
  )
const task = (prompt: string, id: string) => ({ tool: "task", args: { description: prompt, prompt }, id })
/** A python program that waits until `file` exists (the condition itself, no deadline of its own). */
const waitFor = (file: string) => `import os, time\nwhile not os.path.exists('${file}'): time.sleep(0.02)`

describe("concurrent subagents and rewind", () => {
  it.live("a sibling's write_file made while a command ran is not the command's change: rewinding the command's session keeps it", () =>
    Effect.gen(function*() {
      const cwd = yield* Effect.promise(async () => NodeFs.realpath(await NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-siblings-"))))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "two tasks" }))
        const started = events.filter((e): e is Extract<AgentEvent, { type: "subagent.started" }> => e.type === "subagent.started")
        const childA = started.find((e) => e.payload.toolCallId === "ta")!.payload.childSessionId
        const logA = yield* collect(engine.replaySession({ sessionId: childA }))
        const recorded = logA.flatMap((e) => e.type === "workspace.changed" ? [e.payload] : [])
        expect(recorded.flatMap((p) => p.changes.map((c) => c.path))).toEqual(["a.txt", "started.txt"])
        expect(recorded[0]?.incomplete).toMatch(/^another call wrote b\.txt while this command ran/)
        const rewound = yield* engine.rewindSession({ sessionId: childA, toSequence: 1 })
        expect(rewound.changes.map((c) => c.path).sort()).toEqual(["a.txt", "started.txt"])
        expect(yield* Effect.promise(() => NodeFs.readFile(NodePath.join(cwd, "b.txt"), "utf8"))).toBe("B's work\n")
      }).pipe(Effect.provide(engine({
        responses: [{ toolCalls: [task("A", "ta"), task("B", "tb")] }, { chunks: ["both done"] }],
        subagents: {
          A: [
            { toolCalls: [{ tool: "shell", args: { command: `python3 -c "open('started.txt', 'w').close()\n${waitFor("b.txt")}\nopen('a.txt', 'w').close()"` } }] },
            { chunks: ["A done"] }
          ],
          B: [
            { toolCalls: [{ tool: "shell", args: { command: `python3 -c "${waitFor("started.txt")}"` } }] },
            { toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "B's work\n" } }] },
            { chunks: ["B done"] }
          ]
        }
      })), Effect.ensuring(Effect.promise(() => NodeFs.rm(cwd, { recursive: true, force: true }))))
    }))
})
