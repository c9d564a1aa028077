/**
 * The JSONL store's append path: a session's log, kept open while it is appended to, and the batches
 * written at its end.
 *
 * What an append's success promises: the event's whole line (a batch's lines) went to the operating
 * system in one `write(2)` at the end of the file — it survives this process crashing, not the
 * machine losing power. With `fsync: true` the file was also flushed to disk (`fsync(2)`) first;
 * appends arriving while a flush is under way wait for it and go out together in the next write and
 * flush (group commit). A failed write (a full disk) is cut off again, so nothing half written is
 * counted as stored or left for the next line to glue onto.
 *
 * Speed: while this process holds a session's writer lock it is the log's only writer, so an append
 * is one `write(2)` with no `stat`: the last sequence and size are known in memory, read again only
 * when the lock is (re)taken — by reading the log's end backwards, never the whole log. A batch of
 * one turn's deltas (a streamed response: most of what a log holds) is encoded straight to bytes;
 * any other event by `JSON.stringify` after a check compiled from the schema, the schema itself
 * running only for what that check does not accept (see `EventCodec`). A log of an older format
 * version is upgraded (atomically, the original kept beside it) on its first append.
 *
 * @since 0.5.0
 * @internal
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, renameSync, statSync, unlinkSync } from "node:fs"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import * as Session from "../../domain/Session.js"
import { sequenceConflict } from "../../services/EventStore.js"
import * as Directories from "../Directories.js"
import * as KeyedLock from "../KeyedLock.js"
import * as PlainRelease from "../PlainRelease.js"
import { AppendIo } from "./AppendIo.js"
import * as Backups from "./Backups.js"
import * as EventCodec from "./EventCodec.js"
import { fromLogOpen, fromNode, fromPlatform } from "./FileFailure.js"
import * as LineWriter from "./LineWriter.js"
import * as LogLines from "./LogLines.js"
import * as LogReader from "./LogReader.js"
import * as WriterLock from "./WriterLock.js"

/** What the append path needs of its store. */
export interface Options {
  /** The folder of the session logs. */
  readonly sessionsDir: string
  /** A session's log file. */
  readonly fileOf: (sessionId: string) => string
  /** Every event of a log (to upgrade one of an older format). */
  readonly readLog: (sessionId: string, file: string) => Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure>
  readonly recovery: LogReader.Recovery
  readonly maxLineBytes: number
  readonly fsync: boolean
}

/** The append path of one store. */
export interface Appends {
  /**
   * Appends a batch of one session's events with consecutive sequences (the caller checked that),
   * the first being the log's last + 1: wholly, or nothing of it.
   */
  readonly append: (sessionId: string, events: ReadonlyArray<AgentEvent.AgentEvent>) => Effect.Effect<void, EventStoreFailure>
  /**
   * For the scope, this process holds the session's writer lock: what it knew of the log is read
   * again once (the lock may have been someone else's since), then trusted without a `stat` until
   * the scope closes.
   */
  readonly holdWriter: (sessionId: string) => Effect.Effect<void, never, Scope.Scope>
  /** Makes the sessions folder (and the data dir), owner only when created here. */
  readonly makeSessionsDir: (sessionId: string) => Effect.Effect<void, EventStoreFailure>
}

const newline = 0x0a
const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code

/** What the store knows of a log's end, found by reading it. */
interface Tail {
  readonly lastSequence: number
  /** File size in bytes (-1: no file). */
  readonly size: number
  readonly version: number
  /** The file whose end this is (undefined: no file): the one opened for appending must be it. */
  readonly ino?: number
}

/** What reading a log's end found: its tail, and how many bytes of a torn last line were cut off. */
type TailScan = { readonly tail: Tail; readonly cut: number } | EventStoreFailure

/** Whole lines, each ending in a newline: as text, or already as UTF-8 bytes. */
type Lines = string | Uint8Array

/** Lines waiting for the write (and flush) under way to end, with whoever waits for them. */
interface Queued {
  readonly data: Lines
  readonly first: number
  readonly last: number
  readonly settle: Settle
}

/** Hands an append its outcome, whether it is already waiting for it or not yet. */
class Settle {
  private outcome: Effect.Effect<void, EventStoreFailure> | undefined
  private resume: ((outcome: Effect.Effect<void, EventStoreFailure>) => void) | undefined
  done(outcome: Effect.Effect<void, EventStoreFailure>) {
    if (this.resume === undefined) this.outcome = outcome
    else this.resume(outcome)
  }
  readonly wait: Effect.Effect<void, EventStoreFailure> = Effect.async((resume) => {
    if (this.outcome === undefined) this.resume = resume
    else resume(this.outcome)
  })
}

/**
 * A session's log, open for appending. While this process holds the session's writer lock
 * (`trusted`), no one else writes the file: its last sequence and size are known here and an append
 * is one `write(2)` with no `stat`. Otherwise (appends without the lock, which the port allows) the
 * size is checked by a `stat` before each append, and a change behind the store's back makes it
 * read the log's end again.
 */
interface Appender {
  readonly sessionId: string
  readonly file: string
  readonly fd: number
  /** The file's inode when opened: an append made without the lock checks the log's name still names it. */
  readonly ino: number
  /** The file's device when opened: with `ino`, what a writer holding the lock checks its log's name still names. */
  readonly dev: number
  /** Bytes of complete lines in the file. */
  size: number
  /** The last sequence written. */
  last: number
  /** The last sequence accepted: written, or queued behind a flush (`fsync` only). */
  accepted: number
  trusted: boolean
  /** `fsync` only: lines waiting for the flush under way. */
  queue: Array<Queued>
  flushing: boolean
}

/** Lines one after the other: text while all are text, else bytes. */
const concatLines = (parts: ReadonlyArray<Lines>): Lines =>
  parts.length === 1
    ? parts[0]!
    : parts.every((p) => typeof p === "string")
    ? parts.join("")
    : Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : p)))

/** How many append handles of sessions this process does not hold the lock of stay open. */
const maxOpenFiles = 32

/**
 * How many append handles of sessions this process holds the lock of stay open: a held session's log
 * stays open between appends, and an engine may hold many sessions (its cache, and every session
 * whose turn runs), so without a bound the store would take a descriptor per session held and fail
 * `EMFILE` where the process's limit is low (1,024 is common). The least recently appended to is
 * closed first; its next append reads the log's end again, as after taking the lock.
 */
const maxHeldOpenFiles = 256

/** The append path of a store; its open logs are closed when the scope closes. */
export const make = (options: Options): Effect.Effect<Appends, never, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const io = yield* AppendIo
    const { fileOf, fsync, maxLineBytes, recovery, sessionsDir } = options
    const locks = yield* KeyedLock.make<string>()

    const corrupt = (file: string, sessionId: string, line: number | undefined, detail: string, reason: EventStoreFailureReason = "corrupt") =>
      LogReader.corrupt(file, sessionId, line, detail, reason)

    /**
     * Finds a log's version (its first line) and its last complete line by reading backwards from
     * the end, so the first append to a long log does not read all of it. Cuts off a torn tail in
     * skip mode. Synchronous `node:fs` calls: a handful of system calls on the page cache, cheaper
     * than a hand-off to the thread pool for each (this runs whenever a session's writer lock is taken).
     */
    const scanTail = (sessionId: string, file: string): Effect.Effect<Tail, EventStoreFailure> =>
      Effect.suspend(() => {
        let fd: number
        let writable = true
        try {
          // Without blocking, as every read of a log: a named pipe in a log's place held the whole
          // process in open(2) (readTail then refuses anything but a regular file). For writing too
          // when it may be: a torn tail is cut off through this descriptor, the file checked, never
          // by name (a link swapped in for the log meanwhile had the file it named cut).
          const flags = constants.O_NOFOLLOW | constants.O_NONBLOCK
          try {
            fd = openSync(file, constants.O_RDWR | flags)
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code
            if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw error
            writable = false
            fd = openSync(file, constants.O_RDONLY | flags)
          }
        } catch (error) {
          return (error as NodeJS.ErrnoException).code === "ENOENT"
            ? Effect.succeed({ lastSequence: 0, size: -1, version: LogFormat.currentVersion })
            : Effect.fail(fromLogOpen("append", file, sessionId)(error))
        }
        let found: TailScan
        try {
          found = readTail(fd, file, sessionId, writable)
          if (!(found instanceof EventStoreFailure)) found = { ...found, tail: { ...found.tail, ino: fstatSync(fd).ino } }
        } catch (error) {
          return Effect.fail(fromNode("append", file, sessionId)(error))
        } finally {
          closeSync(fd)
        }
        if (found instanceof EventStoreFailure) return Effect.fail(found)
        if (found.cut === 0) return Effect.succeed(found.tail)
        return Effect.as(
          Effect.logWarning("effect-agent: cutting off a torn last line before appending").pipe(Effect.annotateLogs({ path: file, bytes: found.cut })),
          found.tail
        )
      })

    /** Bytes read at each end of a log first when its writer lock is taken (storage3: 64 KiB each before). */
    const firstRead = 4 * 1024

    /** {@link scanTail} on an open log; throws what `node:fs` throws. */
    const readTail = (fd: number, file: string, sessionId: string, writable: boolean): TailScan => {
      const stat = fstatSync(fd)
      if (!stat.isFile()) return corrupt(file, sessionId, undefined, "not a regular file")
      const size = stat.size
      if (size === 0) return { tail: { lastSequence: 0, size: 0, version: LogFormat.currentVersion }, cut: 0 }
      // A few KiB first at each end: the header is one short line and a last line is mostly short;
      // then as before (a first line within 64 KiB, a window growing up to the longest line).
      const shortHead = io.readAt(fd, 0, Math.min(size, firstRead))
      const head = shortHead.indexOf(newline) === -1 && size > firstRead ? io.readAt(fd, 0, Math.min(size, 64 * 1024)) : shortHead
      const firstEnd = head.indexOf(newline)
      const first = firstEnd === -1 ? Option.none() : LogLines.firstLine(head.toString("utf8", 0, firstEnd))
      let window = Math.min(size, firstRead)
      while (true) {
        const bytes = io.readAt(fd, size - window, window)
        const lastNewline = bytes.lastIndexOf(newline)
        const previousNewline = lastNewline <= 0 ? -1 : bytes.lastIndexOf(newline, lastNewline - 1)
        if ((lastNewline === -1 || previousNewline === -1) && window < size) {
          // The last line (or a torn tail) is longer than any line may be: stop before reading it all.
          if (window >= maxLineBytes + 2) return corrupt(file, sessionId, undefined, `the last line is longer than ${maxLineBytes} bytes`, "line_too_long")
          window = Math.min(size, window * 4, maxLineBytes + 2)
          continue
        }
        const validSize = lastNewline === -1 ? 0 : size - window + lastNewline + 1
        if (validSize < size) {
          if (recovery === "strict") return corrupt(file, sessionId, undefined, "the last line is torn (no newline) and recovery is strict", "torn_line")
          if (!writable) throw Object.assign(new Error("the log cannot be written"), { code: "EACCES" })
          io.truncate(fd, validSize)
        }
        const cut = size - validSize
        if (lastNewline === -1) return { tail: { lastSequence: 0, size: 0, version: LogFormat.currentVersion }, cut }
        if (Option.isNone(first)) return corrupt(file, sessionId, 1, "the first line is not an effect-agent log header")
        const { isHeader, version } = first.value
        // A log holding only its header has no event yet.
        if (validSize === firstEnd + 1 && isHeader) return { tail: { lastSequence: 0, size: validSize, version }, cut }
        const event = LogLines.decodeEvent(bytes.toString("utf8", previousNewline + 1, lastNewline), version)
        if (Either.isLeft(event)) return corrupt(file, sessionId, undefined, "the last complete line is not a valid event")
        return { tail: { lastSequence: event.right.sequence, size: validSize, version }, cut }
      }
    }

    // Open logs by session, least recently used first; those of sessions this process does not hold
    // the lock of are few, those it holds bounded too (`maxHeldOpenFiles`). Appenders are only ever used, opened or closed in synchronous steps, so
    // no append ever sees one half made or half closed.
    const appenders = new Map<string, Appender>()
    /** Appends waiting for (or holding) a session's lock: a later append must not pass them. */
    const waiting = new Map<string, number>()
    /** Sessions whose writer lock this store holds. */
    const held = new Set<string>()

    /** Forgets an appender and closes its file; one with a flush under way closes when the flush ends. */
    const drop = (appender: Appender) => {
      if (appenders.get(appender.sessionId) === appender) appenders.delete(appender.sessionId)
      if (appender.flushing) return
      try {
        io.close(appender.fd)
      } catch {
        // Closing a descriptor fails only when it is already unusable.
      }
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => [...appenders.values()].forEach(drop)))

    /**
     * Whether an appender still describes its file: always while this process holds the lock, and
     * while its own flush is under way (`fsync`: the lines queue behind it); else when its size matches.
     */
    const current = (appender: Appender) => {
      if (appender.trusted || appender.flushing) return true
      try {
        return io.size(appender.file) === appender.size
      } catch {
        return false
      }
    }

    /**
     * Rewrites a log of an older version in the current one before its first append: every event
     * migrated, nothing dropped. The new file replaces the old by a rename, so the path always holds
     * one whole log; the original is kept as `<file>.v<version>` (`.v<version>.1`, … when taken).
     * Neither name is followed if it is a link (a repository's data dir can plant them): the new log
     * is created (`O_EXCL`, after removing whatever had its name), the original kept by a hard link.
     * What was written is known through its descriptor, never read back by name: a file swapped in
     * under the new log's name before its rename (another upgrader's, removed and made again under
     * the same name) became the log and its end was trusted. If the log's name does not name the file
     * written after the rename, the original is put back and the append fails, nothing changed.
     */
    const upgrade = (sessionId: string, file: string, version: number) =>
      Effect.gen(function*() {
        const temporary = `${file}.upgrade`
        const cannotWrite = fromNode("append", temporary, sessionId)
        // Streamed: the log's events read a chunk at a time and written in writes of about 64 KiB.
        // The new log was built whole in memory (every event collected, then joined into one
        // string): a 200 MB version-0 log needed several times that, and one past 512 MB failed.
        let lastSequence = 0
        const written = yield* LineWriter.newLog(temporary, cannotWrite, (out) =>
          Stream.runForEachChunk(options.readLog(sessionId, file), (events) =>
            Effect.try({
              try: () => {
                for (const event of events) {
                  out.push(AgentEvent.encodeJson(event))
                  lastSequence = event.sequence
                }
              },
              catch: cannotWrite
            })).pipe(Effect.zipRight(Effect.try({
              try: () => {
                out.end(fsync)
                return out.stat()
              },
              catch: cannotWrite
            }))))
        const backup = yield* Effect.try({ try: () => Backups.keepBeside(file, `${file}.v${version}`), catch: fromNode("append", file, sessionId) })
        yield* fs.rename(temporary, file).pipe(Effect.mapError(fromPlatform("append", file, sessionId)))
        const named = lstatSync(file, { throwIfNoEntry: false })
        if (named?.ino !== written.ino || named.dev !== written.dev) {
          try {
            renameSync(backup, file)
          } catch {
            // The original stays under its backup name.
          }
          return yield* replacedMeanwhile(sessionId, file, "the upgraded log was replaced before it was put in place; nothing was changed")
        }
        yield* Effect.logInfo("effect-agent: upgraded a log to the current format").pipe(Effect.annotateLogs({ path: file, from: version }))
        return { lastSequence, size: written.size, version: LogFormat.currentVersion, ino: written.ino } satisfies Tail
      })

    const replacedMeanwhile = (sessionId: string, file: string, detail: string) =>
      new EventStoreFailure({ reason: "unavailable", operation: "append", sessionId, path: file, detail })

    const isOld = (tail: Tail) => tail.size > 0 && tail.version < LogFormat.currentVersion

    /**
     * Upgrades an older log under the session's writer lock, taken for the upgrade when this process
     * does not hold it, and only if the log is still old once it is taken. Two appends without the
     * lock upgraded one log at once: the later rename put its copy over the first's upgraded log and
     * dropped what the first had appended to it meanwhile, though told it was stored. An append to an
     * older log needs its upgrade first, so under the lock nothing else writes the log being upgraded.
     */
    const upgradeOnce = (sessionId: string, file: string, found: Tail): Effect.Effect<Tail, EventStoreFailure> =>
      held.has(sessionId)
        ? upgrade(sessionId, file, found.version)
        : Effect.scoped(
          WriterLock.acquire(sessionId, file).pipe(
            Effect.catchTag("SessionBusy", (busy) =>
              new EventStoreFailure({
                reason: "unavailable",
                operation: "append",
                sessionId,
                path: file,
                detail: `the log is of an older format and its writer lock is held by ${busy.holder}, whose first append upgrades it`
              })),
            Effect.zipRight(scanTail(sessionId, file)),
            Effect.flatMap((now) => isOld(now) ? upgrade(sessionId, file, now.version) : Effect.succeed(now))
          )
        )

    /** Opens a session's log for appending, from what its end says (after an upgrade, if it needs one). */
    const openAppender = (sessionId: string, file: string) =>
      Effect.gen(function*() {
        const found = yield* scanTail(sessionId, file)
        const tail = isOld(found) ? yield* upgradeOnce(sessionId, file, found) : found
        if (tail.size < 0) yield* makeSessionsDir(sessionId)
        return yield* Effect.try({
          try: (): Appender => {
            // The others' handles first: at most `maxOpenFiles` of sessions this process does not hold,
            // `maxHeldOpenFiles` of those it holds (least recently used first, by the map's order).
            const trusted = held.has(sessionId)
            const limit = trusted ? maxHeldOpenFiles : maxOpenFiles
            let open = 0
            for (const other of appenders.values()) if (other.trusted === trusted) open++
            for (const other of appenders.values()) {
              if (open < limit) break
              if (other.trusted === trusted && !other.flushing && !waiting.has(other.sessionId)) {
                drop(other)
                open--
              }
            }
            const fd = io.open(file)
            // The file opened must be the one whose end was read: a log replaced between the two (a
            // repair's rename) had an event numbered after the old log's end written to the new one.
            const { dev, ino } = fstatSync(fd)
            if (tail.ino !== undefined && ino !== tail.ino) {
              io.close(fd)
              throw replacedMeanwhile(sessionId, file, "the log was replaced while it was opened for appending; nothing was appended")
            }
            const last = tail.lastSequence
            const appender: Appender = {
              sessionId,
              file,
              fd,
              ino,
              dev,
              size: Math.max(tail.size, 0),
              last,
              accepted: last,
              trusted,
              queue: [],
              flushing: false
            }
            appenders.set(sessionId, appender)
            return appender
          },
          // A link put in the log's place since its end was read is refused here too (`io.open`'s
          // `O_NOFOLLOW`), and so is a named pipe (`ENXIO`) or anything else but a regular file (`EINVAL`).
          catch: (error) =>
            error instanceof EventStoreFailure
              ? error
              : codeOf(error) === "ENXIO" || codeOf(error) === "EINVAL"
              ? corrupt(file, sessionId, undefined, "not a regular file")
              : fromLogOpen("append", file, sessionId)(error)
        })
      })

    /** The lines of a batch, or why none of it may be written. */
    const linesOf = (appender: Appender, events: ReadonlyArray<AgentEvent.AgentEvent>): Lines | EventStoreFailure => {
      // The hot path: a streamed response's deltas, encoded straight to bytes. One event is cheaper as
      // one `JSON.stringify`: the run's shared parts and its buffer are four typed arrays made per
      // batch, which pay off over many lines only (one delta appended: 3.5 → 2.9 µs, bench row 3).
      const run = events.length > 1 ? EventCodec.encodeDeltaRun(events, maxLineBytes) : undefined
      if (run !== undefined) return run
      let data = ""
      for (const event of events) {
        const line = EventCodec.encodeLine(event)
        if (line === undefined) {
          return new EventStoreFailure({
            reason: "unknown",
            operation: "append",
            sessionId: event.sessionId,
            sequence: event.sequence,
            path: appender.file,
            detail: `not a valid event (${String(event.type)})`
          })
        }
        // A line the store could not read back is never written. (UTF-8 takes at most 3 bytes per UTF-16 unit.)
        if (line.length * 3 > maxLineBytes && Buffer.byteLength(line) > maxLineBytes) {
          return new EventStoreFailure({
            reason: "line_too_long",
            operation: "append",
            sessionId: event.sessionId,
            sequence: event.sequence,
            path: appender.file,
            detail: `the event is ${Buffer.byteLength(line)} bytes, longer than a line may be (${maxLineBytes})`
          })
        }
        data += line + "\n"
      }
      return data
    }

    /**
     * Writes whole lines at the end of the log, or nothing: a write that fails half way (a full disk)
     * is cut off again, so no torn line is left for the next append to glue onto. When even that
     * fails, the appender is dropped and the next append reads the log's end again (and cuts off a
     * torn tail there, or refuses in strict mode).
     */
    const writeLines = (appender: Appender, data: Lines): EventStoreFailure | undefined => {
      const before = appender.size
      if (appender.trusted) {
        const changed = changedUnder(appender)
        if (changed !== undefined) return changed
      }
      // A new log begins with its header.
      const text = before === 0 ? concatLines([LogLines.header + "\n", data]) : data
      const size = typeof text === "string" ? Buffer.byteLength(text) : text.length
      try {
        if (before === 0) io.chmod(appender.fd)
        let written = io.write(appender.fd, text)
        // A short write (rare: a disk filling up) goes on from the first byte not written.
        if (written < size) {
          const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text
          while (written < size) written += io.write(appender.fd, bytes.subarray(written))
        }
      } catch (error) {
        undo(appender, before)
        return fromNode("append", appender.file, appender.sessionId)(error)
      }
      // The rewrite's mark first, then the name: a repair marks before its last look at the log and
      // unmarks after its rename, so an append that finds no mark either wrote before that look (which
      // then sees it, and the repair gives up) or checks the name after the rename.
      if (!appender.trusted && (WriterLock.rewriteUnderWay(appender.file) || replaced(appender))) return takeBack(appender, before, size)
      appender.size = before + size
      return undefined
    }

    /**
     * A writer holding the lock trusts its log's end without reading it, but the lock binds only
     * effect-agent's own writers: an editor's save, `sed -i`, a backup restored or a copy put in
     * place renames another file over the log, and a truncation cuts it in place. Written on
     * regardless, a long-lived writer (`serve`, `acp`) appended to a file no longer named (its events
     * gone when it exits) or glued its next line onto a cut fragment. So each batch first checks, by
     * an `fstat` and a `stat`, that the log's name still names the open file and that the file ends
     * where this writer left it. If not, nothing is written: the handle is dropped, the append fails
     * `log_replaced` or `log_truncated`, and the next one reads the log's end afresh (a torn tail cut
     * off as when the lock is taken).
     */
    const changedUnder = (appender: Appender): EventStoreFailure | undefined => {
      let size: number
      try {
        size = io.identity(appender.fd, appender.file, appender.ino, appender.dev)
      } catch {
        size = -1
      }
      if (size === appender.size) return undefined
      drop(appender)
      return new EventStoreFailure({
        reason: size >= 0 && size < appender.size ? "log_truncated" : "log_replaced",
        operation: "append",
        sessionId: appender.sessionId,
        detail: size < 0
          ? "the session's log was replaced or removed while this process was writing it; nothing was appended (the log on disk is what was kept: read it before going on)"
          : size < appender.size
          ? "the session's log was cut short while this process was writing it; nothing was appended (a torn last line is cut off: read the log before going on)"
          : "the session's log was written by someone else while this process held its writer lock; nothing was appended"
      })
    }

    /**
     * Whether the log's name no longer names the file an append without the lock just wrote to: a
     * `repair` (or an upgrade) renamed a new log over it between the append's check of its size and
     * its write, so the lines went into the original — `<file>.bak` — not the log. Only appends
     * without the lock can meet this (a holder excludes repair); one `stat` each, as their check.
     */
    const replaced = (appender: Appender): boolean => {
      try {
        return statSync(appender.file, { throwIfNoEntry: false })?.ino !== appender.ino
      } catch {
        return true
      }
    }

    /**
     * An append without the lock that met a rewrite takes the lines it just wrote back and fails. Only
     * while they are the file's last: another such appender may have written after them and been told
     * its lines are stored (cutting back to before ours cut theirs too, and a repair then found the
     * original at its planned size and kept the repaired log: theirs in neither). Left in place, ours
     * may stay in the log: the failure says so.
     */
    const takeBack = (appender: Appender, before: number, written: number): EventStoreFailure => {
      let cut = false
      try {
        if (fstatSync(appender.fd).size === before + written) {
          io.truncate(appender.fd, before)
          cut = true
        }
      } catch {
        // The original is no one's log any more: lines left in it are in a backup, never read as the log.
        cut = true
      }
      drop(appender)
      return new EventStoreFailure({
        reason: "unavailable",
        operation: "append",
        sessionId: appender.sessionId,
        path: appender.file,
        detail: cut
          ? "the log was repaired or replaced while this append was written; nothing was appended"
          : "the log was repaired or replaced while this append was written, and appended to after it: its lines were left in place (cutting them would cut those), so the log may hold them; read it before appending again"
      })
    }

    const undo = (appender: Appender, size: number) => {
      try {
        io.truncate(appender.fd, size)
        appender.size = size
        // A log that never held a line is removed, as if it had never been started.
        if (size === 0) unlinkSync(appender.file)
        if (size === 0) drop(appender)
      } catch {
        drop(appender)
      }
    }

    /**
     * `fsync` mode: writes what is queued in one write, flushes it, and tells every waiting append;
     * lines queued meanwhile go out the same way next (group commit).
     */
    const flush = (appender: Appender) => {
      const batch = appender.queue
      appender.queue = []
      appender.flushing = true
      const before = appender.size
      const failed = writeLines(appender, concatLines(batch.map((q) => q.data)))
      const fail = (failure: EventStoreFailure) => {
        const refused = [...batch, ...appender.queue]
        appender.queue = []
        appender.flushing = false
        appender.accepted = appender.last
        if (appenders.get(appender.sessionId) !== appender) drop(appender)
        for (const q of refused) q.settle.done(Effect.fail(failure))
      }
      if (failed !== undefined) return fail(failed)
      io.sync(appender.fd, (error) => {
        if (error !== null) {
          undo(appender, before)
          return fail(fromNode("append", appender.file, appender.sessionId)(error))
        }
        appender.last = batch.at(-1)!.last
        for (const q of batch) q.settle.done(Effect.void)
        if (appender.queue.length > 0) return flush(appender)
        appender.flushing = false
        if (appenders.get(appender.sessionId) !== appender) drop(appender)
      })
    }

    /**
     * Appends a batch to an appender that describes its file: synchronously (one write) by default,
     * or queued behind the flush under way with `fsync`. Returns the outcome, or what to wait for.
     */
    const commit = (appender: Appender, events: ReadonlyArray<AgentEvent.AgentEvent>): EventStoreFailure | Settle | undefined => {
      const first = events[0]!
      if (first.sequence !== appender.accepted + 1) return sequenceConflict(first, appender.accepted, { path: appender.file })
      const data = linesOf(appender, events)
      if (data instanceof EventStoreFailure) return data
      const last = events.at(-1)!.sequence
      if (!fsync) {
        const failed = writeLines(appender, data)
        if (failed !== undefined) return failed
        appender.last = last
        appender.accepted = last
        return undefined
      }
      const settle = new Settle()
      appender.queue.push({ data, first: first.sequence, last, settle })
      appender.accepted = last
      if (!appender.flushing) flush(appender)
      return settle
    }

    // An append waiting for its flush is not interrupted: it returns once the flush says whether it is stored.
    const outcome = (result: EventStoreFailure | Settle | undefined): Effect.Effect<void, EventStoreFailure> =>
      result === undefined ? Effect.void : result instanceof Settle ? Effect.uninterruptible(result.wait) : Effect.fail(result)

    /** The way in when the session has no usable appender: under its lock, opening one first. */
    const appendSlowly = (sessionId: string, events: ReadonlyArray<AgentEvent.AgentEvent>) =>
      Effect.suspend(() => {
        waiting.set(sessionId, (waiting.get(sessionId) ?? 0) + 1)
        const file = fileOf(sessionId)
        return locks.withLock(sessionId)(Effect.gen(function*() {
          const found = appenders.get(sessionId)
          if (found !== undefined && !current(found)) drop(found)
          // The appender is committed to in the same synchronous step that finds or opens it.
          const appender = appenders.get(sessionId) ?? (yield* openAppender(sessionId, file))
          return commit(appender, events)
        })).pipe(
          Effect.ensuring(Effect.sync(() => {
            const n = waiting.get(sessionId)! - 1
            if (n === 0) waiting.delete(sessionId)
            else waiting.set(sessionId, n)
          })),
          Effect.flatMap(outcome),
          Effect.uninterruptible
        )
      })

    const appendBatch = (sessionId: string, events: ReadonlyArray<AgentEvent.AgentEvent>): Effect.Effect<void, EventStoreFailure> =>
      Effect.suspend(() => {
        if (!Session.isValidId(sessionId)) {
          return Effect.fail(new EventStoreFailure({ reason: "unknown", operation: "append", sessionId, detail: "invalid session id" }))
        }
        const appender = appenders.get(sessionId)
        // The fast way: an open log this store knows the end of, and no earlier append still waiting.
        // It runs in one synchronous step (or queues behind a flush), so nothing can interrupt it half way.
        if (appender !== undefined && !waiting.has(sessionId) && current(appender)) {
          // Most recently used last: the handles closed first when too many are open are the others'.
          appenders.delete(sessionId)
          appenders.set(sessionId, appender)
          return outcome(commit(appender, events))
        }
        return appendSlowly(sessionId, events)
      }).pipe(Effect.tapError((failure) => failure.reason === "log_replaced" || failure.reason === "log_truncated" ? reread(sessionId, failure) : Effect.void))

    /** After a log changed under its writer: its end read again now (a torn tail cut off), and a warning. */
    const reread = (sessionId: string, failure: EventStoreFailure) =>
      Effect.logWarning(`effect-agent: ${failure.detail}`).pipe(
        Effect.annotateLogs({ sessionId, reason: failure.reason }),
        Effect.zipRight(Effect.ignore(locks.withLock(sessionId)(scanTail(sessionId, fileOf(sessionId)))))
      )

    /** The sessions folder (and the data dir), owner only when created here. */
    const makeSessionsDir = (sessionId: string) =>
      Effect.try({
        try: () => Directories.makeSync(sessionsDir, 0o700),
        catch: fromNode("append", sessionsDir, sessionId)
      })

    /**
     * Holding the lock, this store is the log's only writer: what it knew of the log is read again
     * once (the lock may have been someone else's since), then trusted without a `stat` until the
     * lock is released.
     */
    const holdWriter = (sessionId: string) =>
      PlainRelease.acquireRelease(
        Effect.sync(() => {
          held.add(sessionId)
          // One with a flush under way stays: its state is this store's own writes, and it keeps checking by `stat`.
          const appender = appenders.get(sessionId)
          if (appender !== undefined && !appender.flushing) drop(appender)
        }),
        () =>
          Effect.sync(() => {
            held.delete(sessionId)
            const appender = appenders.get(sessionId)
            if (appender !== undefined) drop(appender)
          })
      )

    return { append: appendBatch, holdWriter, makeSessionsDir }
  })
