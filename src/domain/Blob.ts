/**
 * Blobs: bytes stored once by their SHA-256 (the store's blob area, see `services/BlobStore`), named
 * by events instead of being inlined in them — images of user messages and tools, later the
 * pre-images of files a rewind restores.
 *
 * @since 0.6.0
 */
import * as Schema from "effect/Schema"

/** A blob's name: the lowercase hex SHA-256 of its bytes (64 characters). */
export const Hash = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/), Schema.brand("BlobHash"))
/** A blob's name: the lowercase hex SHA-256 of its bytes. */
export type Hash = typeof Hash.Type

/**
 * The largest blob a store keeps or reads: 256 MiB (an image is at most 5 MiB, a file's pre-image at
 * most a snapshot's `maxBytes`, 50 MiB by default). A stored file past it is refused unread (a data dir
 * that came with a repository can hold a 1.5 GiB file under a blob's name).
 */
export const maxBytes = 256 * 1024 * 1024

/** Whether a string is a blob hash (a store is never asked for anything else: it names files and rows). */
export const isHash = (value: string): value is Hash => /^[0-9a-f]{64}$/.test(value)

/** No blob of this hash is stored. */
export class BlobNotFound extends Schema.TaggedError<BlobNotFound>()("BlobNotFound", {
  hash: Schema.String
}) {
  override get message(): string {
    return `No blob ${this.hash} is stored (BlobNotFound)`
  }
}

/** Why the blob area failed. */
export const BlobFailureReason = Schema.Literal("corrupt", "unavailable", "permission_denied", "disk_full", "invalid_hash")
/** Why the blob area failed. */
export type BlobFailureReason = typeof BlobFailureReason.Type

/**
 * The blob area could not store or read a blob. `corrupt`: the stored bytes no longer hash to their
 * name — they are never returned. The original error is kept as `cause`, never written into an event.
 */
export class BlobFailure extends Schema.TaggedError<BlobFailure>()("BlobFailure", {
  reason: BlobFailureReason,
  operation: Schema.Literal("put", "get", "has"),
  detail: Schema.String,
  hash: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `Blob ${this.operation} failed [${this.reason}]: ${this.detail}${this.hash === undefined ? "" : ` (${this.hash})`}`
  }
}

/** The failure for a stored file larger than any blob (`maxBytes`): refused unread, as `corrupt`. */
export const tooLarge = (hash: string, bytes: number): BlobFailure =>
  new BlobFailure({ reason: "corrupt", operation: "get", detail: `the stored file holds ${bytes} bytes, more than any blob (${maxBytes})`, hash })

/** The failure for a name that is not a hash (refused before any file or row is touched). */
export const invalidHash = (operation: BlobFailure["operation"], hash: string): BlobFailure =>
  new BlobFailure({ reason: "invalid_hash", operation, detail: "a blob is named by the 64 hex digits of its SHA-256", hash: hash.slice(0, 80) })

/** The failure for stored bytes that no longer match their name. */
export const corrupt = (hash: string, actual: string): BlobFailure =>
  new BlobFailure({ reason: "corrupt", operation: "get", detail: `the stored bytes hash to ${actual}`, hash })
