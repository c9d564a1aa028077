/**
 * A message's images on their way to the runner that owns the session. The cluster's RPC does not
 * carry the bytes (up to 20 × 5 MiB a message): the runner that takes the request checks them as an
 * engine would and puts them in the shared store's blob area, the message carries their references,
 * and the owner reads them back from the same area and hands them to its engine, which checks them
 * again and finds them already stored.
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import { Blob, type BlobStore, EventStoreFailure, Image, InvalidInput } from "../index.js"

/** A blob area failure, as the store failure the engine's callers know (the blob area is part of the store). */
const storeFailure = (failure: Blob.BlobFailure): EventStoreFailure =>
  new EventStoreFailure({ reason: failure.reason === "invalid_hash" ? "unknown" : failure.reason, operation: failure.operation === "put" ? "append" : "read", detail: failure.message })

const noBlobArea = new InvalidInput({ field: "images", detail: "this runner's store has no blob area to carry images to the session's owner" })

/** Checks a message's images (refused as a whole, nothing put) and puts them in the blob area: their references, in order. */
export const put = (
  blobs: BlobStore.BlobStore.Service | undefined,
  images: ReadonlyArray<Image.ImageInput>
): Effect.Effect<ReadonlyArray<Image.ImageRef>, InvalidInput | EventStoreFailure> =>
  Effect.gen(function*() {
    const types = Image.checkAll(images)
    if (types instanceof Image.ImageRefused) return yield* new InvalidInput({ field: "images", detail: types.message })
    if (blobs === undefined) return yield* noBlobArea
    return yield* Effect.forEach(images, (image, i) =>
      Effect.map(blobs.put(image.data), (blob): Image.ImageRef => ({ blob, mediaType: types[i]!, bytes: image.data.byteLength })))
  }).pipe(Effect.mapError((error) => error instanceof Blob.BlobFailure ? storeFailure(error) : error))

/** The images of carried references, read back from the blob area; one no longer there refuses the message. */
export const take = (
  blobs: BlobStore.BlobStore.Service | undefined,
  refs: ReadonlyArray<Image.ImageRef>
): Effect.Effect<ReadonlyArray<Image.ImageInput>, InvalidInput | EventStoreFailure> => {
  if (refs.length === 0) return Effect.succeed([])
  if (blobs === undefined) return Effect.fail(noBlobArea)
  return Effect.forEach(refs, (ref) =>
    blobs.get(ref.blob).pipe(
      Effect.map((data): Image.ImageInput => ({ data, mediaType: ref.mediaType })),
      Effect.catchTag("BlobNotFound", () => Effect.fail(new InvalidInput({ field: "images", detail: `image ${ref.blob} is not in the shared blob area` }))),
      Effect.catchTag("BlobFailure", (failure) => Effect.fail(storeFailure(failure)))
    ))
}
