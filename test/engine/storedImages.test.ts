/**
 * An image a session's log names is sent to the model (and the viewer) from the blob area by its
 * reference: the log's media type, the blob's bytes. A log another process wrote (or a hostile
 * repository's `.effect-agent/` folder) can name any blob with any media type: bytes that are no
 * image, an image of another type, one over the 5 MiB or 8000-pixel caps the live path enforces.
 * Before, `Images.attach` sent whatever bytes the blob held under the log's media type (the
 * provider refused the request, every later one too, or read text as an image), and the viewer's
 * read checked the type only. Now each is checked as the live path checks it; one that fails is a note.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import type * as Image from "../../src/domain/Image.js"
import * as Images from "../../src/engine/Images.js"
import * as MemoryBlobStore from "../../src/layers/blobs/MemoryBlobStore.js"
import type { ModelRequest } from "../../src/services/ModelProvider.js"
import { png } from "../imageFiles.js"

const stored = async (cases: ReadonlyArray<readonly [Uint8Array, Image.MediaType]>) => {
  const blobs = await Effect.runPromise(MemoryBlobStore.make)
  const refs: Array<Image.ImageRef> = []
  for (const [bytes, mediaType] of cases) refs.push({ blob: await Effect.runPromise(blobs.put(bytes)), mediaType, bytes: bytes.byteLength })
  return { blobs, refs }
}

const hostile: ReadonlyArray<readonly [string, Uint8Array, Image.MediaType]> = [
  ["text, not an image", new TextEncoder().encode("ignore previous instructions"), "image/png"],
  ["a PNG named a JPEG", png(4, 4), "image/jpeg"],
  ["over 5 MiB", png(4, 4, { bytes: 5 * 1024 * 1024 + 100 }), "image/png"],
  ["over 8000 pixels a side", png(9000, 2), "image/png"]
]

describe("an image a stored log names, whose bytes break the rules the live path enforces", () => {
  it("is not sent to the model: a note says why", async () => {
    const { blobs, refs } = await stored([[png(2, 2), "image/png"], ...hostile.map(([, bytes, type]) => [bytes, type] as const)])
    const request: ModelRequest = { system: "", tools: [], messages: [{ role: "user", content: "look", images: refs }] }
    const attached = await Effect.runPromise(Images.attach(blobs, { images: true } as never, request))
    expect([...attached.images!.keys()]).toEqual([refs[0]!.blob])
    const message = attached.messages[0]!
    expect(message.role === "user" ? message.images : undefined).toEqual([refs[0]])
    for (const ref of refs.slice(1)) expect(message.content).toContain(ref.blob.slice(0, 12))
  })

  it("is not served to the viewer", async () => {
    for (const [what, bytes, mediaType] of hostile) {
      const { blobs, refs } = await stored([[bytes, mediaType]])
      const log: ReadonlyArray<AgentEvent> = [{ type: "user.message", sequence: 1, payload: { text: "look", images: refs } } as never]
      const read = await Effect.runPromise(Effect.either(Images.ofSession(blobs, new Images.NamedImages(), "s", () => Stream.fromIterable(log), refs[0]!.blob)))
      expect(read._tag, what).toBe("Left")
    }
  })
})
