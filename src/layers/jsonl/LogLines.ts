/**
 * The lines of a JSONL log: splitting bytes into numbered lines (knowing whether the last one was
 * ended), the header line that names the format version, and decoding an event line of a given
 * version into the current shape.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
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

/** The default cap on a line's size when reading a log: 16 MiB. */
export const defaultMaxLineBytes = 16 * 1024 * 1024

/** A line longer than the cap: reading stopped there, without holding the line. */
export class LineTooLong {
  readonly _tag = "LineTooLong"
  constructor(readonly number: number, readonly maxLineBytes: number) {}
}

const newline = 0x0a

const concat = (parts: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (parts.length === 1) return parts[0]!
  const out = new Uint8Array(size)
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

/**
 * Splits a byte stream into lines; the last one is marked when no newline ended it (a torn write).
 * A line longer than `maxLineBytes` fails the stream with {@link LineTooLong} as soon as the cap is
 * passed, so a huge line is never held whole in memory.
 */
export const linesOf = <E>(
  bytes: Stream.Stream<Uint8Array, E>,
  options: { readonly firstNumber?: number; readonly maxLineBytes?: number } = {}
): Stream.Stream<Line, E | LineTooLong> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder()
    const cap = options.maxLineBytes ?? defaultMaxLineBytes
    // The bytes of the line being read, not yet ended.
    let pending: Array<Uint8Array> = []
    let pendingSize = 0
    let number = (options.firstNumber ?? 1) - 1
    return bytes.pipe(
      Stream.mapConcatChunkEffect((chunk): Effect.Effect<Chunk.Chunk<Line>, LineTooLong> => {
        const lines: Array<Line> = []
        let start = 0
        while (start <= chunk.byteLength) {
          const end = chunk.indexOf(newline, start)
          if (end === -1) {
            const rest = chunk.subarray(start)
            if (pendingSize + rest.byteLength > cap) return Effect.fail(new LineTooLong(number + 1, cap))
            if (rest.byteLength > 0) {
              // Copied: a chunk's buffer may be reused by the reader.
              pending.push(rest.slice())
              pendingSize += rest.byteLength
            }
            break
          }
          const part = chunk.subarray(start, end)
          if (pendingSize + part.byteLength > cap) return Effect.fail(new LineTooLong(number + 1, cap))
          const text = pendingSize === 0 ? decoder.decode(part) : decoder.decode(concat([...pending, part], pendingSize + part.byteLength))
          pending = []
          pendingSize = 0
          lines.push({ text, number: ++number, terminated: true })
          start = end + 1
        }
        return Effect.succeed(Chunk.unsafeFromArray(lines))
      }),
      Stream.concat(Stream.suspend(() =>
        pendingSize === 0 ? Stream.empty : Stream.make({ text: decoder.decode(concat(pending, pendingSize)), number: ++number, terminated: false })
      ))
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
