/**
 * The embedded default event store: one JSONL file per session at
 * `<dataDir>/sessions/<sessionId>.jsonl`, built on `@effect/platform`'s `FileSystem`.
 *
 * A file begins with a header line naming the log format and its version, then holds one event
 * per line. Appends to one session are serialized and refuse a sequence that is not last + 1. A
 * torn last line (a crash mid-write) is skipped or refused by the `recovery` mode; a corrupt line
 * anywhere else always fails, naming the file and the line.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import type { PlatformError } from "@effect/platform/Error"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../domain/Errors.js"
import * as Session from "../domain/Session.js"
import { byRecentActivity, EventStore, sequenceConflict } from "../services/EventStore.js"

/** What to do with a torn last line: an unterminated line left by a crash mid-write. */
export type Recovery = "skip-trailing-partial" | "strict"

/** Options of the JSONL store. */
export interface Options {
  /** The data directory; session files live in its `sessions/` folder. */
  readonly dataDir: string
  /** `skip-trailing-partial` (default) ignores a torn last line and cuts it off before the next append; `strict` fails. */
  readonly recovery?: Recovery
  /** Flush every append to disk before it is acknowledged (slower; survives power loss). Default `false`. */
  readonly fsync?: boolean
}

/** The header line's format name. */
export const formatName = "effect-agent/events"
/** The log format version this store writes. */
export const formatVersion = 1

const headerLine = JSON.stringify({ format: formatName, version: formatVersion })

const encoder = new TextEncoder()
const newline = 0x0a

interface Tail {
  readonly lastSequence: number
  /** File size in bytes, used to notice a file changed behind the cache's back. */
  readonly size: number
}

const failureReason = (error: PlatformError): EventStoreFailureReason => {
  const code = error._tag === "SystemError" ? (error.cause as { code?: unknown } | undefined)?.code : undefined
  if (code === "ENOSPC" || code === "EDQUOT") return "disk_full"
  if (error._tag === "SystemError" && error.reason === "PermissionDenied") return "permission_denied"
  if (code === "EROFS" || code === "EACCES" || code === "EPERM") return "permission_denied"
  return "unavailable"
}

const fromPlatform = (
  operation: EventStoreFailure["operation"],
  path: string,
  sessionId?: string
) =>
(error: PlatformError) =>
  new EventStoreFailure({
    reason: failureReason(error),
    operation,
    path,
    detail: error.message,
    cause: error,
    ...(sessionId === undefined ? {} : { sessionId })
  })

/** A line of a file, with its 1-based number and whether a newline ended it. */
interface Line {
  readonly text: string
  readonly number: number
  readonly terminated: boolean
}

const linesOf = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<Line, E> =>
  Stream.suspend(() => {
    let rest = ""
    let number = 0
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

const parseHeader = (text: string): Option.Option<number> => {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value === "object" && value !== null && (value as { format?: unknown }).format === formatName) {
      const version = (value as { version?: unknown }).version
      return typeof version === "number" ? Option.some(version) : Option.none()
    }
  } catch {
    // not JSON: not a header
  }
  return Option.none()
}

/** Builds a JSONL store. */
export const make = (options: Options): Effect.Effect<EventStore.Service, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const recovery = options.recovery ?? "skip-trailing-partial"
    const sessionsDir = path.join(options.dataDir, "sessions")
    const fileOf = (sessionId: string) => path.join(sessionsDir, `${sessionId}.jsonl`)

    const locks = new Map<string, Effect.Semaphore>()
    const tails = new Map<string, Tail>()
    const lockOf = (sessionId: string) =>
      Effect.sync(() => {
        let lock = locks.get(sessionId)
        if (lock === undefined) {
          lock = Effect.unsafeMakeSemaphore(1)
          locks.set(sessionId, lock)
        }
        return lock
      })

    const corrupt = (file: string, sessionId: string, line: number | undefined, detail: string, reason: EventStoreFailureReason = "corrupt") =>
      new EventStoreFailure({
        reason,
        operation: "read",
        sessionId,
        path: file,
        detail,
        ...(line === undefined ? {} : { line })
      })

    /**
     * Finds the last complete line of a file by reading backwards from its end, so the first
     * append to a long log does not read all of it. Cuts off a torn tail in skip mode.
     */
    const scanTail = (sessionId: string, file: string): Effect.Effect<Tail, EventStoreFailure> =>
      Effect.scoped(Effect.gen(function*() {
        const handle = yield* fs.open(file, { flag: "r" })
        const size = Number((yield* handle.stat).size)
        let window = Math.min(size, 64 * 1024)
        while (true) {
          yield* handle.seek(size - window, "start")
          const bytes = Option.getOrElse(yield* handle.readAlloc(window), () => new Uint8Array())
          const lastNewline = bytes.lastIndexOf(newline)
          const previousNewline = lastNewline <= 0 ? -1 : bytes.lastIndexOf(newline, lastNewline - 1)
          if ((lastNewline === -1 || previousNewline === -1) && window < size) {
            window = Math.min(size, window * 4)
            continue
          }
          const validSize = lastNewline === -1 ? 0 : size - window + lastNewline + 1
          if (validSize < size) {
            if (recovery === "strict") {
              return yield* corrupt(file, sessionId, undefined, "the last line is torn (no newline) and recovery is strict", "torn_line")
            }
            yield* Effect.logWarning("effect-agent: cutting off a torn last line before appending").pipe(
              Effect.annotateLogs({ path: file, bytes: size - validSize })
            )
            yield* fs.truncate(file, validSize)
          }
          if (lastNewline === -1) return { lastSequence: 0, size: 0 }
          const text = new TextDecoder().decode(bytes.subarray(previousNewline + 1, lastNewline))
          if (Option.isSome(parseHeader(text))) return { lastSequence: 0, size: validSize }
          const event = AgentEvent.decodeJson(text)
          if (Either.isLeft(event)) {
            return yield* corrupt(file, sessionId, undefined, "the last complete line is not a valid event")
          }
          return { lastSequence: event.right.sequence, size: validSize }
        }
      })).pipe(
        Effect.catchTag("BadArgument", (e) => Effect.die(e)),
        Effect.catchTag("SystemError", (e) =>
          e.reason === "NotFound" ? Effect.succeed({ lastSequence: 0, size: -1 }) : Effect.fail(fromPlatform("append", file, sessionId)(e)))
      )

    const tailOf = (sessionId: string, file: string) =>
      Effect.gen(function*() {
        const cached = tails.get(sessionId)
        if (cached !== undefined) {
          // Another process may have appended since: trust the cache only while the size matches.
          const size = yield* fs.stat(file).pipe(
            Effect.map((info) => Number(info.size)),
            Effect.catchTag("SystemError", (e) => e.reason === "NotFound" ? Effect.succeed(-1) : Effect.fail(e)),
            Effect.mapError(fromPlatform("append", file, sessionId))
          )
          if (size === cached.size) return cached
        }
        return yield* scanTail(sessionId, file)
      })

    const write = (file: string, data: Uint8Array) =>
      Effect.scoped(Effect.gen(function*() {
        const handle = yield* fs.open(file, { flag: "a" })
        yield* handle.writeAll(data)
        if (options.fsync === true) yield* handle.sync
      }))

    const append = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> => {
      const file = fileOf(event.sessionId)
      if (!Session.isValidId(event.sessionId)) {
        return Effect.fail(
          new EventStoreFailure({ reason: "unknown", operation: "append", sessionId: event.sessionId, detail: "invalid session id" })
        )
      }
      return Effect.flatMap(lockOf(event.sessionId), (lock) =>
        lock.withPermits(1)(Effect.gen(function*() {
          const tail = yield* tailOf(event.sessionId, file)
          if (event.sequence !== tail.lastSequence + 1) {
            return yield* sequenceConflict(event, tail.lastSequence, { path: file })
          }
          const isNew = tail.size <= 0
          const text = (isNew ? headerLine + "\n" : "") + AgentEvent.encodeJson(event) + "\n"
          const data = encoder.encode(text)
          if (isNew) {
            yield* fs.makeDirectory(sessionsDir, { recursive: true }).pipe(Effect.mapError(fromPlatform("append", sessionsDir, event.sessionId)))
          }
          yield* write(file, data).pipe(
            Effect.mapError(fromPlatform("append", file, event.sessionId)),
            // A write that failed half way (a full disk) must not leave a torn line behind.
            Effect.tapError(() =>
              Effect.sync(() => tails.delete(event.sessionId)).pipe(
                Effect.zipRight(isNew ? fs.remove(file) : fs.truncate(file, tail.size)),
                Effect.ignore
              )
            )
          )
          tails.set(event.sessionId, { lastSequence: event.sequence, size: Math.max(tail.size, 0) + data.byteLength })
        }).pipe(Effect.uninterruptible)))
    }

    const readFile = (sessionId: string, file: string): Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure> =>
      Stream.suspend(() => {
        let expected = 1
        return linesOf(fs.stream(file)).pipe(
          Stream.catchTag("SystemError", (e) => e.reason === "NotFound" ? Stream.empty : Stream.fail(e)),
          Stream.mapError((e) => fromPlatform("read", file, sessionId)(e)),
          Stream.filterMapEffect((line): Option.Option<Effect.Effect<AgentEvent.AgentEvent, EventStoreFailure>> => {
            if (!line.terminated) {
              return recovery === "strict"
                ? Option.some(Effect.fail(corrupt(file, sessionId, line.number, "the last line is torn (no newline)", "torn_line")))
                : Option.none()
            }
            if (line.number === 1) {
              const version = parseHeader(line.text)
              if (Option.isNone(version)) {
                return Option.some(Effect.fail(corrupt(file, sessionId, 1, "the first line is not an effect-agent log header")))
              }
              return version.value === formatVersion
                ? Option.none()
                : Option.some(Effect.fail(corrupt(file, sessionId, 1, `unsupported log format version ${version.value}`)))
            }
            const decoded = AgentEvent.decodeJson(line.text)
            if (Either.isLeft(decoded)) {
              return Option.some(Effect.fail(corrupt(file, sessionId, line.number, "not a valid event")))
            }
            const event = decoded.right
            if (event.sessionId !== sessionId) {
              return Option.some(Effect.fail(corrupt(file, sessionId, line.number, `event of another session (${event.sessionId})`)))
            }
            if (event.sequence !== expected) {
              const kind = event.sequence < expected ? "duplicate or out-of-order" : "gap in"
              return Option.some(Effect.fail(
                corrupt(file, sessionId, line.number, `${kind} sequence: expected ${expected}, found ${event.sequence}`)
              ))
            }
            expected++
            return Option.some(Effect.succeed(event))
          })
        )
      })

    const read: EventStore.Service["read"] = (sessionId, readOptions) => {
      if (!Session.isValidId(sessionId)) return Stream.empty
      const from = readOptions?.fromSequence ?? 1
      const events = readFile(sessionId, fileOf(sessionId))
      return from <= 1 ? events : Stream.filter(events, (e) => e.sequence >= from)
    }

    const list = Effect.gen(function*() {
      const names = yield* fs.readDirectory(sessionsDir).pipe(
        Effect.catchTag("SystemError", (e) => e.reason === "NotFound" ? Effect.succeed([]) : Effect.fail(e)),
        Effect.mapError(fromPlatform("list", sessionsDir))
      )
      const ids = names.filter((name) => name.endsWith(".jsonl")).map((name) => name.slice(0, -".jsonl".length)).filter(Session.isValidId)
      const summaries = yield* Effect.forEach(
        ids,
        (sessionId) => Stream.runFold(read(sessionId), undefined as Session.SessionSummary | undefined, Session.summarize),
        { concurrency: 8 }
      )
      return summaries.filter((s): s is Session.SessionSummary => s !== undefined).sort(byRecentActivity)
    })

    return EventStore.of({ append, read, list })
  })

/** The JSONL store as a layer; it needs a `FileSystem` and a `Path` (for example `NodeContext.layer`). */
export const layer = (options: Options): Layer.Layer<EventStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(EventStore, make(options))
