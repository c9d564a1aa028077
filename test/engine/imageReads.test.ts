/**
 * How often a step reads its images' blobs (StepRequest.build): once, though a step that compacts
 * builds its request twice; and not at all when the request overflows the window whatever its
 * images turn out to be (sent, or notes). Counted by a BlobStore layer over the memory store's.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Context from "effect/Context"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect } from "../helpers.js"

const png = new Uint8Array(readFileSync(resolve(import.meta.dirname, "../../fixtures/images", "photo.png")))

/** The blobs read (`get`), in order. */
class Reads extends Context.Tag("test/Reads")<Reads, Ref.Ref<ReadonlyArray<string>>>() {}

/** The memory store's blob area, each `get` counted. */
const counting = Layer.effectContext(Effect.gen(function*() {
  const inner = yield* BlobStore
  const reads = yield* Ref.make<ReadonlyArray<string>>([])
  const service: BlobStore.Service = { ...inner, get: (hash) => Effect.zipRight(Ref.update(reads, (all) => [...all, hash]), inner.get(hash)) }
  return Context.make(BlobStore, service).pipe(Context.add(Reads, reads))
}))

const engine = (options: SessionEngineModule.Options, maxContextTokens: number) =>
  SessionEngineModule.layer(options).pipe(
    Layer.provideMerge(counting),
    Layer.provideMerge(MemoryEventStore.layer),
    Layer.provideMerge(FakeModelProvider.layer({ record: true, images: true, maxContextTokens })),
    Layer.provideMerge(IdGenerator.layerSequential)
  )

const readCount = Effect.flatMap(Reads, Ref.get)

describe("a step reads its images' blobs", () => {
  it.effect("once on a step that compacts (its request is built twice)", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "first, without an image" }))
      // The image (1,600 tokens) passes the threshold (1,000): the first turn is compacted, this message kept.
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] }))
      expect(events.map((e) => e.type)).toContain("session.compacted")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      // The request sent after the compaction carries the image's bytes.
      expect((yield* Effect.flatMap(FakeModel, (model) => model.requests)).at(-1)!.images?.size).toBe(1)
      expect(yield* readCount).toHaveLength(1)
    }).pipe(Effect.provide(engine({ compaction: { threshold: 0.1, keepRecentTokens: 0 } }, 10_000))))

  it.effect("not at all when the request overflows whatever its images turn out to be", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // About 3,000 tokens of text alone: over the window of 2,000 with or without the image.
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "word ".repeat(2_400), images: [{ data: png }] }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "context_overflow" })
      expect(yield* readCount).toEqual([])
    }).pipe(Effect.provide(engine({ compaction: { onOverflow: false } }, 2_000))))

  it.effect("once on a step that sends them, and the estimate still counts a note as its text", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(yield* readCount).toHaveLength(1)
    }).pipe(Effect.provide(engine({}, 10_000))))
})
