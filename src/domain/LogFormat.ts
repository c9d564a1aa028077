/**
 * Versions of the log format, and the pure migrations that bring an event written by an older
 * version to the current shape, so a newer reader reads every older log.
 *
 * - Version 0: the prototype's logs (JSONL files without a header line). A turn ended with
 *   `turn.completed` (final), `turn.cancelled` or `turn.failed {reason}`, and `context.built`
 *   counted only `instruction` and `transcript` tokens.
 * - Version 1: the current format. Every turn ends with `turn.completed {stopReason}`.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"

/** The version this library writes. */
export const currentVersion = 1

type Raw = { readonly [key: string]: unknown }

const isRecord = (value: unknown): value is Raw => typeof value === "object" && value !== null && !Array.isArray(value)

/** Version 0 → 1: the old turn endings become `turn.completed`, `context.built` gains `tools` and `total`. */
const fromV0 = (event: Raw): Raw => {
  const payload = isRecord(event.payload) ? event.payload : {}
  switch (event.type) {
    case "turn.cancelled":
      return { ...event, type: "turn.completed", payload: { stopReason: "cancelled" } }
    case "turn.failed": {
      const code = typeof payload.errorCode === "string" ? payload.errorCode : typeof payload.reason === "string" ? payload.reason : "unknown"
      return { ...event, type: "turn.completed", payload: { stopReason: "error", errorCode: code } }
    }
    case "context.built": {
      const tokens = isRecord(payload.tokens) ? payload.tokens : {}
      const count = (key: string) => (typeof tokens[key] === "number" ? (tokens[key] as number) : 0)
      const instruction = count("instruction")
      const transcript = count("transcript")
      const tools = count("tools")
      return { ...event, payload: { tokens: { instruction, transcript, tools, total: instruction + transcript + tools } } }
    }
    default:
      return event
  }
}

/** The migrations, by the version they upgrade from. */
const migrations: ReadonlyArray<(event: Raw) => Raw> = [fromV0]

/**
 * Brings one decoded event of a log of `version` to the current shape, applying each migration
 * from that version on. Fails for a version newer than this library.
 */
export const migrate = (version: number, event: unknown): Either.Either<unknown, string> => {
  if (!Number.isInteger(version) || version < 0) return Either.left(`invalid log format version ${version}`)
  if (version > currentVersion) return Either.left(`unsupported log format version ${version} (this library reads up to ${currentVersion})`)
  if (!isRecord(event)) return Either.right(event)
  let out: Raw = event
  for (const migration of migrations.slice(version)) out = migration(out)
  return Either.right(out)
}
