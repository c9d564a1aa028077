/**
 * What to do about a damaged JSONL log, said where the CLI reports one. "Event store read failed
 * [corrupt]: not a valid event (….jsonl:20)" named the line but not the way out: `effect-agent
 * repair <id>`, which drops the damaged line (and the events it leaves dangling), keeping the
 * original beside the log (`.bak`).
 *
 * @since 0.1.0
 */
import type { EventStoreFailure } from "../index.js"

/** How the store names a line whose event type this version does not know (`EventCodec`'s; not imported, as below). */
const unknownTypePrefix = "not a valid event: its type"

// By its tag, not instanceof: the program's error reporter loads no store code to recognise one.
const isStoreFailure = (error: unknown): error is EventStoreFailure =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "EventStoreFailure"

/**
 * What to do about a corrupt JSONL log, said after its failure, or "" (another failure, or a detail
 * that says it already: a duplicate sequence's). `repair` is named only where it helps, with what it
 * keeps: it drops the damaged line and every later event that no longer follows on from those it
 * keeps (one bad event mid-log drops the rest). It refuses a log of a newer format version, a link
 * and anything but a regular file ("nothing was changed"): those get their own way out, or none.
 */
export const repairHint = (error: unknown): string => {
  if (
    !isStoreFailure(error) || error.reason !== "corrupt" || error.operation === "repair" || error.sessionId === undefined ||
    error.path?.endsWith(".jsonl") !== true || error.detail.includes("effect-agent repair")
  ) return ""
  const { detail, sessionId } = error
  if (detail.startsWith("unsupported log format version")) return "; it was written by a newer effect-agent: read it with that version"
  if (detail === "a link, not a log" || detail === "not a regular file") return "; this store makes its logs as regular files: remove or replace it"
  const dropped = "that line and every later event that no longer follows on (the original is kept as .bak)"
  if (detail.startsWith(unknownTypePrefix)) return `; read it with the effect-agent that wrote it: effect-agent repair ${sessionId} would drop ${dropped}`
  return `; effect-agent repair ${sessionId} drops ${dropped}`
}

/**
 * `; effect-agent sessions lists the stored ones` for a session id the store does not hold: "Session
 * not found: sess_…" said what went wrong but not where the right id is.
 */
export const sessionsHint = (error: unknown): string =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "SessionNotFound"
    ? "; effect-agent sessions lists the stored ones"
    : ""
