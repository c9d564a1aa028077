/**
 * The embedded default event store: one JSONL file per session at
 * `<dataDir>/sessions/<sessionId>.jsonl`, built on `@effect/platform`'s `FileSystem`.
 *
 * A file begins with a header line naming the log format and its version, then holds one event
 * per line. Appends to one session are serialized and refuse a sequence that is not last + 1. A
 * torn last line (a crash mid-write) is skipped or refused by the `recovery` mode; a corrupt line
 * anywhere else always fails, naming the file and the line. Logs of older format versions are read
 * through the migrations of `LogFormat`, and upgraded (atomically, the original kept beside it) on
 * their first append. Listing reads an index kept in `<dataDir>/index.json`, not the logs.
 *
 * @since 0.1.0
 */
import { existsSync, linkSync, renameSync, rmSync } from "node:fs"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason, type SessionBusy, SessionNotFound } from "../domain/Errors.js"
import * as LogFormat from "../domain/LogFormat.js"
import * as Session from "../domain/Session.js"
import { byRecentActivity, EventStore, sequenceConflict } from "../services/EventStore.js"
import { IdGenerator } from "../services/IdGenerator.js"
import { fromPlatform } from "./jsonl/FileFailure.js"
import * as LogLines from "./jsonl/LogLines.js"
import * as Repair from "./jsonl/Repair.js"
import * as SessionIndex from "./jsonl/SessionIndex.js"
import * as WriterLock from "./jsonl/WriterLock.js"

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
  /**
   * The longest line a log may hold, in bytes (default 16 MiB). Reading fails `line_too_long`,
   * naming the line, as soon as a line passes it, without holding the line in memory.
   */
  readonly maxLineBytes?: number
}

/** The header line's format name. */
export const formatName = LogLines.formatName
/** The log format version this store writes. */
export const formatVersion = LogFormat.currentVersion

const encoder = new TextEncoder()
const newline = 0x0a

/** What the store knows of a log's end, to append without reading it all. */
interface Tail {
  readonly lastSequence: number
  /** File size in bytes (-1: no file), used to notice a file changed behind the cache's back. */
  readonly size: number
  readonly version: number
}

/** How many append handles stay open, so an append is one write rather than an open, a write and a close. */
const maxOpenFiles = 32

/** Builds a JSONL store. */
export const make = (options: Options): Effect.Effect<EventStore.Service, never, FileSystem.FileSystem | Path.Path | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const recovery = options.recovery ?? "skip-trailing-partial"
    const maxLineBytes = options.maxLineBytes ?? LogLines.defaultMaxLineBytes
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
      new EventStoreFailure({ reason, operation: "read", sessionId, path: file, detail, ...(line === undefined ? {} : { line }) })

    /** Reads up to `length` bytes of an open file from `offset`. */
    const readAt = (handle: FileSystem.File, offset: number, length: number) =>
      Effect.zipRight(handle.seek(offset, "start"), handle.readAlloc(length)).pipe(Effect.map(Option.getOrElse(() => new Uint8Array())))

    /**
     * Finds a log's version (its first line) and its last complete line by reading backwards from
     * the end, so the first append to a long log does not read all of it. Cuts off a torn tail in
     * skip mode.
     */
    const scanTail = (sessionId: string, file: string): Effect.Effect<Tail, EventStoreFailure> =>
      Effect.scoped(Effect.gen(function*() {
        const handle = yield* fs.open(file, { flag: "r" })
        const size = Number((yield* handle.stat).size)
        if (size === 0) return { lastSequence: 0, size: 0, version: LogFormat.currentVersion }
        const head = yield* readAt(handle, 0, Math.min(size, 64 * 1024))
        const firstEnd = head.indexOf(newline)
        const first = firstEnd === -1 ? Option.none() : LogLines.firstLine(new TextDecoder().decode(head.subarray(0, firstEnd)))
        let window = Math.min(size, 64 * 1024)
        while (true) {
          const bytes = yield* readAt(handle, size - window, window)
          const lastNewline = bytes.lastIndexOf(newline)
          const previousNewline = lastNewline <= 0 ? -1 : bytes.lastIndexOf(newline, lastNewline - 1)
          if ((lastNewline === -1 || previousNewline === -1) && window < size) {
            // The last line (or a torn tail) is longer than any line may be: stop before reading it all.
            if (window >= maxLineBytes + 2) {
              return yield* corrupt(file, sessionId, undefined, `the last line is longer than ${maxLineBytes} bytes`, "line_too_long")
            }
            window = Math.min(size, window * 4, maxLineBytes + 2)
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
          if (lastNewline === -1) return { lastSequence: 0, size: 0, version: LogFormat.currentVersion }
          if (Option.isNone(first)) return yield* corrupt(file, sessionId, 1, "the first line is not an effect-agent log header")
          const { isHeader, version } = first.value
          // A log holding only its header has no event yet.
          if (validSize === firstEnd + 1 && isHeader) return { lastSequence: 0, size: validSize, version }
          const text = new TextDecoder().decode(bytes.subarray(previousNewline + 1, lastNewline))
          const event = LogLines.decodeEvent(text, version)
          if (Either.isLeft(event)) return yield* corrupt(file, sessionId, undefined, "the last complete line is not a valid event")
          return { lastSequence: event.right.sequence, size: validSize, version }
        }
      })).pipe(
        Effect.catchTag("BadArgument", (e) => Effect.die(e)),
        Effect.catchTag("SystemError", (e) =>
          e.reason === "NotFound"
            ? Effect.succeed({ lastSequence: 0, size: -1, version: LogFormat.currentVersion })
            : Effect.fail(fromPlatform("append", file, sessionId)(e)))
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
        // The file changed behind the cache (or is new to it): an open handle may point at a replaced file.
        yield* closeAppender(sessionId)
        return yield* scanTail(sessionId, file)
      })

    const write = (file: string, data: Uint8Array, flag: "a" | "w") =>
      Effect.scoped(Effect.gen(function*() {
        const handle = yield* fs.open(file, { flag, mode: 0o600 })
        yield* handle.writeAll(data)
        if (options.fsync === true) yield* handle.sync
      }))

    // Open append handles by session, least recently used first. A handle is only ever used, opened
    // or closed under its session's lock; evicting one skips a session whose lock is busy.
    const appenders = new Map<string, { readonly handle: FileSystem.File; readonly scope: Scope.CloseableScope }>()
    const closeAppender = (sessionId: string) =>
      Effect.suspend(() => {
        const open = appenders.get(sessionId)
        if (open === undefined) return Effect.void
        appenders.delete(sessionId)
        return Scope.close(open.scope, Exit.void)
      })
    yield* Effect.addFinalizer(() => Effect.forEach([...appenders.keys()], closeAppender, { discard: true }))
    const appenderOf = (sessionId: string, file: string) =>
      Effect.gen(function*() {
        const open = appenders.get(sessionId)
        if (open !== undefined) {
          appenders.delete(sessionId)
          appenders.set(sessionId, open)
          return open.handle
        }
        for (const other of appenders.keys()) {
          if (appenders.size < maxOpenFiles) break
          const lock = locks.get(other)
          if (lock !== undefined) yield* lock.withPermitsIfAvailable(1)(closeAppender(other))
        }
        const scope = yield* Scope.make()
        const handle = yield* fs.open(file, { flag: "a", mode: 0o600 }).pipe(Scope.extend(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
        appenders.set(sessionId, { handle, scope })
        return handle
      })

    /**
     * Rewrites a log of an older version in the current one before its first append: every event
     * migrated, nothing dropped. The new file replaces the old by a rename, so the path always holds
     * one whole log; the original is kept as `<file>.v<version>`.
     */
    const upgrade = (sessionId: string, file: string, version: number) =>
      Effect.gen(function*() {
        const events = yield* Stream.runCollect(readFile(sessionId, file))
        const text = [LogLines.header, ...Array.from(events, AgentEvent.encodeJson)].join("\n") + "\n"
        const temporary = `${file}.upgrade`
        yield* write(temporary, encoder.encode(text), "w").pipe(Effect.mapError(fromPlatform("append", temporary, sessionId)))
        yield* fs.copyFile(file, `${file}.v${version}`).pipe(
          Effect.zipRight(fs.chmod(`${file}.v${version}`, 0o600)),
          Effect.mapError(fromPlatform("append", file, sessionId))
        )
        yield* closeAppender(sessionId)
        yield* fs.rename(temporary, file).pipe(Effect.mapError(fromPlatform("append", file, sessionId)))
        yield* Effect.logInfo("effect-agent: upgraded a log to the current format").pipe(Effect.annotateLogs({ path: file, from: version }))
        return yield* scanTail(sessionId, file)
      })

    const append = (event: AgentEvent.AgentEvent): Effect.Effect<void, EventStoreFailure> => {
      const file = fileOf(event.sessionId)
      if (!Session.isValidId(event.sessionId)) {
        return Effect.fail(
          new EventStoreFailure({ reason: "unknown", operation: "append", sessionId: event.sessionId, detail: "invalid session id" })
        )
      }
      return Effect.flatMap(lockOf(event.sessionId), (lock) =>
        lock.withPermits(1)(Effect.gen(function*() {
          const found = yield* tailOf(event.sessionId, file)
          const tail = found.size > 0 && found.version < LogFormat.currentVersion ? yield* upgrade(event.sessionId, file, found.version) : found
          if (event.sequence !== tail.lastSequence + 1) {
            return yield* sequenceConflict(event, tail.lastSequence, { path: file })
          }
          const isNew = tail.size <= 0
          const line = encoder.encode(AgentEvent.encodeJson(event))
          // A line the store could not read back is never written.
          if (line.byteLength > maxLineBytes) {
            return yield* new EventStoreFailure({
              reason: "line_too_long",
              operation: "append",
              sessionId: event.sessionId,
              sequence: event.sequence,
              path: file,
              detail: `the event is ${line.byteLength} bytes, longer than a line may be (${maxLineBytes})`
            })
          }
          const data = encoder.encode((isNew ? LogLines.header + "\n" : "") + AgentEvent.encodeJson(event) + "\n")
          if (isNew) {
            yield* makeSessionsDir(event.sessionId)
          }
          yield* Effect.gen(function*() {
            const handle = yield* appenderOf(event.sessionId, file)
            // Logs hold tool output and transcripts: owner only, whatever the umask.
            if (isNew) yield* fs.chmod(file, 0o600)
            yield* handle.writeAll(data)
            if (options.fsync === true) yield* handle.sync
          }).pipe(
            Effect.mapError(fromPlatform("append", file, event.sessionId)),
            // A write that failed half way (a full disk) must not leave a torn line behind.
            Effect.tapError(() =>
              Effect.sync(() => tails.delete(event.sessionId)).pipe(
                Effect.zipRight(closeAppender(event.sessionId)),
                Effect.zipRight(isNew ? fs.remove(file) : fs.truncate(file, tail.size)),
                Effect.ignore
              )
            )
          )
          tails.set(event.sessionId, { lastSequence: event.sequence, size: Math.max(tail.size, 0) + data.byteLength, version: LogFormat.currentVersion })
        }).pipe(Effect.uninterruptible)))
    }

    const readFile = (sessionId: string, file: string): Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure> =>
      Stream.suspend(() => {
        let expected = 1
        let version = LogFormat.currentVersion
        const event = (line: LogLines.Line): Effect.Effect<AgentEvent.AgentEvent, EventStoreFailure> => {
          const decoded = LogLines.decodeEvent(line.text, version)
          if (Either.isLeft(decoded)) return Effect.fail(corrupt(file, sessionId, line.number, decoded.left))
          const e = decoded.right
          if (e.sessionId !== sessionId) return Effect.fail(corrupt(file, sessionId, line.number, `event of another session (${e.sessionId})`))
          if (e.sequence !== expected) {
            // Duplicates are what two processes writing one log at once leave behind (before writer locks).
            const kind = e.sequence < expected ? "duplicate or out-of-order" : "gap in"
            return Effect.fail(corrupt(
              file,
              sessionId,
              line.number,
              `${kind} sequence: expected ${expected}, found ${e.sequence}; repair the log with \`effect-agent repair ${sessionId}\``
            ))
          }
          expected++
          return Effect.succeed(e)
        }
        return LogLines.linesOf(fs.stream(file), { maxLineBytes }).pipe(
          Stream.catchTag("SystemError", (e) => e.reason === "NotFound" ? Stream.empty : Stream.fail(e)),
          Stream.mapError((e) =>
            e._tag === "LineTooLong"
              ? corrupt(file, sessionId, e.number, `the line is longer than ${e.maxLineBytes} bytes`, "line_too_long")
              : fromPlatform("read", file, sessionId)(e)
          ),
          Stream.filterMapEffect((line): Option.Option<Effect.Effect<AgentEvent.AgentEvent, EventStoreFailure>> => {
            if (!line.terminated) {
              return recovery === "strict"
                ? Option.some(Effect.fail(corrupt(file, sessionId, line.number, "the last line is torn (no newline)", "torn_line")))
                : Option.none()
            }
            if (line.number > 1) return Option.some(event(line))
            const first = LogLines.firstLine(line.text)
            if (Option.isNone(first)) return Option.some(Effect.fail(corrupt(file, sessionId, 1, "the first line is not an effect-agent log header")))
            if (first.value.version > LogFormat.currentVersion) {
              return Option.some(Effect.fail(corrupt(file, sessionId, 1, `unsupported log format version ${first.value.version}`)))
            }
            version = first.value.version
            // A version-0 log has no header: its first line is already an event.
            return first.value.isHeader ? Option.none() : Option.some(event(line))
          })
        )
      })

    const read: EventStore.Service["read"] = (sessionId, readOptions) => {
      if (!Session.isValidId(sessionId)) return Stream.empty
      const from = readOptions?.fromSequence ?? 1
      const events = readFile(sessionId, fileOf(sessionId))
      return from <= 1 ? events : Stream.filter(events, (e) => e.sequence >= from)
    }

    const index = SessionIndex.make({
      fs,
      path,
      dataDir: options.dataDir,
      sessionsDir,
      maxLineBytes,
      summarizeAll: (sessionId) => summarize(read(sessionId))
    })

    const listing = Effect.map(index.refresh, ({ damaged, sessions }) => ({ sessions: [...sessions].sort(byRecentActivity), damaged }))
    const list = Effect.map(listing, (l) => l.sessions)

    /** The sessions folder (and the data dir), owner only when created here. */
    const makeSessionsDir = (sessionId: string) =>
      fs.makeDirectory(sessionsDir, { recursive: true, mode: 0o700 }).pipe(Effect.mapError(fromPlatform("append", sessionsDir, sessionId)))

    const acquireWriter = (sessionId: string): Effect.Effect<void, SessionBusy | EventStoreFailure, Scope.Scope> =>
      Session.isValidId(sessionId)
        ? Effect.zipRight(makeSessionsDir(sessionId), Effect.asVoid(WriterLock.acquire(sessionId, fileOf(sessionId))))
        : Effect.fail(new EventStoreFailure({ reason: "unknown", operation: "lock", sessionId, detail: "invalid session id" }))

    return EventStore.of({ append, read, list, listing, acquireWriter })
  })

/** A session's summary from its events. */
const summarize = (events: Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure>) =>
  Stream.runFold(events, undefined as Session.SessionSummary | undefined, Session.summarize)

/** What `repair` did to a log. */
export interface RepairReport {
  readonly sessionId: string
  readonly file: string
  /** Whether the log was rewritten; `false` when it needed nothing. */
  readonly repaired: boolean
  /** Where the original was kept (`<file>.bak`, or `.bak.1`, … when taken). */
  readonly backup?: string
  /** Events kept, in order. */
  readonly kept: number
  /** Lines left out, and why. */
  readonly dropped: ReadonlyArray<Repair.Dropped>
  /** The turn closed `interrupted` because the kept events left it open. */
  readonly closedTurnId?: string
}

/**
 * Repairs a log no reader accepts — duplicate sequences left by two processes writing one session
 * at once (before writer locks), a corrupt line — keeping the first writer's events (see
 * `jsonl/Repair.ts`) and closing a turn they leave open as `interrupted`. Holds the session's writer
 * lock while it works (`SessionBusy` if a live process drives the session). The new log replaces
 * the old by an atomic rename; the original stays beside it as `<file>.bak`. A valid log is left
 * untouched (a paused turn stays resumable).
 */
export const repair = (
  options: Options & { readonly sessionId: string }
): Effect.Effect<RepairReport, EventStoreFailure | SessionBusy | SessionNotFound, FileSystem.FileSystem | Path.Path | IdGenerator> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const ids = yield* IdGenerator
    const { sessionId } = options
    if (!Session.isValidId(sessionId)) return yield* new SessionNotFound({ sessionId })
    const file = path.join(options.dataDir, "sessions", `${sessionId}.jsonl`)
    const failed = (detail: string, cause?: unknown, reason: EventStoreFailureReason = "unavailable") =>
      new EventStoreFailure({ reason, operation: "repair", sessionId, path: file, detail, ...(cause === undefined ? {} : { cause }) })
    if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) return yield* new SessionNotFound({ sessionId })
    yield* WriterLock.acquire(sessionId, file)
    const lines = Chunk.toReadonlyArray(yield* Stream.runCollect(LogLines.linesOf(fs.stream(file), { maxLineBytes: options.maxLineBytes ?? LogLines.defaultMaxLineBytes })).pipe(
      Effect.mapError((e) =>
        e._tag === "LineTooLong"
          ? failed(`line ${e.number} is longer than ${e.maxLineBytes} bytes`, undefined, "line_too_long")
          : fromPlatform("repair", file, sessionId)(e)
      )
    ))
    const first = lines.length === 0 ? Option.none() : LogLines.firstLine(lines[0]!.text)
    if (Option.isNone(first)) return yield* failed("the first line is not an effect-agent log header; nothing was changed", undefined, "corrupt")
    if (first.value.version > LogFormat.currentVersion) {
      return yield* failed(`unsupported log format version ${first.value.version}; nothing was changed`, undefined, "corrupt")
    }
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    const plan = Repair.plan(sessionId, first.value.isHeader ? lines.slice(1) : lines, first.value.version, { id: () => "", timestamp })
    const report = { sessionId, file, kept: plan.kept.length, dropped: plan.dropped }
    if (plan.dropped.length === 0) return { ...report, repaired: false }
    if (plan.kept.length === 0) return yield* failed("no event of the log can be kept; nothing was changed", undefined, "corrupt")
    const closing = yield* Effect.forEach(plan.closing, (event) => Effect.map(ids.next("event"), (id) => ({ ...event, id })))
    const text = [LogLines.header, ...[...plan.kept, ...closing].map(AgentEvent.encodeJson)].join("\n") + "\n"
    const backup = yield* Effect.try({
      try: () => {
        const temporary = `${file}.repair`
        rmSync(temporary, { force: true })
        WriterLock.writeNewFile(temporary, text, true)
        let backup = `${file}.bak`
        for (let n = 1; existsSync(backup); n++) backup = `${file}.bak.${n}`
        // The original keeps its inode under the backup name; the rename swaps the whole new log in at once.
        linkSync(file, backup)
        renameSync(temporary, file)
        // The listing index is a cache: dropped, it is rebuilt from the logs.
        rmSync(path.join(options.dataDir, "index.json"), { force: true })
        return backup
      },
      catch: (error) => failed(`could not rewrite the log: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, error)
    })
    yield* Effect.logInfo(`effect-agent: repaired session ${sessionId}: kept ${plan.kept.length} events, dropped ${plan.dropped.length} lines`)
    return { ...report, repaired: true, backup, ...(plan.closedTurnId === undefined ? {} : { closedTurnId: plan.closedTurnId }) }
  }))

/** The JSONL store as a layer; it needs a `FileSystem` and a `Path` (for example `NodeContext.layer`). */
export const layer = (options: Options): Layer.Layer<EventStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.scoped(EventStore, make(options))
