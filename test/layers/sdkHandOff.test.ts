/**
 * The SDK adapters' hand-over to the engine (`Support.fromSdk` told the engine's commit window by its
 * run-ahead, `ModelProvider.currentHandOff`): through each vendor's real SDK against the local wire
 * server, a vendor writing one delta per socket write — a paced stream — is handed to the engine in
 * a few batches, not one a delta; the step's first delta is handed over before the vendor sends the
 * second; a cancel while later deltas gather ends the turn at once, the request aborted; and a
 * failure while they gather keeps every delta before it. A window of an hour: nothing here waits it out.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as ModelProvider from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog } from "../helpers.js"
import { untilClosed } from "./providerTurns.js"
import type * as WireServer from "./WireServer.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const layers = WireStreams.vendorLayers(() => server)
const { a, deltasOf, engine, o, replay, sse } = WireStreams

type Event = Record<string, unknown>

/** A vendor's response around text deltas: what comes before the first, a delta, what ends it, and a failure mid-stream. */
interface Vendor {
  readonly name: string
  readonly layer: () => Layer.Layer<ModelProvider.ModelProvider>
  readonly head: ReadonlyArray<Event>
  readonly delta: (text: string) => Event
  readonly tail: ReadonlyArray<Event>
  readonly failure: Event
  readonly errorCode: string
  /** Whether the stream ends with `data: [DONE]`. */
  readonly done: boolean
}

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "anthropic",
    layer: layers.anthropic,
    head: [a.start, { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    delta: (text: string) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
    tail: [{ type: "content_block_stop", index: 0 }, ...a.end("end_turn")],
    failure: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    errorCode: "overloaded",
    done: false
  },
  {
    name: "openai",
    layer: layers.openai,
    head: [o.chunk({ role: "assistant", content: "" })],
    delta: (text: string) => o.chunk({ content: text }),
    tail: [o.chunk({}, "stop"), o.usage],
    failure: { error: { message: "server error", type: "server_error", param: null, code: null } },
    errorCode: "server",
    done: true
  }
]

/** A streamed response written one SSE message per socket write, each once the one before it was flushed. */
const paced = (events: ReadonlyArray<Event>, done: boolean, before: (i: number) => Promise<void> | undefined): WireServer.Recording => {
  const recording = sse(events, done)
  return { ...recording, pieces: recording.body.split(/(?<=\n\n)/), before }
}

/** The provider, with the sizes of the chunks its stream hands the engine's reader: one wake-up of the reader each. */
const counted = (layer: () => Layer.Layer<ModelProvider.ModelProvider>, handed: Array<number>) => () =>
  Layer.effect(
    ModelProvider.ModelProvider,
    Effect.map(ModelProvider.ModelProvider, (provider) =>
      ModelProvider.ModelProvider.of({
        ...provider,
        stream: (request) =>
          Stream.mapChunks(provider.stream(request), (chunk) => {
            if (chunk.length > 0) handed.push(chunk.length)
            return chunk
          })
      }))
  ).pipe(Layer.provide(layer()))

const hourWindow = { commitWindow: "1 hour" } as const

const texts = (n: number) => Array.from({ length: n }, (_, i) => `d${i} `)

/**
 * A turn whose consumer opens `firstSeen` at its first delta, forked; the session and the fiber.
 */
const turnOpening = (firstSeen: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
    const turn = yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(
      Stream.tap((e) => (e.type === "model.delta" ? Deferred.succeed(firstSeen, undefined) : Effect.void)),
      collect,
      Effect.fork
    )
    return { engine, sessionId, turn }
  })

describe("the SDK adapters' hand-over to the engine", () => {
  for (const vendor of vendors) {
    it.effect(`${vendor.name}: a paced stream is handed over in a few batches, the first delta before the vendor sends the second`, () => {
      const handed: Array<number> = []
      return Effect.gen(function*() {
        const firstSeen = yield* Deferred.make<void>()
        const sent = texts(300)
        const firstDelta = vendor.head.length
        // The second delta is written only once the turn's consumer has the first.
        server.respond(paced([...vendor.head, ...sent.map((text) => vendor.delta(text)), ...vendor.tail], vendor.done, (i) =>
          i === firstDelta + 1 ? Effect.runPromise(Deferred.await(firstSeen)) : undefined))
        const { sessionId, turn } = yield* turnOpening(firstSeen)
        const events = yield* Fiber.join(turn)
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(deltasOf(events)).toEqual(sent)
        const stored = yield* replay(sessionId)
        expect(stored.slice(1)).toEqual(events)
        expectWellFormedLog(stored)
        // The first delta alone, the rest gathered for the window — which the stream's end cut short.
        // (One chunk a delta, 300 and more, before the window reached the adapter.)
        expect(handed.length).toBeLessThanOrEqual(4)
        expect(handed[0]).toBe(1)
      }).pipe(Effect.provide(engine(counted(vendor.layer, handed), hourWindow)))
    })

    it.effect(`${vendor.name}: a cancel while later deltas gather ends the turn at once and aborts the request`, () =>
      Effect.gen(function*() {
        const firstSeen = yield* Deferred.make<void>()
        const written = yield* Deferred.make<void>()
        const sent = texts(6)
        const firstDelta = vendor.head.length
        // After the sixth delta the vendor writes nothing more: the stream stays open.
        server.respond(paced([...vendor.head, ...sent.map((text) => vendor.delta(text)), ...vendor.tail], vendor.done, (i) =>
          i === firstDelta + 1
            ? Effect.runPromise(Deferred.await(firstSeen))
            : i === firstDelta + sent.length
            ? Effect.runPromise(Effect.zipRight(Deferred.succeed(written, undefined), Effect.never))
            : undefined))
        const before = server.clientClosed()
        const { engine, sessionId, turn } = yield* turnOpening(firstSeen)
        yield* Deferred.await(written)
        yield* engine.cancelTurn({ sessionId })
        const events = yield* Fiber.join(turn)
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
        // Nothing of the window was stored: it waits an hour, and the cancel came first.
        expect(deltasOf(events)).toEqual(sent.slice(0, 1))
        yield* untilClosed(server, before)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer, hourWindow))))

    it.effect(`${vendor.name}: a failure while later deltas gather keeps every delta before it`, () =>
      Effect.gen(function*() {
        const firstSeen = yield* Deferred.make<void>()
        const sent = texts(10)
        const firstDelta = vendor.head.length
        server.respond(paced([...vendor.head, ...sent.map((text) => vendor.delta(text)), vendor.failure], false, (i) =>
          i === firstDelta + 1 ? Effect.runPromise(Deferred.await(firstSeen)) : undefined))
        const { sessionId, turn } = yield* turnOpening(firstSeen)
        const events = yield* Fiber.join(turn)
        expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: vendor.errorCode })
        expect(deltasOf(events)).toEqual(sent)
        // Some of the response was stored: not sent again.
        expect(server.received).toHaveLength(1)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(engine(vendor.layer, hourWindow))))
  }
})
