/**
 * perf64steps (bench row 19: a turn of `read_file` steps): what a tool step costs, counted. A step's
 * request names no image in the usual case; it is then prepared as built, with no `Effect.map` over
 * `Images.attach` (which answered the request itself) and no walk of its messages for the images'
 * estimate. perf65steps: a response read to its end leaves its stream's channel executor unclosed
 * (the stream's own finalizers ran as it ended; `ModelProvider.runAheadIn`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { opsOf } from "./opsOf.js"

const steps = 20
const turn = () => [...Array.from({ length: steps }, () => ({ toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }] })), { chunks: ["done"] }]

describe("a tool step, counted", () => {
  it("a turn of 20 read_file steps on a warm engine costs at most 6,747 Effect operations", async () => {
    const root = mkdtempSync(join(tmpdir(), "step-cost-"))
    const cwd = join(root, "work")
    mkdirSync(cwd)
    writeFileSync(join(cwd, "a.txt"), "x".repeat(4095) + "\n")
    const rt = ManagedRuntime.make(SessionEngine.layer({ maxSteps: steps + 1 }).pipe(Layer.provide(Layer.mergeAll(
      MemoryEventStore.layer,
      FakeModelProvider.layer({ responses: [...turn(), ...turn()] }),
      IdGenerator.layerSequential,
      WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
      PermissionPolicy.layer()
    ))))
    try {
      const engine = await rt.runPromise(SessionEngine.SessionEngine)
      const { sessionId } = await rt.runPromise(engine.createSession({ cwd, client: "test" }))
      const run = Effect.orDie(Stream.runDrain(engine.runTurn({ sessionId, userMessage: "read it" })))
      // Warm: the first turn makes what later ones reuse.
      await rt.runPromise(run)
      const ops = await rt.runPromise(opsOf(run))
      // main before perf64steps: 8,490 (each step's request mapped over `Images.attach`'s answer); before
      // perf65steps 8,427 (each response's channel executor closed after its stream had ended).
      expect(ops).toBeLessThanOrEqual(6747)
    } finally {
      await rt.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })
})
