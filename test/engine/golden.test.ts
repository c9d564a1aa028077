import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect, jsonlEngine, tempDir } from "../helpers.js"

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
