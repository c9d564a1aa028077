/**
 * An image the provider refuses ("Could not process image", HTTP 400) must not refuse every later
 * request of its session. Every request carries the conversation's images, so such an image — a
 * user's attachment, or a repository's file read by `read_file` — made each later turn fail the same
 * way, text-only messages included, until the session was abandoned. Now the images a turn brought
 * are left out of later requests when the provider refused that turn's request as invalid, each as a
 * note the model can act on. Through each official SDK against a local server replaying the
 * vendor's recorded refusal; the bodies the SDK sent are what is asserted.
 */
import { beforeEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Transcript from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { EventStore } from "../../src/services/EventStore.js"
import { collect } from "../helpers.js"
import { engine, png, setup, vendorLayers } from "./imageWorkspace.js"
import * as WireServer from "./WireServer.js"

// The recorded tool-calls stream reads src/index.ts: here it is a PNG the provider will refuse.
const { cwd, server } = setup("refused-image")
beforeEach(() => {
  server().received.length = 0
})

const layers = vendorLayers(server)
const vendors = [
  { name: "anthropic" as const, layer: layers.anthropic },
  { name: "openai" as const, layer: layers.openai }
]

/** Whether a request body carries an image anywhere (Anthropic `image` blocks, OpenAI `image_url` parts). */
const carriesImage = (body: unknown): boolean => /"type":"image(_url)?"/.test(JSON.stringify(body))
const png64 = png.toString("base64").slice(0, 64)

for (const vendor of vendors) {
  describe(`${vendor.name}: a request refused for an image`, () => {
    it.effect("a user's attached image: the turn fails invalid_request; the next turn is sent without it, with a note, and answers", () =>
      Effect.gen(function*() {
        server().respond(WireServer.recording(vendor.name, "image-refused"), WireServer.recording(vendor.name, "text"), WireServer.recording(vendor.name, "text"))
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
        const first = yield* collect(agent.runTurn({ sessionId, userMessage: "what is this?", images: [{ data: png }] }))
        expect(first.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
        expect(carriesImage(server().received[0]!.body)).toBe(true)

        const second = yield* collect(agent.runTurn({ sessionId, userMessage: "never mind, say hi" }))
        expect(second.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const sent = JSON.stringify(server().received[1]!.body)
        expect(carriesImage(server().received[1]!.body)).toBe(false)
        expect(sent).not.toContain(png64)
        expect(sent).toContain("what is this?")
        expect(sent).toContain("left out, the provider refused the request that first carried it (invalid_request)")

        // The log is untouched: it still names the image, and a replay leaves it out the same way.
        const events = yield* Effect.flatMap(EventStore, (store) => collect(store.read(sessionId)))
        expect(events.find((e) => e.type === "user.message")!.payload).toMatchObject({ images: [{ mediaType: "image/png", bytes: png.byteLength }] })
        const replayed = Transcript.messages(Transcript.replay(events))
        expect(replayed.some((m) => m.role !== "assistant" && m.images !== undefined)).toBe(false)

        // An image attached again later is sent: only the refused turn's images are left out.
        yield* collect(agent.runTurn({ sessionId, userMessage: "and this one?", images: [{ data: png }] }))
        expect(carriesImage(server().received[2]!.body)).toBe(true)
      }).pipe(Effect.provide(engine(vendor.layer()))))

    it.effect("a repository's image read by read_file: the step's request is refused; the next turn goes on without it", () =>
      Effect.gen(function*() {
        server().respond(WireServer.recording(vendor.name, "tool-calls"), WireServer.recording(vendor.name, "image-refused"), WireServer.recording(vendor.name, "text"))
        const agent = yield* SessionEngine
        const { sessionId } = yield* agent.createSession({ cwd, client: "test" })
        const first = yield* collect(agent.runTurn({ sessionId, userMessage: "look at src/index.ts" }))
        expect(first.at(-1)!.payload).toMatchObject({ stopReason: "error", errorCode: "invalid_request" })
        expect(carriesImage(server().received[1]!.body)).toBe(true)

        const second = yield* collect(agent.runTurn({ sessionId, userMessage: "go on" }))
        expect(second.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        expect(carriesImage(server().received[2]!.body)).toBe(false)
        expect(JSON.stringify(server().received[2]!.body)).toContain("[image image/png, ")
      }).pipe(Effect.provide(engine(vendor.layer()))))
  })
}
