/**
 * The SHA-256 every blob store names bytes by.
 *
 * @since 0.6.0
 */
import { createHash } from "node:crypto"
import type { Hash } from "../../domain/Blob.js"

/** The lowercase hex SHA-256 of bytes. */
export const of = (bytes: Uint8Array): Hash => createHash("sha256").update(bytes).digest("hex") as Hash
