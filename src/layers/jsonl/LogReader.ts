/**
 * Reading a session's log as a stream of events, fast and in constant memory.
 *
 * The file is read in 64 KiB chunks into one reused buffer; each chunk's complete lines are decoded
 * at once, parsed with `JSON.parse` and checked by `EventCodec` (the schema itself only for lines it
 * does not accept as they are: older log versions, foreign key orders, invalid events); the events
 * of a chunk go downstream as one chunk before the next read. Memory is one buffer, one chunk of
 * text and its events, whatever the log's size.
 *
 * The rules of CONTRACT.md §4 hold line by line: a header naming the format version first (or, in a
 * version-0 log, an event), then events of this session whose sequences run 1, 2, 3…; a corrupt
 * line that is not the last fails, naming the file and the line (the events before it are
 * delivered first); a line longer than the cap fails `line_too_long` as soon as the cap is passed;
 * a torn last line (no newline: a crash mid-write) is skipped or fails by the recovery mode.
 *
 * @since 0.1.0
 * @internal
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import * as EventCodec from "./EventCodec.js"
import { fromLogOpen, fromNode } from "./FileFailure.js"
import * as LogLines from "./LogLines.js"
import * as LogSeek from "./LogSeek.js"

/** What to do with a torn last line: an unterminated line left by a crash mid-write. */
export type Recovery = "skip-trailing-partial" | "strict"

/** What to read, and how. */
export interface Options {
  readonly sessionId: string
  readonly file: string
  readonly recovery: Recovery
  readonly maxLineBytes: number
  /**
   * Only events from this sequence on are delivered. A log larger than a chunk is read from a line
   * at or shortly before it (found by `LogSeek`), and every line from there on is checked; a smaller
   * one is read and checked whole.
   */
  readonly fromSequence?: number
  /** Bytes read at a time (default 64 KiB). */
  readonly chunkBytes?: number
}

/** A failure reading the log, naming its file and line. */
export const corrupt = (
  file: string,
  sessionId: string,
  line: number | undefined,
  detail: string,
  reason: EventStoreFailureReason = "corrupt"
): EventStoreFailure => new EventStoreFailure({ reason, operation: "read", sessionId, path: file, detail, ...(line === undefined ? {} : { line }) })

/** Turns a log's bytes, pushed a chunk at a time, into checked events. */
export class Decoder {
  private readonly splitter: LogLines.Splitter
  private expected = 1
  private version: number = LogFormat.currentVersion
  private readonly from: number
  private out: Array<AgentEvent.AgentEvent> = []

  /** From `start` (a line of this version's log past its header), or from the log's first line. */
  constructor(private readonly options: Options, start?: LogSeek.Start) {
    // Past a seek the lines are numbered as a whole read numbers them: the header, then sequence n on line n + 1.
    this.splitter = new LogLines.Splitter(options.maxLineBytes, start === undefined ? 1 : start.sequence + 1)
    this.expected = start?.sequence ?? 1
    this.from = options.fromSequence ?? 1
  }

  private fail(line: number | undefined, detail: string, reason?: EventStoreFailureReason) {
    return corrupt(this.options.file, this.options.sessionId, line, detail, reason)
  }

  private readonly onLine = (text: string, number: number): EventStoreFailure | undefined => {
    let raw: unknown
    LogSeek.parsed.count++
    try {
      raw = JSON.parse(text)
    } catch {
      return this.fail(number, number === 1 ? "the first line is not an effect-agent log header" : "not a valid event")
    }
    if (number === 1) {
      const first = LogLines.firstLineOf(raw)
      if (Option.isNone(first)) return this.fail(1, "the first line is not an effect-agent log header")
      if (first.value.version > LogFormat.currentVersion) return this.fail(1, `unsupported log format version ${first.value.version}`)
      this.version = first.value.version
      // A version-0 log has no header: its first line is already an event.
      if (first.value.isHeader) return undefined
    }
    // The lines this library wrote are canonical: taken as parsed, with no `Either` made per line.
    let event: AgentEvent.AgentEvent
    if (this.version === LogFormat.currentVersion && EventCodec.isCanonical(raw)) {
      event = raw
    } else {
      const decoded = EventCodec.fromParsed(raw, this.version)
      if (Either.isLeft(decoded)) return this.fail(number, decoded.left)
      event = decoded.right
    }
    if (event.sessionId !== this.options.sessionId) return this.fail(number, `event of another session (${event.sessionId})`)
    if (event.sequence !== this.expected) {
      // Duplicates are what two processes writing one log at once leave behind (before writer locks).
      const kind = event.sequence < this.expected ? "duplicate or out-of-order" : "gap in"
      return this.fail(
        number,
        `${kind} sequence: expected ${this.expected}, found ${event.sequence}; repair the log with \`effect-agent repair ${this.options.sessionId}\``
      )
    }
    this.expected++
    if (event.sequence >= this.from) this.out.push(event)
    return undefined
  }

  /** The events `bytes` completes, and the failure that stopped it (after those events), if any. */
  push(bytes: Uint8Array): readonly [Array<AgentEvent.AgentEvent>, EventStoreFailure | undefined] {
    const failed = this.splitter.push(bytes, this.onLine)
    const events = this.out
    this.out = []
    if (failed instanceof LogLines.LineTooLong) {
      return [events, this.fail(failed.number, `the line is longer than ${failed.maxLineBytes} bytes`, "line_too_long")]
    }
    return [events, failed]
  }

  /** At the end of the file: a torn last line fails in strict mode, and is skipped otherwise. */
  end(): EventStoreFailure | undefined {
    const rest = this.splitter.end()
    if (rest === undefined || this.options.recovery !== "strict") return undefined
    return this.fail(rest.number, "the last line is torn (no newline)", "torn_line")
  }
}

// Small enough that a chunk's text and events die young (a 1 MiB chunk's string lives in V8's large-object space and
// its thousands of events outlive a scavenge: both cost more in GC than the fewer reads save).
const defaultChunkBytes = 64 * 1024

/**
 * A session's events from its log; a missing log is an empty stream.
 *
 * The file is opened and read with synchronous calls: a 64 KiB read from the page cache takes
 * microseconds, while handing each read to libuv's thread pool and back cost more than decoding the
 * chunk on a busy machine (a third of a replay's time). A log smaller than a chunk (an SSE client
 * connecting reads its session's log, often a few events) is read whole in one step and handed on as
 * one chunk: a pull per chunk would cost several times the reading. A larger one is read a chunk per
 * pull, and the fiber yields between chunks as the runtime schedules it, so a long replay does not
 * hold the event loop.
 */
export const events = (options: Options): Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure> => {
  const { file, sessionId } = options
  const failed = fromNode("read", file, sessionId)
  const chunkBytes = options.chunkBytes ?? defaultChunkBytes

  /** The log, open, with its size; undefined when there is none, the failure when it cannot be read. */
  const openLog = (): { readonly fd: number; readonly size: number } | undefined | EventStoreFailure => {
    let fd: number
    try {
      // Without blocking: a named pipe in a log's place (a data dir a repository shipped) would hold
      // the whole process in open(2). Only a regular file is a log, and never one through a link.
      fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "ENOENT" ? undefined : fromLogOpen("read", file, sessionId)(error)
    }
    try {
      const stat = fstatSync(fd)
      if (stat.isFile()) return { fd, size: stat.size }
      closeLog(fd)
      return corrupt(file, sessionId, undefined, "not a regular file")
    } catch (error) {
      closeLog(fd)
      return failed(error)
    }
  }

  /**
   * Reads on into `decoder`: the events the bytes complete and the failure after them (the read's
   * own, or the decoder's), with `done` at the end of the file.
   */
  const readNext = (fd: number, decoder: Decoder, buffer: Buffer, position: number) => {
    let bytesRead: number
    try {
      bytesRead = readSync(fd, buffer, 0, buffer.byteLength, position)
    } catch (error) {
      return { events: [], failure: failed(error), done: true, bytesRead: 0 }
    }
    if (bytesRead === 0) return { events: [], failure: decoder.end(), done: true, bytesRead }
    const [events, failure] = decoder.push(buffer.subarray(0, bytesRead))
    return { events, failure, done: false, bytesRead }
  }

  /** A small log whole: its events, then its failure if any. */
  const whole = (fd: number, size: number) => {
    const decoder = new Decoder(options)
    // Room for what is appended meanwhile; a log that grows past it is read on to its end, as a chunked read would be.
    const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, size + 1024))
    const events: Array<AgentEvent.AgentEvent> = []
    for (let position = 0;;) {
      const next = readNext(fd, decoder, buffer, position)
      position += next.bytesRead
      for (const event of next.events) events.push(event)
      if (next.failure !== undefined || next.done) {
        const read = Stream.fromChunk(Chunk.unsafeFromArray(events))
        return next.failure === undefined ? read : Stream.concat(read, Stream.fail(next.failure))
      }
    }
  }

  /**
   * A larger log, a chunk per pull, from where a seek puts the read (see `LogSeek`); a failure comes
   * on the pull after the events read before it.
   */
  const chunked = (fd: number, size: number) => {
    const start = LogSeek.seek(fd, size, sessionId, options.fromSequence ?? 1)
    const decoder = new Decoder(options, start)
    let position = start?.offset ?? 0
    const buffer = Buffer.allocUnsafe(chunkBytes)
    let done = false
    let failure: EventStoreFailure | undefined
    const pull: Effect.Effect<Chunk.Chunk<AgentEvent.AgentEvent>, Option.Option<EventStoreFailure>> = Effect.suspend(() => {
      if (failure !== undefined) return Effect.fail(Option.some(failure))
      if (done) return Effect.fail(Option.none())
      const next = readNext(fd, decoder, buffer, position)
      position += next.bytesRead
      done = next.done
      failure = next.failure
      if (next.events.length === 0 && (done || failure !== undefined)) return Effect.fail(Option.fromNullable(failure))
      return Effect.succeed(Chunk.unsafeFromArray(next.events))
    })
    return Stream.repeatEffectChunkOption(pull)
  }

  /** The log opened as an effect (a larger log's stream opens it so). */
  const opened = Effect.suspend(() => {
    const log = openLog()
    return log instanceof EventStoreFailure ? Effect.fail(log) : Effect.succeed(log)
  })
  // A small log is opened, read and closed in one synchronous step: nothing is left to release. A
  // larger one is opened again by its stream, whose release closes it however the stream ends (the
  // first descriptor, handed over instead, would leak if the reader were interrupted in between).
  return Stream.unwrap(Effect.suspend(() => {
    const log = openLog()
    if (log instanceof EventStoreFailure) return Effect.fail(log)
    if (log === undefined) return Effect.succeed(Stream.empty)
    try {
      if (log.size < chunkBytes) return Effect.succeed(whole(log.fd, log.size))
    } finally {
      closeLog(log.fd)
    }
    return Effect.succeed(
      Stream.acquireRelease(opened, (again) => Effect.sync(() => again === undefined || closeLog(again.fd))).pipe(
        Stream.flatMap((again) => (again === undefined ? Stream.empty : chunked(again.fd, again.size)))
      )
    )
  }))
}

/** Closing a descriptor fails only when it is already unusable. */
const closeLog = (fd: number) => {
  try {
    closeSync(fd)
  } catch {
    // Nothing to do: the descriptor is gone either way.
  }
}
