/**
 * The session index of a JSONL data dir (`<dataDir>/index.json`): each session's summary and how
 * much of its log (bytes) the summary covers. Listing reads the index, then only what each log
 * gained since — a stat per session, and new lines only — so it never reads whole logs. A missing,
 * unreadable or stale entry (a log that shrank or was replaced) is rebuilt from the log; so is a
 * missing index. The index is written back atomically (temporary file, then rename).
 *
 * @since 0.1.0
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { EventStoreFailure } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import * as Session from "../../domain/Session.js"
import { fromPlatform } from "./FileFailure.js"
import * as LogLines from "./LogLines.js"

const Entry = Schema.Struct({
  /** Bytes of the log the summary covers (up to the end of its last complete line). */
  covered: Schema.Int,
  version: Schema.Int,
  summary: Session.SessionSummary
})
type Entry = typeof Entry.Type

const IndexFile = Schema.Struct({
  format: Schema.Literal("effect-agent/index"),
  // 2: summaries carry `awaitingApproval`; an index of version 1 lacks it, so it is rebuilt.
  version: Schema.Literal(2),
  sessions: Schema.Record({ key: Schema.String, value: Entry })
})

const decodeIndex = Schema.decodeUnknownEither(Schema.parseJson(IndexFile))

/** What the index needs. */
export interface Options {
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  readonly dataDir: string
  readonly sessionsDir: string
  readonly maxLineBytes: number
  /** A session's summary from its whole log, for entries that must be rebuilt. */
  readonly summarizeAll: (sessionId: string) => Effect.Effect<Session.SessionSummary | undefined, EventStoreFailure>
  /**
   * Opened by a command that only reads: the index is still saved when the data dir can be written
   * (so the next listing is warm), but failing to save it is silent — a read-only data dir is read
   * without a warning.
   */
  readonly readOnly?: boolean
}

/** A log's read failure as a listing's: same reason, file and line. */
const withOperation = (failure: EventStoreFailure): EventStoreFailure =>
  failure.operation === "list" ? failure : new EventStoreFailure({ ...failure, operation: "list" })

/** Builds the index of a data dir. */
export const make = (options: Options) => {
  const { fs, path } = options
  const indexFile = path.join(options.dataDir, "index.json")

  const load: Effect.Effect<ReadonlyMap<string, Entry>> = fs.readFileString(indexFile).pipe(
    Effect.map((text) => new Map(Either.match(decodeIndex(text), { onLeft: () => [], onRight: (i) => Object.entries(i.sessions) }))),
    // A missing or unreadable index is rebuilt, never trusted.
    Effect.orElseSucceed(() => new Map<string, Entry>())
  )

  const save = (sessions: Record<string, Entry>) => {
    const temporary = `${indexFile}.${process.pid}.tmp`
    return fs.writeFileString(temporary, JSON.stringify({ format: "effect-agent/index", version: 2, sessions }), { mode: 0o600 }).pipe(
      Effect.zipRight(fs.chmod(temporary, 0o600)),
      Effect.zipRight(fs.rename(temporary, indexFile)),
      // The index is a cache: failing to save it costs a slower listing next time, nothing more. One
      // line, no stack: the error's own message names the file and the reason.
      Effect.catchAll((error) =>
        options.readOnly === true
          // Left behind by a failed rename, the temporary file is removed; a read-only dir has none.
          ? Effect.ignore(fs.remove(temporary))
          : Effect.logWarning(`effect-agent: could not save the session index: ${error.message}`)
      )
    )
  }

  /** The entry of a log that gained bytes since `entry`: its new complete lines folded in. */
  const extend = (file: string, entry: Entry, size: number) =>
    Effect.gen(function*() {
      let covered = entry.covered
      let summary: Session.SessionSummary | undefined = entry.summary
      let valid = true
      yield* LogLines.linesOf(options.fs.stream(file, { offset: entry.covered, bytesToRead: size - entry.covered }), { maxLineBytes: options.maxLineBytes }).pipe(
        Stream.takeWhile((line) => line.terminated),
        Stream.runForEach((line) =>
          Effect.sync(() => {
            const event = LogLines.decodeEvent(line.text, entry.version)
            if (Either.isLeft(event) || event.right.sequence !== (summary?.lastSequence ?? 0) + 1) valid = false
            if (!valid) return
            summary = Session.summarize(summary, Either.getOrThrow(event))
            covered += Buffer.byteLength(line.text, "utf8") + 1
          })
        )
      )
      return valid && summary !== undefined ? Option.some<Entry>({ covered, version: entry.version, summary }) : Option.none<Entry>()
    }).pipe(
      // A line too long to fold in: the entry is rebuilt from the whole log, which names the line.
      Effect.catchTag("LineTooLong", () => Effect.succeed(Option.none<Entry>())),
      Effect.mapError(fromPlatform("list", file))
    )

  const fromFs = (file: string, sessionId: string) => (error: PlatformError) => Effect.fail(fromPlatform("list", file, sessionId)(error))

  /** The entry of a log read from the start. */
  const rebuild = (sessionId: string, file: string) =>
    Effect.gen(function*() {
      const summary = yield* options.summarizeAll(sessionId)
      if (summary === undefined) return Option.none<Entry>()
      // The summary covers the log up to the end of its last complete line; a torn tail is left to the next extension.
      const bytes = yield* options.fs.readFile(file)
      const firstEnd = bytes.indexOf(0x0a)
      const first = firstEnd === -1 ? Option.none() : LogLines.firstLine(new TextDecoder().decode(bytes.subarray(0, firstEnd)))
      const version = Option.match(first, { onNone: () => LogFormat.currentVersion, onSome: (f) => f.version })
      return Option.some<Entry>({ covered: bytes.lastIndexOf(0x0a) + 1, version, summary })
    }).pipe(Effect.catchTags({ SystemError: fromFs(file, sessionId), BadArgument: fromFs(file, sessionId) }))

  /**
   * Every session's summary, bringing the index up to date with the logs on disk. A log that cannot
   * be read is reported as damaged, with the reason; the others are listed all the same.
   */
  const refresh: Effect.Effect<{
    readonly sessions: ReadonlyArray<Session.SessionSummary>
    readonly damaged: ReadonlyArray<{ readonly sessionId: string; readonly failure: EventStoreFailure }>
  }, EventStoreFailure> = Effect.gen(function*() {
    const names = yield* fs.readDirectory(options.sessionsDir).pipe(
      Effect.catchTag("SystemError", (e) => e.reason === "NotFound" ? Effect.succeed([]) : Effect.fail(e)),
      Effect.mapError(fromPlatform("list", options.sessionsDir))
    )
    const ids = names.filter((name) => name.endsWith(".jsonl")).map((name) => name.slice(0, -".jsonl".length)).filter(Session.isValidId)
    const previous = yield* load
    const next: Record<string, Entry> = {}
    const damaged: Array<{ readonly sessionId: string; readonly failure: EventStoreFailure }> = []
    let changed = previous.size !== ids.length
    yield* Effect.forEach(ids, (sessionId) =>
      Effect.gen(function*() {
        const file = path.join(options.sessionsDir, `${sessionId}.jsonl`)
        const size = Number((yield* fs.stat(file).pipe(Effect.mapError(fromPlatform("list", file, sessionId)))).size)
        const known = previous.get(sessionId)
        if (known !== undefined && known.covered === size) {
          next[sessionId] = known
          return
        }
        changed = true
        const grown = known !== undefined && size > known.covered ? yield* extend(file, known, size) : Option.none<Entry>()
        const entry = Option.isSome(grown) ? grown : yield* rebuild(sessionId, file)
        if (Option.isSome(entry)) next[sessionId] = entry.value
      }).pipe(
        Effect.catchAll((failure) =>
          Effect.sync(() => {
            damaged.push({ sessionId, failure: withOperation(failure) })
          })
        )
      ), { concurrency: 8, discard: true })
    if (changed) yield* save(next)
    damaged.sort((a, b) => a.sessionId.localeCompare(b.sessionId))
    return { sessions: Object.values(next).map((entry) => entry.summary), damaged }
  })

  return { refresh }
}
