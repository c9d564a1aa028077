/**
 * A message's images on their way to the runner that owns the session. The cluster's RPC does not
 * carry the bytes (up to 20 × 5 MiB a message): the runner that takes the request checks them and
 * puts them in the shared store's blob area (`BlobStore.putImages`, as an engine does), the message
 * carries their references, and the owner reads them back from the same area and hands them to its
 * engine, which checks them again and finds them already stored.
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import { BlobStore, type EventStoreFailure, type Image, InvalidInput } from "../index.js"

/** The images of carried references, read back from the blob area; one no longer there refuses the message. */
export const take = (
  blobs: BlobStore.BlobStore.Service | undefined,
  refs: ReadonlyArray<Image.ImageRef>
): Effect.Effect<ReadonlyArray<Image.ImageInput>, InvalidInput | EventStoreFailure> =>
  Effect.forEach(refs, (ref) =>
    blobs === undefined
      ? Effect.fail(new InvalidInput({ field: "images", detail: "this runner's store has no blob area to read carried images from" }))
      : blobs.get(ref.blob).pipe(
        Effect.map((data): Image.ImageInput => ({ data, mediaType: ref.mediaType })),
        Effect.catchTag("BlobNotFound", () => Effect.fail(new InvalidInput({ field: "images", detail: `image ${ref.blob} is not in the shared blob area` }))),
        Effect.catchTag("BlobFailure", (failure) => Effect.fail(BlobStore.asStoreFailure(failure)))
      ))
