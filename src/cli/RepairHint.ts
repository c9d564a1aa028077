/**
 * What to do about a damaged JSONL log, said where the CLI reports one. "Event store read failed
 * [corrupt]: not a valid event (….jsonl:20)" named the line but not the way out: `effect-agent
 * repair <id>` keeps the events it can read and the original beside them (`.bak`).
 *
 * @since 0.1.0
 */
import type { EventStoreFailure } from "../index.js"

// By its tag, not instanceof: the program's error reporter loads no store code to recognise one.
const isStoreFailure = (error: unknown): error is EventStoreFailure =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "EventStoreFailure"

/** `; effect-agent repair <id> …` for a corrupt line of a JSONL log whose detail does not say it already (a duplicate sequence's does), else "". */
export const repairHint = (error: unknown): string =>
  isStoreFailure(error) && error.reason === "corrupt" && error.operation !== "repair" && error.sessionId !== undefined &&
    error.path?.endsWith(".jsonl") === true && !error.detail.includes("effect-agent repair")
    ? `; effect-agent repair ${error.sessionId} keeps the events it can read (the original is kept as .bak)`
    : ""

/**
 * `; effect-agent sessions lists the stored ones` for a session id the store does not hold: "Session
 * not found: sess_…" said what went wrong but not where the right id is.
 */
export const sessionsHint = (error: unknown): string =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "SessionNotFound"
    ? "; effect-agent sessions lists the stored ones"
    : ""
