/**
 * The lines of a JSONL log: splitting bytes into numbered lines (knowing whether the last one was
 * ended), the header line that names the format version, and decoding an event line of a given
 * version into the current shape.
 *
 * @since 0.1.0
 * @internal
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../../domain/AgentEvent.js"
import * as LogFormat from "../../domain/LogFormat.js"

/** The header line's format name. */
export const formatName = "effect-agent/events"

/** The header line this store writes first in every new log. */
export const header = JSON.stringify({ format: formatName, version: LogFormat.currentVersion })

/** A line of a file, with its 1-based number and whether a newline ended it. */
export interface Line {
  readonly text: string
  readonly number: number
  readonly terminated: boolean
}

/** Splits a byte stream into lines; the last one is marked when no newline ended it (a torn write). */
export const linesOf = <E>(bytes: Stream.Stream<Uint8Array, E>, firstNumber = 1): Stream.Stream<Line, E> =>
  Stream.suspend(() => {
    let rest = ""
    let number = firstNumber - 1
    return bytes.pipe(
      Stream.decodeText(),
      Stream.mapConcat((text) => {
        const parts = (rest + text).split("\n")
        rest = parts.pop()!
        return parts.map((part) => ({ text: part, number: ++number, terminated: true }))
      }),
      Stream.concat(Stream.suspend(() => rest === "" ? Stream.empty : Stream.make({ text: rest, number: ++number, terminated: false })))
    )
  })

/** What a log's first line says: the format version, and whether the line is a header. */
export interface FirstLine {
  readonly version: number
  /** `false` for a version-0 log, whose first line is already an event. */
  readonly isHeader: boolean
}

/**
 * Reads a log's first line: a header gives its version; an event (a log written before headers
 * existed) means version 0; anything else is not a log.
 */
export const firstLine = (text: string): Option.Option<FirstLine> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Option.none()
  }
  if (typeof value !== "object" || value === null) return Option.none()
  const record = value as { format?: unknown; version?: unknown; type?: unknown }
  if (record.format === formatName) {
    return typeof record.version === "number" ? Option.some({ version: record.version, isHeader: true }) : Option.none()
  }
  return typeof record.type === "string" ? Option.some({ version: 0, isHeader: false }) : Option.none()
}

/** Decodes an event line of a log of `version`, migrated to the current shape. */
export const decodeEvent = (text: string, version: number): Either.Either<AgentEvent.AgentEvent, string> => {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return Either.left("not a valid event")
  }
  return Either.flatMap(LogFormat.migrate(version, raw), (migrated) =>
    Either.mapLeft(AgentEvent.decodeUnknown(migrated), () => "not a valid event"))
}
