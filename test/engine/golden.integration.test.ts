import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PromptComposer from "../../src/layers/PromptComposer.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, expectWellFormedLog, jsonlEngine, tempDir } from "../helpers.js"

const fixture = new URL("../../fixtures/golden/minimal.jsonl", import.meta.url).pathname

describe("golden 1: the minimal path", () => {
  it.scoped("hello → [hi, there] is stored byte for byte as fixtures/golden/minimal.jsonl", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const session = yield* engine.createSession({ cwd: "/tmp", client: "test" })
        yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "hello" }))
        const log = yield* fs.readFileString(`${dataDir}/sessions/${session.sessionId}.jsonl`)
        if (process.env.UPDATE_GOLDEN === "1") yield* fs.writeFileString(fixture, log)
        expect(log).toBe(yield* fs.readFileString(fixture))
      }).pipe(Effect.provide(jsonlEngine(dataDir, { responses: [{ chunks: ["hi", " there"] }] })))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("golden 2: tools, a policy decision and a user approval", () => {
  // A fixed workspace path, so the log (which records the cwd) is the same on every run.
  const workspace = "/tmp/effect-agent-golden-tools"
  const toolsFixture = new URL("../../fixtures/golden/tools.jsonl", import.meta.url).pathname
  const script = {
    responses: [
      { chunks: ["I'll check", " that the file exists."], toolCalls: [{ tool: "shell", args: { command: "ls src/foo.ts" } }] },
      { chunks: ["It exists; renaming it."], toolCalls: [{ tool: "shell", args: { command: "mv src/foo.ts src/bar.ts" } }] },
      { chunks: ["Done."] }
    ]
  }
  const policy = PermissionPolicy.layer({ rules: [{ name: "read-allow", tool: "shell", command: "ls *", decision: "allow" }] })

  it.scoped("matches fixtures/golden/tools.jsonl byte for byte, the ask answered through resolvePermission", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dataDir = yield* tempDir
      yield* fs.remove(workspace, { recursive: true }).pipe(Effect.ignore)
      // Outside the run's temp folder (the path is in the golden log): removed however the test ends.
      yield* Effect.addFinalizer(() => fs.remove(workspace, { recursive: true }).pipe(Effect.ignore))
      yield* fs.makeDirectory(`${workspace}/src`, { recursive: true })
      yield* fs.writeFileString(`${workspace}/src/foo.ts`, "export const foo = 1\n")
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const session = yield* engine.createSession({ cwd: workspace, client: "test" })
        const emitted = yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "rename src/foo.ts to bar.ts" }).pipe(
          Stream.tap((event) =>
            event.type === "permission.resolved" && event.payload.decision === "ask"
              ? engine.resolvePermission({ sessionId: session.sessionId, toolCallId: event.payload.toolCallId, decision: "allow" })
              : Effect.void
          )
        ))
        const log = yield* fs.readFileString(`${dataDir}/sessions/${session.sessionId}.jsonl`)
        if (process.env.UPDATE_GOLDEN === "1") yield* fs.writeFileString(toolsFixture, log)
        expect(log).toBe(yield* fs.readFileString(toolsFixture))
        expect(yield* fs.exists(`${workspace}/src/bar.ts`)).toBe(true)
        const events = yield* collect(engine.replaySession({ sessionId: session.sessionId }))
        expect(events.slice(1)).toEqual(emitted)
        expectWellFormedLog(events)
      }).pipe(Effect.provide(
        jsonlEngine(dataDir, script).pipe(
          Layer.provideMerge(WorkspaceTools.layer()),
          Layer.provideMerge(policy),
          Layer.provideMerge(PromptComposer.layer()),
          Layer.provideMerge(NodeContext.layer)
        )
      ))
    }).pipe(Effect.provide(NodeContext.layer)))
})
