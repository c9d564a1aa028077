/**
 * Images of a user message in the engine: checked by their bytes (PNG/JPEG/GIF/WebP), capped in size
 * and count, refused whole with nothing stored, put once in the store's blob area and referenced by
 * `user.message`; the transcript and replay carry the references; a model that takes no images gets
 * a note in their place, and a blob that cannot be read is never sent.
 */
import * as fc from "effect/FastCheck"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { readFileSync } from "node:fs"
import * as NodePath from "node:path"
import { resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Image from "../../src/domain/Image.js"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect, engineLayer, tempDir } from "../helpers.js"
import { png as wholePng } from "../imageFiles.js"

const fixture = (name: string) => new Uint8Array(readFileSync(resolve(import.meta.dirname, "../../fixtures/images", name)))
const png = fixture("photo.png")
const gif = fixture("pixel.gif")
const webp = fixture("pixel.webp")
const jpeg = fixture("pixel.jpg")
const svg = fixture("evil.svg")

/** The engine on a memory store, its blob area included, and the scripted model (taking images or not). */
const engine = (model: { readonly images?: boolean } = {}) =>
  SessionEngineModule.layer().pipe(
    Layer.provideMerge(MemoryEventStore.layer),
    Layer.provideMerge(FakeModelProvider.layer({ record: true, ...model })),
    Layer.provideMerge(IdGenerator.layerSequential)
  )

const storedTypes = (sessionId: string) => Effect.flatMap(EventStore, (store) => Effect.map(collect(store.read(sessionId)), (events) => events.map((e) => e.type)))

describe("Image.sniff and Image.check", () => {
  it("tells the four formats by their magic bytes, and nothing else", () => {
    expect([png, jpeg, gif, webp].map(Image.sniff)).toEqual(["image/png", "image/jpeg", "image/gif", "image/webp"])
    expect(Image.sniff(svg)).toBeUndefined()
    // A declared type never makes bytes an image: an SVG sent as image/png is still refused.
    expect(Image.check({ data: svg, mediaType: "image/png" })).toMatchObject({ _tag: "ImageRefused", reason: "unsupported_type" })
    expect(Image.check({ data: png, mediaType: "image/gif" })).toMatchObject({ _tag: "ImageRefused", reason: "media_type_mismatch" })
    expect(Image.check({ data: jpeg, mediaType: "image/jpg" })).toBe("image/jpeg")
    expect(Image.check({ data: new Uint8Array(0) })).toMatchObject({ reason: "empty" })
    expect(Image.sniff(Uint8Array.from([0x89, 0x50, 0x4e]))).toBeUndefined()
    expect(Image.sniff(new TextEncoder().encode("RIFF\0\0\0\0WAVE"))).toBeUndefined()
  })
})

/**
 * A PNG of `width` × `height`: within 8000 a side a whole one (its pixels are checked now: `png` with
 * other IHDR fields is a damaged file, refused `unreadable`); over it, `png` saying so in its IHDR
 * (refused `too_large` by the header alone, before its body is looked at).
 */
const pngSized = (width: number, height: number) => {
  if (width <= Image.maxImageSide && height <= Image.maxImageSide) return wholePng(width, height)
  const bytes = Uint8Array.from(png)
  new DataView(bytes.buffer).setUint32(16, width)
  new DataView(bytes.buffer).setUint32(20, height)
  return bytes
}

/** `jpeg` saying it is `width` × `height` (its start-of-frame's fields, found by walking its segments). */
const jpegSized = (width: number, height: number) => {
  const bytes = Uint8Array.from(jpeg)
  const view = new DataView(bytes.buffer)
  let at = 2
  while (!(bytes[at + 1]! >= 0xc0 && bytes[at + 1]! <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(bytes[at + 1]!))) at += 2 + view.getUint16(at + 2)
  view.setUint16(at + 5, height)
  view.setUint16(at + 7, width)
  return bytes
}

// A few bytes can say an image is 100,000 pixels wide: Anthropic refuses an image over 8000 pixels a
// side, and an image in the transcript is sent again with every request, so one such read (a
// repository's logo.png) made every later request of the session fail.
describe("Image dimensions", () => {
  it("reads each format's size from its header; an image over 8000 pixels a side is refused too_large", () => {
    expect(Image.check({ data: pngSized(100_000, 1) })).toMatchObject({ _tag: "ImageRefused", reason: "too_large", detail: expect.stringContaining("100000×1 pixels") })
    expect(Image.check({ data: pngSized(8000, 8000) })).toBe("image/png")
    expect([png, jpeg, gif, webp].map((bytes) => Image.dimensions(bytes))).toEqual([{ width: 48, height: 32 }, { width: 1, height: 1 }, { width: 1, height: 1 }, { width: 1, height: 1 }])
    expect(Image.check({ data: pngSized(1, 8001) })).toMatchObject({ reason: "too_large" })
    expect(Image.check({ data: jpegSized(9000, 10) })).toMatchObject({ reason: "too_large", detail: expect.stringContaining("9000×10 pixels") })
    const wideGif = Uint8Array.from(gif)
    new DataView(wideGif.buffer).setUint16(6, 65_000, true)
    expect(Image.check({ data: wideGif })).toMatchObject({ reason: "too_large" })
    // A header cut short says no size (Image.check refuses it unreadable: imageStructure.test).
    expect(Image.dimensions(png.subarray(0, 20))).toBeUndefined()
    // Every format's header cut at each length says no size, never a read past the end (a VP8X WebP of 30 bytes threw).
    const vp8x = Uint8Array.from([...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8X"), ...new Array(18).fill(0)])
    for (const bytes of [png, jpeg, gif, webp, vp8x]) {
      for (let end = 0; end < Math.min(bytes.byteLength, 64); end++) expect(() => Image.dimensions(bytes.subarray(0, end))).not.toThrow()
    }
  })
})

// Any bytes after a format's magic: the size is read or not, never past the end (a hostile repository's file).
describe("Image.check on hostile bytes", () => {
  it("never throws for any bytes behind each format's magic", () => {
    const magics = [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0xff, 0xd8, 0xff], [...Buffer.from("GIF89a")], [...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8X")], [...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8L")], [...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8 ")]]
    fc.assert(
      fc.property(fc.constantFrom(...magics), fc.integer({ min: 0, max: 64 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })), (magic, rest) => {
        const bytes = Uint8Array.from([...magic, ...rest])
        expect(() => Image.check({ data: bytes })).not.toThrow()
      }),
      { numRuns: 2000, seed: 20261204 }
    )
  })

  it("Image.verify on any bytes behind each format's magic ends in a media type or a refusal, never a defect", async () => {
    const magics = [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0xff, 0xd8, 0xff], [...Buffer.from("GIF89a")], [...Buffer.from("RIFF"), 0, 0, 0, 0, ...Buffer.from("WEBPVP8X")]]
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...magics), fc.uint8Array({ maxLength: 96 }), async (magic, rest) => {
        const exit = await Effect.runPromiseExit(Effect.either(Image.verify({ data: Uint8Array.from([...magic, ...rest]) })))
        expect(exit._tag).toBe("Success")
      }),
      { numRuns: 1000, seed: 20261204 }
    )
  })
})

describe("runTurn with images", () => {
  it.effect("each image is put once in the blob area; user.message names them; the transcript carries them", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const blobs = yield* BlobStore
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }, { data: gif }, { data: png }] }))
      const message = events.find((e) => e.type === "user.message")!
      expect(message.type === "user.message" && message.payload.images?.map((i) => i.mediaType)).toEqual(["image/png", "image/gif", "image/png"])
      const refs = message.type === "user.message" ? message.payload.images! : []
      expect(refs[0]!.blob).toBe(refs[2]!.blob)
      expect(refs[0]!.bytes).toBe(png.byteLength)
      expect(Array.from(yield* blobs.get(refs[1]!.blob))).toEqual(Array.from(gif))
      const replayed = Transcript.replay(yield* collect(engine.replaySession({ sessionId })))
      expect(Transcript.messages(replayed)[0]).toEqual({ role: "user", content: "look", images: refs })
    }).pipe(Effect.provide(engine({ images: true }))))

  it.effect("a message without images stores user.message exactly as before (no images key)", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello", images: [] }))
      expect(events.find((e) => e.type === "user.message")!.payload).toStrictEqual({ content: "hello" })
    }).pipe(Effect.provide(engine())))

  const refusals: ReadonlyArray<[string, ReadonlyArray<Image.ImageInput>, string]> = [
    ["an SVG (a document that can run script)", [{ data: png }, { data: svg }], "Image #2 refused [unsupported_type]"],
    ["an image over the 5 MiB cap", [{ data: Uint8Array.from([...png.subarray(0, 8), ...new Uint8Array(Image.maxImageBytes)]) }], "[too_large]"],
    ["an image over 8000 pixels a side (in a few bytes)", [{ data: pngSized(100_000, 100_000) }], "[too_large]"],
    ["more than 20 images", Array.from({ length: Image.maxImagesPerMessage + 1 }, () => ({ data: gif })), "[too_many]"],
    ["a declared type the bytes contradict", [{ data: gif, mediaType: "image/png" }], "[media_type_mismatch]"],
    ["an empty image", [{ data: new Uint8Array(0) }], "[empty]"]
  ]
  for (const [what, images, reason] of refusals) {
    it.effect(`refuses ${what}: InvalidInput on images, no event and no blob stored`, () =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const blobs = yield* BlobStore
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const failure = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "look", images })))
        expect(failure).toMatchObject({ _tag: "InvalidInput", field: "images" })
        expect(failure.message).toContain(reason)
        expect(yield* storedTypes(sessionId)).toEqual(["session.created"])
        expect(yield* blobs.has(Buffer.from(yield* Effect.promise(() => crypto.subtle.digest("SHA-256", png))).toString("hex"))).toBe(false)
        // The session is still usable.
        yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
      }).pipe(Effect.provide(engine({ images: true }))))
  }

  it.effect("an empty text with no image is refused as before; an image alone is a message", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      expect(yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: " " })))).toMatchObject({ _tag: "InvalidInput", field: "userMessage" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "", images: [{ data: webp }] }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(engine({ images: true }))))

  it.effect("a model that takes no images gets a note in their place, and no bytes", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] }))
      const [request] = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      expect(request!.images).toBeUndefined()
      expect(request!.messages[0]).toEqual({ role: "user", content: `look\n[image image/png, ${png.byteLength} bytes (${request!.messages[0]!.content.match(/\(([0-9a-f]{12})\)/)![1]}): this model does not take images]` })
    }).pipe(Effect.provide(engine())))

  it.effect("each image counts in the context estimate: a request over the window with them is not sent", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // The text alone fits 2,000 tokens; with two images (1,600 each) it does not.
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }, { data: gif }] }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "context_overflow" })
      expect(yield* Effect.flatMap(FakeModel, (model) => model.requestCount)).toBe(0)
      const text = yield* collect(engine.runTurn({ sessionId: (yield* engine.createSession({ cwd: "/work", client: "test" })).sessionId, userMessage: "look" }))
      expect(text.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(SessionEngineModule.layer({ compaction: { onOverflow: false } }).pipe(
      Layer.provideMerge(MemoryEventStore.layer),
      Layer.provideMerge(FakeModelProvider.layer({ images: true, maxContextTokens: 2_000 })),
      Layer.provideMerge(IdGenerator.layerSequential)
    ))))

  // An image sent as a note (a model that takes none, one over a request's limits) is its note's
  // text, a few dozen tokens: it counted 1,600 as if it were sent, so a session of many images
  // reached its window (context_overflow, or a compaction) though the requests were small.
  it.effect("an image sent as a note counts as its text in the context estimate, not as an image", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      // Two images as notes fit 2,000 tokens; as images (1,600 each) they would not.
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }, { data: gif }] }))
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      const [request] = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      expect(request!.messages[0]!.content).toContain("this model does not take images")
    }).pipe(Effect.provide(SessionEngineModule.layer({ compaction: { onOverflow: false } }).pipe(
      Layer.provideMerge(MemoryEventStore.layer),
      Layer.provideMerge(FakeModelProvider.layer({ record: true, maxContextTokens: 2_000 })),
      Layer.provideMerge(IdGenerator.layerSequential)
    ))))

  it.effect("images left out over a request's 100 count as their notes: 120 small images fit a window of 100 images and some text", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (let turn = 0; turn < 6; turn++) {
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: `twenty ${turn}`, images: Array.from({ length: 20 }, (_, i) => ({ data: pngSized(turn * 20 + i + 1, 1) })) }))
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      }
      const last = (yield* Effect.flatMap(FakeModel, (model) => model.requests)).at(-1)!
      expect(last.messages.flatMap((m) => m.role === "assistant" ? [] : (m.images ?? []))).toHaveLength(100)
    }).pipe(Effect.provide(SessionEngineModule.layer({ compaction: { onOverflow: false } }).pipe(
      Layer.provideMerge(MemoryEventStore.layer),
      Layer.provideMerge(FakeModelProvider.layer({ record: true, images: true, maxContextTokens: Image.maxImagesPerRequest * Image.estimatedTokens + 10_000 })),
      Layer.provideMerge(IdGenerator.layerSequential)
    ))))

  it.effect("a model that takes images gets their bytes with the request", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] }))
      const [request] = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      const [ref] = (request!.messages[0] as { images: ReadonlyArray<Image.ImageRef> }).images
      expect(Array.from(request!.images!.get(ref!.blob)!)).toEqual(Array.from(png))
    }).pipe(Effect.provide(engine({ images: true }))))

  // Anthropic refuses an image over 2000 pixels a side in a request that carries more than 20
  // images. Every image of the transcript is sent again with every request: one 3000-pixel
  // screenshot read early, then 20 more images, and every later request of the session failed.
  it.effect("a request with more than 20 images gets a note in place of each over 2000 pixels a side; with 20 it is sent", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const wide = pngSized(3000, 100)
      yield* collect(engine.runTurn({ sessionId, userMessage: "one", images: [{ data: wide }] }))
      yield* collect(engine.runTurn({ sessionId, userMessage: "nineteen", images: Array.from({ length: 19 }, (_, i) => ({ data: pngSized(10 + i, 10) })) }))
      yield* collect(engine.runTurn({ sessionId, userMessage: "one more", images: [{ data: pngSized(2000, 2000) }] }))
      const requests = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      const sent = requests.map((request) =>
        request.messages.flatMap((m) => m.role === "assistant" ? [] : (m.images ?? [])).map((ref) => Image.dimensions(request.images!.get(ref.blob)!)!.width)
      )
      // 1 image, then 20: the 3000-pixel one is sent; then 21: it is not, the 2000-pixel one is.
      expect(sent.map((widths) => [widths.length, widths.includes(3000)])).toEqual([[1, true], [20, true], [20, false]])
      expect(sent[2]).toContain(2000)
      const first = requests[2]!.messages[0]!
      expect("images" in first).toBe(false)
      expect(first.content).toMatch(/^one\n\[image image\/png, \d+ bytes \([0-9a-f]{12}\): 3000×100 pixels, over the 2000 a side a request of more than 20 images may carry\]$/)
    }).pipe(Effect.provide(engine({ images: true }))))

  // Anthropic takes at most 100 images a request (200k-token models) and 32 MB a request, base64
  // included: five 4.5 MiB screenshots read over a session, or 101 small images, and every later
  // request carried them all and was refused.
  it.effect("a request carries the newest images within 100 and 20 MiB; the older get a note", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const heavy = (i: number) => wholePng(100 + i, 100, { bytes: 4.5 * 1024 * 1024 })
      for (let i = 0; i < 5; i++) yield* collect(engine.runTurn({ sessionId, userMessage: `heavy ${i}`, images: [{ data: heavy(i) }] }))
      const sent = (request: { readonly messages: ReadonlyArray<Transcript.Message>; readonly images?: ReadonlyMap<string, Uint8Array> | undefined }) =>
        request.messages.flatMap((m) => m.role === "assistant" ? [] : (m.images ?? [])).map((ref) => Image.dimensions(request.images!.get(ref.blob)!)!.width)
      const requests = yield* Effect.flatMap(FakeModel, (model) => model.requests)
      expect(requests.map(sent)).toEqual([[100], [100, 101], [100, 101, 102], [100, 101, 102, 103], [101, 102, 103, 104]])
      expect(requests[4]!.messages[0]!.content).toMatch(/^heavy 0\n\[image image\/png, 4718592 bytes \([0-9a-f]{12}\): left out, a request carries at most 100 images and 20 MiB of them, the newest\]$/)
      const { sessionId: many } = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (let turn = 0; turn < 6; turn++) {
        yield* collect(engine.runTurn({ sessionId: many, userMessage: `twenty ${turn}`, images: Array.from({ length: 20 }, (_, i) => ({ data: pngSized(turn * 20 + i + 1, 1) })) }))
      }
      const last = sent((yield* Effect.flatMap(FakeModel, (model) => model.requests)).at(-1)!)
      expect([last.length, last[0], last.at(-1)]).toEqual([100, 21, 120])
    }).pipe(Effect.provide(SessionEngineModule.layer({ compaction: { onOverflow: false } }).pipe(
      Layer.provideMerge(MemoryEventStore.layer),
      Layer.provideMerge(FakeModelProvider.layer({ record: true, images: true, maxContextTokens: 10_000_000 })),
      Layer.provideMerge(IdGenerator.layerSequential)
    ))))

  it.effect("an engine whose store has no blob area refuses images (nothing stored) and still takes text", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const failure = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }] })))
      expect(failure.message).toContain("no blob area")
      expect(yield* storedTypes(sessionId)).toEqual(["session.created"])
    }).pipe(Effect.provide(engineLayer(Layer.effect(EventStore, MemoryEventStore.make), { images: true }))))
})

describe("sessionImage", () => {
  /** The memory store, counting the events its reads hand out (a whole log or its rest). */
  const counting = Layer.effect(
    EventStore,
    Effect.map(EventStore, (store) => {
      const read: EventStore.Service["read"] = (sessionId, options) => store.read(sessionId, options).pipe(Stream.tap(() => Effect.sync(() => readEvents.count++)))
      return { ...store, read }
    })
  ).pipe(Layer.provideMerge(MemoryEventStore.layer))
  const readEvents = { count: 0 }

  it.effect("a session's images are found by reading its log once, then only what was appended since; another session's are not found", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
      const other = yield* engine.createSession({ cwd: "/work", client: "test" })
      const refsOf = (events: ReadonlyArray<{ readonly type: string; readonly payload: unknown }>) =>
        events.flatMap((e) => e.type === "user.message" ? (e.payload as { images?: ReadonlyArray<{ blob: string }> }).images ?? [] : [])
      const first = refsOf(yield* collect(engine.runTurn({ sessionId, userMessage: "one", images: [{ data: png }, { data: gif }] })))
      const second = refsOf(yield* collect(engine.runTurn({ sessionId, userMessage: "two", images: [{ data: webp }] })))
      const length = (yield* collect(engine.replaySession({ sessionId }))).length
      readEvents.count = 0
      for (const ref of [...first, ...second]) expect((yield* engine.sessionImage({ sessionId, blob: ref.blob })).bytes.byteLength).toBeGreaterThan(0)
      // The whole log once for three images (it was read per image before).
      expect(readEvents.count).toBe(length)
      const third = refsOf(yield* collect(engine.runTurn({ sessionId, userMessage: "three", images: [{ data: jpeg }] })))
      const grown = (yield* collect(engine.replaySession({ sessionId }))).length
      readEvents.count = 0
      expect((yield* engine.sessionImage({ sessionId, blob: third[0]!.blob })).mediaType).toBe("image/jpeg")
      expect(readEvents.count).toBe(grown - length)
      // Named by another session only: not this one's, whatever the blob area holds.
      expect((yield* Effect.flip(engine.sessionImage({ sessionId: other.sessionId, blob: first[0]!.blob })))._tag).toBe("BlobNotFound")
      expect((yield* Effect.flip(engine.sessionImage({ sessionId: "sess_nope", blob: first[0]!.blob })))._tag).toBe("SessionNotFound")
    }).pipe(Effect.provide(SessionEngineModule.layer().pipe(
      Layer.provideMerge(counting),
      Layer.provideMerge(FakeModelProvider.layer({ images: true })),
      Layer.provideMerge(IdGenerator.layerSequential)
    ))))
})

describe("images across a restart", () => {
  /** The engine on a JSONL store in `dataDir` (its blob area included) and a fresh scripted model taking images: one process. */
  const process = (dataDir: string) =>
    SessionEngineModule.layer().pipe(
      Layer.provideMerge(JsonlEventStore.layer({ dataDir })),
      Layer.provideMerge(FakeModelProvider.layer({ record: true, images: true })),
      Layer.provideMerge(IdGenerator.layerSequential),
      Layer.provide(NodeContext.layer)
    )

  it.scoped("the next turn after the process restarted sends the session's images again, as the first process sent them", () =>
    Effect.gen(function*() {
      const dataDir = NodePath.join(yield* tempDir, "data")
      const first = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        yield* collect(engine.runTurn({ sessionId, userMessage: "look", images: [{ data: png }, { data: gif }] }))
        yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
        const requests = yield* Effect.flatMap(FakeModel, (model) => model.requests)
        return { sessionId, request: requests.at(-1)! }
      }).pipe(Effect.provide(process(dataDir)))
      const resumed = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        yield* collect(engine.runTurn({ sessionId: first.sessionId, userMessage: "again" }))
        return (yield* Effect.flatMap(FakeModel, (model) => model.requests))[0]!
      }).pipe(Effect.provide(process(dataDir)))
      // The first process's last request is the resumed one's start: the same messages, images included.
      expect(resumed.messages.slice(0, first.request.messages.length)).toEqual(first.request.messages)
      const refs = (resumed.messages[0] as { images: ReadonlyArray<Image.ImageRef> }).images
      expect(refs.map((ref) => ref.mediaType)).toEqual(["image/png", "image/gif"])
      expect([...resumed.images!.keys()]).toEqual([...first.request.images!.keys()])
      expect(Array.from(resumed.images!.get(refs[0]!.blob)!)).toEqual(Array.from(png))
      expect(Array.from(resumed.images!.get(refs[1]!.blob)!)).toEqual(Array.from(gif))
    }).pipe(Effect.provide(NodeContext.layer)))
})
