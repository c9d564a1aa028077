/**
 * The blob store port: the store's content-addressed blob area. Bytes are put once and named by
 * their SHA-256; events name them (`user.message.images`, `tool.completed.images`) instead of
 * inlining them. Every event store's layer provides one beside its `EventStore`: memory, files under
 * the JSONL data dir, a table in SQLite and PostgreSQL.
 *
 * @since 0.6.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { BlobFailure, BlobNotFound, Hash } from "../domain/Blob.js"
import { EventStoreFailure, InvalidInput } from "../domain/Errors.js"
import * as Image from "../domain/Image.js"

/** The blob store port. */
export class BlobStore extends Context.Tag("effect-agent/BlobStore")<BlobStore, BlobStore.Service>() {}

/** The blob store port. */
export declare namespace BlobStore {
  /** What every blob store does. */
  export interface Service {
    /**
     * Stores bytes and returns their SHA-256: the same bytes put twice are stored once (the second
     * put finds them). A put that fails leaves no blob, never a torn one.
     */
    readonly put: (bytes: Uint8Array) => Effect.Effect<Hash, BlobFailure>
    /**
     * The bytes of a blob, checked against their name on the way out: bytes that no longer hash to
     * it fail `corrupt` and are never returned. A name that is not a hash fails `invalid_hash`.
     */
    readonly get: (hash: string) => Effect.Effect<Uint8Array, BlobNotFound | BlobFailure>
    /** Whether a blob is stored (its bytes are not read nor checked). */
    readonly has: (hash: string) => Effect.Effect<boolean, BlobFailure>
  }
}

/** A blob area failure as the store failure it is (the blob area is part of the store): what callers of the engine see. */
export const asStoreFailure = (failure: BlobFailure): EventStoreFailure =>
  new EventStoreFailure({
    reason: failure.reason === "invalid_hash" ? "unknown" : failure.reason,
    operation: failure.operation === "put" ? "append" : "read",
    detail: failure.message,
    cause: failure
  })

const noImages: Effect.Effect<ReadonlyArray<Image.ImageRef>> = Effect.succeed([])

/**
 * Checks a message's images and puts them in the blob area, in order: their references, as
 * `user.message.images` stores them. Refused as a whole (`InvalidInput` on `images`, nothing put)
 * when one is not a PNG/JPEG/GIF/WebP, is empty, too large or not a whole file of its format
 * (`Image.verify`), or there are too many, or they decode to more than a message's may together, or
 * more than `allowance` (a turn's tool images: `Image.DecodedAllowance`) has left. Without a blob
 * area (a store that has none), images are refused.
 */
export const putImages = (
  blobs: BlobStore.Service | undefined,
  images: ReadonlyArray<Image.ImageInput>,
  allowance?: Image.DecodedAllowance
): Effect.Effect<ReadonlyArray<Image.ImageRef>, InvalidInput | EventStoreFailure> =>
  // Most messages and tool results carry none: nothing to check, put or trace (a span per turn and per tool call).
  images.length === 0 ? noImages : Effect.gen(function*() {
    // Verified whole (a PNG's pixel stream inflated too): a damaged image kept would be sent again with every later request, and refused.
    const types = yield* Image.verifyAll(images, allowance).pipe(Effect.mapError((refused) => new InvalidInput({ field: "images", detail: refused.message })))
    if (blobs === undefined) {
      return yield* new InvalidInput({ field: "images", detail: "this store has no blob area (provide a BlobStore) to keep images in" })
    }
    return yield* Effect.forEach(images, (image, i) =>
      blobs.put(image.data).pipe(
        Effect.map((blob): Image.ImageRef => ({ blob, mediaType: types[i]!, bytes: image.data.byteLength })),
        Effect.mapError(asStoreFailure)
      ))
  }).pipe(Effect.withSpan("BlobStore.putImages", { attributes: { count: images.length } }))
