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
 * Appending — what an append's success promises (one `write(2)` of whole lines; with `fsync`, a
 * flush first, appends meanwhile grouped), and why it is fast — is `jsonl/Appends.ts`. Reading streams
 * the log in 64 KiB chunks in constant memory (see `jsonl/LogReader.ts`).
 *
 * @since 0.1.0
 */
import { closeSync, constants, fstatSync, lstatSync, readSync, renameSync, rmSync } from "node:fs"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../domain/AgentEvent.js"
import { EventStoreFailure, type EventStoreFailureReason, type SessionBusy, SessionNotFound } from "../domain/Errors.js"
import * as LogFormat from "../domain/LogFormat.js"
import * as Session from "../domain/Session.js"
import type { BlobStore } from "../services/BlobStore.js"
import { batchConflict, EventStore } from "../services/EventStore.js"
import { IdGenerator } from "../services/IdGenerator.js"
import * as FileBlobStore from "./blobs/FileBlobStore.js"
import * as Appends from "./jsonl/Appends.js"
import * as Backups from "./jsonl/Backups.js"
import { fromLogOpen, fromNode } from "./jsonl/FileFailure.js"
import * as LineWriter from "./jsonl/LineWriter.js"
import * as LogLines from "./jsonl/LogLines.js"
import * as LogReader from "./jsonl/LogReader.js"
import * as LogTail from "./jsonl/LogTail.js"
import * as PlainRelease from "./PlainRelease.js"
import * as PlainFiles from "./jsonl/PlainFiles.js"
import * as Repair from "./jsonl/Repair.js"
import * as SessionIndex from "./jsonl/SessionIndex.js"
import * as WriterLock from "./jsonl/WriterLock.js"
import * as Plural from "../domain/Plural.js"

/** What to do with a torn last line: an unterminated line left by a crash mid-write. */
export type Recovery = LogReader.Recovery

/** Options of the JSONL store. */
export interface Options {
  /** The data directory; session files live in its `sessions/` folder. */
  readonly dataDir: string
  /** `skip-trailing-partial` (default) ignores a torn last line and cuts it off before the next append; `strict` fails. */
  readonly recovery?: Recovery
  /**
   * Flush every append to disk (`fsync`) before it is acknowledged: slower, but it survives a power
   * loss. Appends that arrive while a flush is under way wait for it and then go out together, in
   * one write and one flush (group commit). Default `false`.
   */
  readonly fsync?: boolean
  /**
   * The longest line a log may hold, in bytes (default 16 MiB). Reading fails `line_too_long`,
   * naming the line, as soon as a line passes it, without holding the line in memory.
   */
  readonly maxLineBytes?: number
  /**
   * Opened to read (the read commands: `sessions`, `replay`, …): the listing index is saved where
   * the data dir can be written, and a data dir that cannot be is read without a warning. Appends
   * still fail there, as the file system says.
   */
  readonly readOnly?: boolean
}

/** The header line's format name. */
export const formatName = LogLines.formatName
/** The log format version this store writes. */
export const formatVersion = LogFormat.currentVersion

/** Builds a JSONL store. */
export const make = (options: Options): Effect.Effect<EventStore.Service, never, FileSystem.FileSystem | Path.Path | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const recovery = options.recovery ?? "skip-trailing-partial"
    const maxLineBytes = options.maxLineBytes ?? LogLines.defaultMaxLineBytes
    const sessionsDir = path.join(options.dataDir, "sessions")
    const fileOf = (sessionId: string) => path.join(sessionsDir, `${sessionId}.jsonl`)

    const appends = yield* Appends.make({
      sessionsDir,
      fileOf,
      readLog: (sessionId, file) => readFile(sessionId, file, 1),
      recovery,
      maxLineBytes,
      fsync: options.fsync === true
    })

    /** Sessions whose writer lock this store holds: their appends are announced to the index by the lock's `+`/`-`. */
    const held = new Set<string>()

    /** Appends, then tells the index's journal when no writer lock announced the session already. */
    const appendNoted = (sessionId: string, events: ReadonlyArray<AgentEvent.AgentEvent>) =>
      held.has(sessionId) ? appends.append(sessionId, events) : Effect.zipRight(appends.append(sessionId, events), index.note(".", sessionId))

    const append = (event: AgentEvent.AgentEvent) => appendNoted(event.sessionId, [event])

    const appendAll = (events: ReadonlyArray<AgentEvent.AgentEvent>): Effect.Effect<void, EventStoreFailure> => {
      if (events.length === 0) return Effect.void
      const conflict = batchConflict(events)
      return conflict === undefined ? appendNoted(events[0]!.sessionId, events) : Effect.fail(conflict)
    }

    const readFile = (sessionId: string, file: string, fromSequence: number): Stream.Stream<AgentEvent.AgentEvent, EventStoreFailure> =>
      LogReader.events({ sessionId, file, recovery, maxLineBytes, fromSequence })

    const read: EventStore.Service["read"] = (sessionId, readOptions) =>
      Session.isValidId(sessionId) ? readFile(sessionId, fileOf(sessionId), readOptions?.fromSequence ?? 1) : Stream.empty

    const index = SessionIndex.make({
      fs,
      path,
      dataDir: options.dataDir,
      sessionsDir,
      maxLineBytes,
      summarizeAll: (sessionId) => summarize(read(sessionId)),
      readOnly: options.readOnly === true
    })

    // The index answers in listing order (kept in the index: a warm listing does not sort).
    const listing: EventStore.Service["listing"] = index.refresh
    const list = Effect.map(listing, (l) => l.sessions)

    const acquireWriter = (sessionId: string): Effect.Effect<void, SessionBusy | EventStoreFailure, Scope.Scope> =>
      Session.isValidId(sessionId)
        ? Effect.zipRight(appends.makeSessionsDir(sessionId), WriterLock.acquire(sessionId, fileOf(sessionId))).pipe(
          Effect.zipRight(appends.holdWriter(sessionId)),
          // Announced while the lock is held: `-` is written before the lock goes (finalizers run in reverse).
          Effect.zipRight(PlainRelease.acquireRelease(
            Effect.zipRight(index.note("+", sessionId), Effect.sync(() => held.add(sessionId))),
            () => Effect.zipRight(Effect.sync(() => held.delete(sessionId)), index.note("-", sessionId))
          ))
        )
        : Effect.fail(new EventStoreFailure({ reason: "unknown", operation: "lock", sessionId, detail: "invalid session id" }))

    const lastSequence: EventStore.Service["lastSequence"] = (sessionId) =>
      Effect.sync(() => Session.isValidId(sessionId) ? Option.fromNullable(LogTail.lastSequence(fileOf(sessionId), sessionId)) : Option.none())

    return EventStore.of({ append, appendAll, read, list, listing, acquireWriter, lastSequence })
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
 * Seams of `repair` for tests (nothing by default), where another process's append can land: between
 * its last check of the log and the swap of the new log in, and just after the swap.
 *
 * @internal
 */
export class RepairSeam extends Context.Reference<RepairSeam>()("effect-agent/jsonl/RepairSeam", {
  defaultValue: (): { readonly beforeSwap: Effect.Effect<void>; readonly afterSwap?: Effect.Effect<void> } => ({ beforeSwap: Effect.void })
}) {}

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
    const path = yield* Path.Path
    const ids = yield* IdGenerator
    const { sessionId } = options
    if (!Session.isValidId(sessionId)) return yield* new SessionNotFound({ sessionId })
    const file = path.join(options.dataDir, "sessions", `${sessionId}.jsonl`)
    const failed = (detail: string, cause?: unknown, reason: EventStoreFailureReason = "unavailable") =>
      new EventStoreFailure({ reason, operation: "repair", sessionId, path: file, detail, ...(cause === undefined ? {} : { cause }) })
    if (lstatSync(file, { throwIfNoEntry: false }) === undefined) return yield* new SessionNotFound({ sessionId })
    const held = yield* WriterLock.acquire(sessionId, file)
    // Opened as every read of a log is: never through a link, never waiting on a pipe, only a regular
    // file (a repository's data dir can put a link to another project's log, or a named pipe, in a
    // log's place: repair read what the link named, and a pipe held it in open(2) for good).
    const fd = yield* Effect.acquireRelease(
      Effect.try({
        try: () => PlainFiles.openRegular(file, constants.O_RDONLY),
        catch: (error) =>
          (error as NodeJS.ErrnoException).code === "EINVAL"
            ? failed("not a regular file; nothing was changed", undefined, "corrupt")
            : fromLogOpen("repair", file, sessionId)(error)
      }),
      (opened) => Effect.sync(() => closeSync(opened))
    )
    // Two passes over the file, a line at a time (a long log is never held whole): the first plans
    // what to keep, the second writes it. The descriptor is read by position, so each pass starts at 0.
    // The second stops where the first ended (`planned`): a line appended meanwhile without the lock
    // (another library user, a writer ignoring locks) was never planned, so it is not written — and
    // the size is checked again before the rename, so such a log is left as it is (`changedMeanwhile`).
    const chunk = Buffer.allocUnsafe(64 * 1024)
    let planEnd = 0
    const linesOf = (upTo: number) => {
      let position = 0
      const bytes = Stream.repeatEffectOption(Effect.suspend(() => {
        let read: number
        try {
          read = readSync(fd, chunk, 0, Math.min(chunk.byteLength, upTo - position), position)
        } catch (error) {
          return Effect.fail(Option.some(fromNode("repair", file, sessionId)(error)))
        }
        position += read
        planEnd = Math.max(planEnd, position)
        return read === 0 ? Effect.fail(Option.none()) : Effect.succeed(Uint8Array.prototype.slice.call(chunk, 0, read))
      }))
      return LogLines.linesOf(bytes, { maxLineBytes: options.maxLineBytes ?? LogLines.defaultMaxLineBytes }).pipe(
        Stream.mapError((e) => e._tag === "LineTooLong" ? failed(`line ${e.number} is longer than ${e.maxLineBytes} bytes`, undefined, "line_too_long") : e)
      )
    }
    let planner: Repair.Planner | undefined
    let hasHeader = false
    yield* Stream.runForEachChunk(linesOf(Number.MAX_SAFE_INTEGER), (lines) =>
      Effect.suspend(() => {
        for (const line of lines) {
          if (line.number === 1) {
            const first = LogLines.firstLine(line.text)
            if (Option.isNone(first)) return failed("the first line is not an effect-agent log header; nothing was changed", undefined, "corrupt")
            if (first.value.version > LogFormat.currentVersion) {
              return failed(`unsupported log format version ${first.value.version}; nothing was changed`, undefined, "corrupt")
            }
            planner = new Repair.Planner(sessionId, first.value.version)
            hasHeader = first.value.isHeader
            // A version-0 log has no header: its first line is already an event.
            if (hasHeader) continue
          }
          planner!.add(line)
        }
        return Effect.void
      }))
    const plannedBytes = planEnd
    if (planner === undefined) return yield* failed("the first line is not an effect-agent log header; nothing was changed", undefined, "corrupt")
    const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
    const planned = planner
    const report = { sessionId, file, kept: planned.kept, dropped: planned.dropped }
    if (planned.dropped.length === 0) return { ...report, repaired: false }
    if (planned.kept === 0) return yield* failed("no event of the log can be kept; nothing was changed", undefined, "corrupt")
    const { closedTurnId, closing: unnamed } = planned.finish({ id: () => "", timestamp })
    const closing = yield* Effect.forEach(unnamed, (event) => Effect.map(ids.next("event"), (id) => ({ ...event, id })))
    const temporary = `${file}.repair`
    const cannotWrite = (error: unknown) => failed(`could not rewrite the log: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, error)
    // The second pass plans again, as the first did, and writes what it keeps (as the current
    // format: a version-0 log's events migrated), then the closing events.
    yield* LineWriter.newLog(temporary, cannotWrite, (pending) => {
      const replay = new Repair.Planner(sessionId, planned.version)
      return Stream.runForEachChunk(linesOf(plannedBytes), (lines) =>
        Effect.try({
          try: () => {
            for (const line of lines) {
              if (line.number === 1 && hasHeader) continue
              const event = replay.add(line)
              if (event !== undefined) pending.push(AgentEvent.encodeJson(event))
            }
          },
          catch: cannotWrite
        })).pipe(
          Effect.zipRight(Effect.try({
            try: () => {
              for (const event of closing) pending.push(AgentEvent.encodeJson(event))
              pending.end(true)
            },
            catch: cannotWrite
          }))
        )
    })
    // Marked before the last look at the log, unmarked (the scope's end) after the rename: an append
    // made without the lock (the port allows one; a holder is excluded) that finds no mark after its
    // write either wrote before this look, which sees it, or checks the log's name after the rename;
    // one that finds it takes its lines back (`Appends`). Before, such an append between this look and
    // the rename went into the original, now the backup; and when the original was put back for it,
    // one told its lines were stored in the repaired log meanwhile was left in `<file>.repair`.
    yield* WriterLock.markRewrite(file, held).pipe(
      Effect.mapError(cannotWrite),
      Effect.tapError(() => Effect.sync(() => rmSync(temporary, { force: true })))
    )
    const changedMeanwhile = yield* Effect.try({
      try: () => {
        const original = fstatSync(fd)
        return original.size !== plannedBytes || lstatSync(file, { throwIfNoEntry: false })?.ino !== original.ino
      },
      catch: cannotWrite
    })
    if (changedMeanwhile) {
      rmSync(temporary, { force: true })
      return yield* failed("the log changed while repairing; nothing was changed")
    }
    const seam = yield* RepairSeam
    yield* seam.beforeSwap
    const backup = yield* Effect.try({
      try: () => {
        // The original keeps its inode under the backup name; the rename swaps the whole new log in at once.
        const backup = Backups.keepBeside(file, `${file}.bak`)
        renameSync(temporary, file)
        return backup
      },
      catch: cannotWrite
    })
    if (seam.afterSwap !== undefined) yield* seam.afterSwap
    // The listing index is a cache: dropped, it is rebuilt from the logs.
    yield* Effect.try({ try: () => rmSync(path.join(options.dataDir, "index.json"), { force: true }), catch: cannotWrite })
    yield* Effect.logInfo(`effect-agent: repaired session ${sessionId}: kept ${Plural.count(planned.kept, "event")}, dropped ${Plural.count(planned.dropped.length, "line")}`)
    return { ...report, repaired: true, backup, ...(closedTurnId === undefined ? {} : { closedTurnId }) }
  }))

/**
 * The JSONL store as a layer, with its blob area (`<dataDir>/blobs/`, see `blobs/FileBlobStore`); it
 * needs a `FileSystem` and a `Path` (for example `NodeContext.layer`).
 */
export const layer = (options: Options): Layer.Layer<EventStore | BlobStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.merge(Layer.scoped(EventStore, make(options)), FileBlobStore.layer({ dataDir: options.dataDir }))
