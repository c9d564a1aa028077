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
import { png as pngOf } from "../imageFiles.js"

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

  /** The blobs `body`'s steps read. */
  const readsOf = <A, E, R>(body: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const before = (yield* readCount).length
      yield* body
      return (yield* readCount).slice(before)
    })
  const lastRequest = Effect.map(Effect.flatMap(FakeModel, (model) => model.requests), (all) => all.at(-1)!)

  it.effect("only the newest images within a request's 100 are read; the older are notes, never read", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const turn = (t: number) =>
        collect(engine.runTurn({ sessionId, userMessage: `turn ${t}`, images: Array.from({ length: 20 }, (_, i) => ({ data: pngOf(8 + 20 * t + i, 8) })) }))
      for (let t = 0; t < 5; t++) yield* turn(t)
      // 120 images in the transcript: the step sends the newest 100, and reads only them (it read all 120).
      const reads = yield* readsOf(turn(5))
      const request = yield* lastRequest
      expect(reads).toHaveLength(100)
      expect(request.images?.size).toBe(100)
      expect(new Set(reads)).toEqual(new Set(request.images!.keys()))
      const first = request.messages[0]!
      expect(first.role === "user" && first.images).toBeFalsy()
      expect(first.content.split("\n").filter((line) => line.includes("left out, a request carries at most 100 images"))).toHaveLength(20)
    }).pipe(Effect.provide(engine({}, 1_000_000))))

  it.effect("only the newest images within a request's 20 MiB are read, judged by the size the log stores", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // Five of 4.5 MiB: the newest four (18 MiB) are sent; the oldest, which would make 22.5, is a note and is not read.
      const images = Array.from({ length: 5 }, (_, i) => ({ data: pngOf(8 + i, 8, { bytes: 4.5 * 1024 * 1024 }) }))
      const reads = yield* readsOf(collect(engine.runTurn({ sessionId, userMessage: "look", images })))
      const request = yield* lastRequest
      expect(reads).toHaveLength(4)
      expect(request.images?.size).toBe(4)
      const message = request.messages[0]!
      expect(message.role === "user" && message.images?.length).toBe(4)
      expect(message.content).toMatch(/^look\n\[image image\/png, 4718592 bytes \([0-9a-f]{12}\): left out, a request carries at most 100 images and 20 MiB of them, the newest\]$/)
    }).pipe(Effect.provide(engine({}, 1_000_000))))
})
