/**
 * A blob store in memory: the blob area of the memory event store.
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Blob from "../../domain/Blob.js"
import { BlobStore } from "../../services/BlobStore.js"
import * as Sha256 from "./Sha256.js"

/** Builds an empty memory blob store. */
export const make: Effect.Effect<BlobStore.Service> = Effect.sync(() => {
  const blobs = new Map<string, Uint8Array>()
  return BlobStore.of({
    put: (bytes) =>
      Effect.sync(() => {
        const hash = Sha256.of(bytes)
        // A copy: the caller may reuse its buffer.
        if (!blobs.has(hash)) blobs.set(hash, Uint8Array.from(bytes))
        return hash
      }),
    get: (hash) =>
      Effect.suspend((): Effect.Effect<Uint8Array, Blob.BlobNotFound | Blob.BlobFailure> => {
        if (!Blob.isHash(hash)) return Effect.fail(Blob.invalidHash("get", hash))
        const bytes = blobs.get(hash)
        return bytes === undefined ? Effect.fail(new Blob.BlobNotFound({ hash })) : Effect.succeed(Uint8Array.from(bytes))
      }),
    has: (hash) => Blob.isHash(hash) ? Effect.sync(() => blobs.has(hash)) : Effect.fail(Blob.invalidHash("has", hash))
  })
})

/** A fresh, empty memory blob store per layer build. */
export const layer: Layer.Layer<BlobStore> = Layer.effect(BlobStore, make)
