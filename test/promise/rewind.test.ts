/**
 * The Promise façade with `checkpoints: true`: a turn's write is undone by `rewindSession`, and a
 * file changed outside the agent rejects with `RewindRefused` naming it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FakeModelProvider, makeSessionEngine, PermissionPolicy, WorkspaceTools } from "../../src/index.js"
import * as Layer from "effect/Layer"

const root = mkdtempSync(join(tmpdir(), "effect-agent-promise-rewind-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("makeSessionEngine with checkpoints", () => {
  it("rewindSession restores the files; a file changed outside the agent rejects RewindRefused until force", async () => {
    const cwd = join(root, "work")
    mkdirSync(cwd)
    writeFileSync(join(cwd, "a.txt"), "before\n")
    const engine = makeSessionEngine({
      dataDir: join(root, "data"),
      checkpoints: true,
      model: FakeModelProvider.layer({
        responses: [{ chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "after\n" } }] }, { chunks: ["Done."] }]
      }),
      services: Layer.mergeAll(WorkspaceTools.layer(), PermissionPolicy.layer({ mode: "acceptEdits" }))
    })
    try {
      const { sessionId } = await engine.createSession({ cwd, client: "test" })
      for await (const _ of engine.runTurn({ sessionId, userMessage: "write" })) { /* drained */ }
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("after\n")
      writeFileSync(join(cwd, "a.txt"), "mine\n")
      const refused = await engine.rewindSession({ sessionId, toSequence: 1 }).then(() => undefined, (error: unknown) => error)
      expect(refused).toMatchObject({ _tag: "RewindRefused", reason: "changed_outside", files: ["a.txt"] })
      const rewound = await engine.rewindSession({ sessionId, toSequence: 1, force: true })
      expect(rewound.forced).toEqual(["a.txt"])
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("before\n")
    } finally {
      await engine.dispose()
    }
  })
})
