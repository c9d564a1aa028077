/**
 * The blob store port: the store's content-addressed blob area. Bytes are put once and named by
 * their SHA-256; events name them (`user.message.images`, `tool.completed.images`) instead of
 * inlining them. Every event store's layer provides one beside its `EventStore`: memory, files under
 * the JSONL data dir, a table in SQLite and PostgreSQL.
 *
 * @since 0.6.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { BlobFailure, BlobNotFound, Hash } from "../domain/Blob.js"

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
