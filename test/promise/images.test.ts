/**
 * The Promise façade takes images with a turn (`runTurn({ …, images })`): stored in the store's blob
 * area, named by `user.message`; a refused image rejects with `InvalidInput` and stores nothing.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { makeSessionEngine } from "../../src/index.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const dataDir = mkdtempSync(join(tmpdir(), "effect-agent-promise-images-"))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

describe("makeSessionEngine with images", () => {
  it("runTurn takes images; a refused one rejects InvalidInput with nothing stored", async () => {
    const engine = makeSessionEngine({ dataDir })
    try {
      const session = await engine.createSession({ cwd: dataDir, client: "test" })
      const svg = new Uint8Array(readFileSync(join(fixtures, "evil.svg")))
      const refusal = await (async () => {
        for await (const _ of engine.runTurn({ sessionId: session.sessionId, userMessage: "look", images: [{ data: svg }] })) { /* nothing arrives */ }
      })().then(() => undefined, (error: unknown) => error)
      expect(refusal).toMatchObject({ _tag: "InvalidInput", field: "images" })

      const jpeg = new Uint8Array(readFileSync(join(fixtures, "pixel.jpg")))
      const events: Array<AgentEvent> = []
      for await (const event of engine.runTurn({ sessionId: session.sessionId, userMessage: "look", images: [{ data: jpeg, mediaType: "image/jpeg" }] })) events.push(event)
      const message = events.find((e) => e.type === "user.message")!
      expect(message.payload).toMatchObject({ content: "look", images: [{ mediaType: "image/jpeg", bytes: jpeg.byteLength }] })
      const state = await engine.sessionState({ sessionId: session.sessionId })
      expect(state.turnCount).toBe(1)
      const blob = (message.payload as { images: ReadonlyArray<{ blob: string }> }).images[0]!.blob
      expect(readdirSync(join(dataDir, "blobs", blob.slice(0, 2)))).toEqual([blob])
    } finally {
      await engine.dispose()
    }
  })
})
