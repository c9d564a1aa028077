/**
 * The images of a `POST /sessions/:id/turns` body (`images: [{ mediaType?, data }]`, `data` in
 * base64): decoded strictly and checked as the engine checks them, so a bad one is answered with its
 * reason before anything is stored — 413 for an image over the size cap, 400 for anything else (not
 * base64, not a PNG/JPEG/GIF/WebP by its bytes, a declared type the bytes contradict, too many, or
 * more pixels together than a message's images may decode to: 413).
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import { Image } from "../index.js"
import { BadRequest, PayloadTooLarge } from "./Api.js"

/** An image as the body sends it. */
export interface WireImage {
  readonly mediaType?: string | undefined
  readonly data: string
}

const refusal = (refused: Image.ImageRefused) =>
  refused.reason === "too_large"
    ? new PayloadTooLarge({ error: "PayloadTooLarge", message: refused.message })
    : new BadRequest({ error: "BadRequest", message: refused.message })

/** The body's images as the engine takes them, or the answer refusing them. */
export const decode = (images: ReadonlyArray<WireImage> | undefined): Effect.Effect<ReadonlyArray<Image.ImageInput>, BadRequest | PayloadTooLarge> =>
  Effect.suspend(() => {
    if (images === undefined || images.length === 0) return Effect.succeed([])
    if (images.length > Image.maxImagesPerMessage) {
      return Effect.fail(refusal(new Image.ImageRefused({ reason: "too_many", detail: `${images.length} images; a message may carry ${Image.maxImagesPerMessage}` })))
    }
    // Each image is examined (its structure walked once) as it is decoded; then each PNG's pixel
    // stream is inflated (off the event loop), once every image passed the cheap checks: a later
    // image's cheap refusal comes before any inflate.
    const examined: Array<Image.Examined> = []
    for (const [index, image] of images.entries()) {
      // Checked before decoding: Node's decoder skips what is not base64 instead of refusing it.
      if (!Image.isBase64(image.data)) {
        return Effect.fail(new BadRequest({ error: "BadRequest", message: `Image #${index + 1}: data must be base64 (RFC 4648, with padding, no line breaks)` }))
      }
      const one = Image.examine({ data: new Uint8Array(Buffer.from(image.data, "base64")), mediaType: image.mediaType }, index)
      if (one instanceof Image.ImageRefused) return Effect.fail(refusal(one))
      examined.push(one)
    }
    const together = Image.overMessage(examined)
    if (together !== undefined) return Effect.fail(refusal(together))
    return Effect.forEach(examined, Image.inflate, { discard: true }).pipe(
      Effect.mapError(refusal),
      Effect.as(examined.map((one) => one.image))
    )
  })
