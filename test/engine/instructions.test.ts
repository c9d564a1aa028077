import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { afterEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PromptComposer from "../../src/layers/PromptComposer.js"
import { collect, engineLayer, tempDir, testTools } from "../helpers.js"

const made: Array<string> = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A workspace (real path, no repository above it) with an AGENTS.md. */
const workspace = (rules: string) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-instructions-")))
  made.push(dir)
  writeFileSync(join(dir, "AGENTS.md"), rules)
  return dir
}

/** A tool that rewrites the workspace's AGENTS.md mid-turn, as a model with a shell could. */
const rewrite = (dir: string) =>
  testTools({ rewrite: { run: () => Effect.sync(() => writeFileSync(join(dir, "AGENTS.md"), "rules v2")).pipe(Effect.as({ result: "ok" })) } })

const engine = (dataDir: string, dir: string, composer: PromptComposer.Options) =>
  engineLayer(JsonlEventStore.layer({ dataDir }), {
    responses: [{ toolCalls: [{ tool: "rewrite", args: {} }] }, { chunks: ["done"] }, { chunks: ["second turn"] }]
  }).pipe(
    Layer.provideMerge(rewrite(dir)),
    Layer.provideMerge(PermissionPolicy.layer({ rules: [{ name: "test", tool: "rewrite", decision: "allow" }] })),
    Layer.provideMerge(PromptComposer.layer(composer)),
    Layer.provideMerge(NodeContext.layer)
  )

const turn = (sessionId: string, userMessage: string) => Effect.flatMap(SessionEngine, (e) => collect(e.runTurn({ sessionId, userMessage })))

describe("project instructions in the engine", () => {
  it.scoped("are read once per turn: a turn's steps send what its first read, the next turn the new text; context.built records them", () =>
    Effect.gen(function*() {
      const dir = workspace("rules v1")
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const { sessionId } = yield* Effect.flatMap(SessionEngine, (e) => e.createSession({ cwd: dir, client: "test" }))
        const first = yield* turn(sessionId, "go")
        const second = yield* turn(sessionId, "again")
        const systems = (yield* Effect.flatMap(FakeModel, (m) => m.requests)).map((r) => r.system)
        expect(systems).toHaveLength(3)
        // Both steps of turn 1 carry v1, though the tool changed the file between them.
        expect(systems[0]).toContain("rules v1")
        expect(systems[1]).toContain("rules v1")
        expect(systems[2]).toContain("rules v2")
        expect(systems[2]).not.toContain("rules v1")
        const built = [...first, ...second].filter((e) => e.type === "context.built").map((e) => e.payload)
        expect(built.map((p) => p.instructions)).toEqual([
          [{ name: "instructions:AGENTS.md", source: "project", path: "AGENTS.md", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), tokens: expect.any(Number) }],
          [{ name: "instructions:AGENTS.md", source: "project", path: "AGENTS.md", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), tokens: expect.any(Number) }]
        ])
        expect(built[0]!.instructions![0]!.sha256).not.toBe(built[1]!.instructions![0]!.sha256)
        // The log as stored decodes with the new field, and its line carries the field as written.
        const fs = yield* FileSystem.FileSystem
        // The first line is the format header.
        const lines = (yield* fs.readFileString(join(dataDir, "sessions", `${sessionId}.jsonl`))).trim().split("\n").slice(1)
        const stored = lines.map((line) => Schema.decodeUnknownSync(AgentEvent)(JSON.parse(line)))
        expect(stored.filter((e) => e.type === "context.built").map((e) => e.payload)).toEqual(built)
      }).pipe(Effect.provide(engine(dataDir, dir, { projectInstructions: { home: "/" } })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("turned off (projectInstructions: false): no file is read and context.built has no instructions field", () =>
    Effect.gen(function*() {
      const dir = workspace("rules v1")
      const dataDir = yield* tempDir
      yield* Effect.gen(function*() {
        const { sessionId } = yield* Effect.flatMap(SessionEngine, (e) => e.createSession({ cwd: dir, client: "test" }))
        const events = yield* turn(sessionId, "go")
        const systems = (yield* Effect.flatMap(FakeModel, (m) => m.requests)).map((r) => r.system)
        expect(systems.some((s) => s.includes("rules v1"))).toBe(false)
        const built = events.find((e) => e.type === "context.built")!
        expect(Object.keys(built.payload)).toEqual(["tokens"])
      }).pipe(Effect.provide(engine(dataDir, dir, { projectInstructions: false })))
    }).pipe(Effect.provide(NodeContext.layer)))
})
