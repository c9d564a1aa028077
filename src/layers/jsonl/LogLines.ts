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
import * as EventCodec from "./EventCodec.js"

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

const utf8 = (bytes: Uint8Array, start: number, end: number): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8", start, end)

/**
 * Splits bytes, pushed a chunk at a time, into numbered lines. The complete lines of a chunk are
 * decoded in one go and cut at their newlines (a newline byte never occurs inside a multi-byte
 * character, so cutting the bytes there is safe); the unended rest waits for the next chunk. A line
 * longer than `maxLineBytes` stops the splitting with {@link LineTooLong} as soon as the cap is
 * passed, so a huge line is never held whole.
 */
export class Splitter {
  /** The bytes of the line being read, not yet ended. */
  private pending: Array<Uint8Array> = []
  private pendingSize = 0
  /** The number of the last line handed out. */
  number: number

  constructor(readonly maxLineBytes: number = defaultMaxLineBytes, firstNumber = 1) {
    this.number = firstNumber - 1
  }

  private tooLong(size: number, text?: string): boolean {
    if (size <= this.maxLineBytes) return false
    // A string's UTF-16 length is at most its UTF-8 size: only count the bytes of a line that may be over.
    return text === undefined || Buffer.byteLength(text) > this.maxLineBytes
  }

  /**
   * Hands every line `bytes` completes to `onLine`, in order, until it returns something (a
   * failure), which is returned; or {@link LineTooLong}. The caller may reuse `bytes` afterwards.
   */
  push<E>(bytes: Uint8Array, onLine: (text: string, number: number) => E | undefined): E | LineTooLong | undefined {
    const last = bytes.lastIndexOf(newline)
    if (last === -1) {
      if (this.pendingSize + bytes.byteLength > this.maxLineBytes) return new LineTooLong(this.number + 1, this.maxLineBytes)
      // Copied (a Buffer's `slice` would not copy): the caller may reuse its buffer.
      if (bytes.byteLength > 0) this.pending.push(new Uint8Array(bytes))
      this.pendingSize += bytes.byteLength
      return undefined
    }
    let start = 0
    if (this.pendingSize > 0) {
      const end = bytes.indexOf(newline)
      if (this.pendingSize + end > this.maxLineBytes) return new LineTooLong(this.number + 1, this.maxLineBytes)
      this.pending.push(bytes.subarray(0, end))
      const whole = concat(this.pending, this.pendingSize + end)
      this.pending = []
      this.pendingSize = 0
      const stop = onLine(utf8(whole, 0, whole.byteLength), ++this.number)
      if (stop !== undefined) return stop
      start = end + 1
    }
    if (start <= last) {
      // The chunk's complete lines as one string; a line may pass the cap only if the region does.
      const text = utf8(bytes, start, last + 1)
      const check = last + 1 - start > this.maxLineBytes
      let from = 0
      while (from < text.length) {
        const end = text.indexOf("\n", from)
        const line = text.slice(from, end)
        if (check && this.tooLong(line.length * 3, line)) return new LineTooLong(this.number + 1, this.maxLineBytes)
        const stop = onLine(line, ++this.number)
        if (stop !== undefined) return stop
        from = end + 1
      }
    }
    const rest = bytes.byteLength - last - 1
    if (rest > this.maxLineBytes) return new LineTooLong(this.number + 1, this.maxLineBytes)
    if (rest > 0) {
      this.pending.push(new Uint8Array(bytes.subarray(last + 1)))
      this.pendingSize = rest
    }
    return undefined
  }

  /** The unended last line (a torn write), if any; call once the bytes are all pushed. */
  end(): Line | undefined {
    if (this.pendingSize === 0) return undefined
    const whole = concat(this.pending, this.pendingSize)
    this.pending = []
    this.pendingSize = 0
    return { text: utf8(whole, 0, whole.byteLength), number: ++this.number, terminated: false }
  }
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
    const splitter = new Splitter(options.maxLineBytes ?? defaultMaxLineBytes, options.firstNumber ?? 1)
    return bytes.pipe(
      Stream.mapConcatChunkEffect((chunk): Effect.Effect<Chunk.Chunk<Line>, LineTooLong> => {
        const lines: Array<Line> = []
        const failed = splitter.push(chunk, (text, number): undefined => {
          lines.push({ text, number, terminated: true })
        })
        return failed === undefined ? Effect.succeed(Chunk.unsafeFromArray(lines)) : Effect.fail(failed)
      }),
      Stream.concat(Stream.suspend(() => {
        const rest = splitter.end()
        return rest === undefined ? Stream.empty : Stream.make(rest)
      }))
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
  return firstLineOf(value)
}

/** {@link firstLine} of the line already parsed. */
export const firstLineOf = (value: unknown): Option.Option<FirstLine> => {
  if (typeof value !== "object" || value === null) return Option.none()
  const record = value as { format?: unknown; version?: unknown; type?: unknown }
  if (record.format === formatName) {
    return typeof record.version === "number" ? Option.some({ version: record.version, isHeader: true }) : Option.none()
  }
  return typeof record.type === "string" ? Option.some({ version: 0, isHeader: false }) : Option.none()
}

/** Decodes an event line of a log of `version`, migrated to the current shape. */
export const decodeEvent = (text: string, version: number): Either.Either<AgentEvent.AgentEvent, string> => EventCodec.decodeLine(text, version)
