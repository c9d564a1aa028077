/**
 * The session index of a JSONL data dir (`<dataDir>/index.json`): each session's summary and how
 * much of its log (bytes) the summary covers. A warm listing reads the index and the folder's names,
 * not the logs: it learns which logs changed from the index's journal (`<dataDir>/index.journal`),
 * which every writer of this version appends to —
 *
 * - `+ <id>` when it takes a session's writer lock, `- <id>` before it lets it go: while a session
 *   is held, each listing checks its log (a `stat`, then only the lines it gained); once let go, the
 *   next listing checks it once more;
 * - `. <id>` after an append made without the writer lock (the port allows them).
 *
 * The index records how far into the journal it has read (and which journal: the random id of the
 * header it starts with, see `appendJournal`; its inode number alone named it, and a new journal
 * given a cleared one's number was read from the old offset), and which sessions are being written.
 * So a warm listing costs a directory read, the index and the journal's new lines, plus a `stat`
 * per session written since — never one per log.
 *
 * Logs this version did not write (an older effect-agent, a copy, a hand edit): a log whose name
 * the index does not know is read when it appears in the folder, and a name gone is dropped. A log
 * the index already covers that an older version appends to, or that is edited in place, is caught
 * by the rotation: each listing also checks the next {@link verifiedPerListing} logs (in id order,
 * from where the last one stopped), so every log is checked at least once every
 * ⌈sessions / {@link verifiedPerListing}⌉ listings — every listing, up to that many sessions. A
 * full check (every log's size) is made when there is no index, when it is of an older version (an
 * older effect-agent listing the data dir writes one), when the journal is not the one it read
 * (replaced or truncated), or after `repair` (which removes the index).
 *
 * The index lists its entries in listing order (most recently active first, `byRecentActivity`):
 * a warm listing with nothing new answers them as they stand, checking the order with one
 * comparison per neighbour instead of sorting (an order saved otherwise — by hand, or under another
 * locale's collation of the ids — is sorted again, and saved).
 *
 * A missing, unreadable or stale entry (a log that shrank or was replaced) is rebuilt from the log.
 * The index is written back atomically (temporary file, then rename); the journal is only appended
 * to (one `write(2)` per line, `O_APPEND`), so concurrent writers never tear each other's lines.
 *
 * @since 0.1.0
 * @internal
 */
import { randomBytes } from "node:crypto"
import { closeSync, constants, fstatSync, linkSync, open, readdirSync, readSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from "node:fs"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Client } from "../../domain/AgentEvent.js"
import { EventStoreFailure } from "../../domain/Errors.js"
import * as LogFormat from "../../domain/LogFormat.js"
import * as Session from "../../domain/Session.js"
import * as SessionTitle from "../../domain/SessionTitle.js"
import { byRecentActivity } from "../../services/EventStore.js"
import { fromLogOpen, fromNode } from "./FileFailure.js"
import * as LogLines from "./LogLines.js"
import * as LogSeek from "./LogSeek.js"
import * as PlainFiles from "./PlainFiles.js"
import * as WriterLock from "./WriterLock.js"

/** How much of a grown log is read at a time. */
const chunkBytes = 64 * 1024

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
  // 3: the journal (which one, how far read) and the sessions being written. An index of version 2
  // has none: its entries are kept, and checked against every log once (a full check).
  // 4: summaries carry `title` and the usage totals (`Session.addUsage`); the entries of an older
  // index lack them, so each is rebuilt from its log once (the backfill), then the index is saved
  // as version 4.
  // 5: `sessions` is an array of the same entries in listing order (most recently active first), not
  // an object keyed by id: a warm listing with nothing new need not sort, and an array of entries of
  // one shape parses about twice as fast as 10,000 keys. A version 4 index's entries are kept as they are.
  version: Schema.Literal(2, 3, 4, 5),
  // The journal's `id` (its header's, see `appendJournal`) came later, in version 5 still: an older
  // effect-agent ignores it and saves an index without it, which costs this one a full check (its
  // entries kept) — a version bump would cost an older one a rebuild of every entry instead.
  journal: Schema.optional(Schema.Struct({ inode: Schema.Number, offset: Schema.Int, id: Schema.optional(Schema.String) })),
  writing: Schema.optional(Schema.Array(Schema.String)),
  sessions: Schema.Union(Schema.Object, Schema.Array(Schema.Unknown))
})
type IndexFile = Omit<typeof IndexFile.Type, "sessions"> & { readonly sessions: Readonly<Record<string, unknown>> | ReadonlyArray<unknown> }

/**
 * The index, or `undefined` when it is not one. Its entries are checked one by one (`isEntry`) by
 * whoever reads them, not decoded here: a damaged entry is rebuilt alone, and a warm listing of
 * 10,000 sessions pays no schema decode per field.
 */
const decodeIndex = (text: string): IndexFile | undefined => {
  const raw = Either.getOrUndefined(Either.try(() => JSON.parse(text) as unknown))
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined
  const sessions = (raw as { sessions?: unknown }).sessions
  if (typeof sessions !== "object" || sessions === null) return undefined
  return Either.match(decodeHeader({ ...raw, sessions: {} }), {
    onLeft: () => undefined,
    // Version 5 lists its entries; the older versions key them by id.
    onRight: (header) => Array.isArray(sessions) === (header.version >= 5) ? { ...header, sessions: sessions as IndexFile["sessions"] } : undefined
  })
}

/**
 * The entries an index holds that this version keeps, by session id (versions 4 and 5 hold the same
 * entries; an older version's lack what this one's summaries carry, titles and totals: none is kept).
 */
const entriesOf = (index: IndexFile | undefined): Map<string, Entry> => {
  const entries = new Map<string, Entry>()
  if (index === undefined || index.version < 4) return entries
  if (Array.isArray(index.sessions)) {
    for (const entry of index.sessions as ReadonlyArray<unknown>) if (isEntry(entry)) entries.set(entry.summary.sessionId, entry)
  } else {
    const keyed = index.sessions as Readonly<Record<string, unknown>>
    for (const sessionId in keyed) {
      const entry = keyed[sessionId]
      if (isEntry(entry) && entry.summary.sessionId === sessionId) entries.set(sessionId, entry)
    }
  }
  return entries
}

/** Most recently active first, as listings are (`byRecentActivity`). */
const byEntryActivity = (a: Entry, b: Entry): number => byRecentActivity(a.summary, b.summary)

/** Whether entries are in listing order: one comparison per neighbour, where a sort makes ~14 per entry at 10,000. */
const inListingOrder = (entries: ReadonlyArray<Entry>): boolean => {
  for (let i = 1; i < entries.length; i++) if (byEntryActivity(entries[i - 1]!, entries[i]!) >= 0) return false
  return true
}

const isString = (u: unknown): u is string => typeof u === "string"
const clients: ReadonlySet<unknown> = new Set(Client.literals)
/** A client the log's schema allows: an index can come with a repository, and anything else is rebuilt from the log. */
const isClient = (u: unknown): boolean => clients.has(u)
const isInt = (u: unknown): u is number => Number.isSafeInteger(u)

/** Whether an index entry has the shape of `Entry` (the index is this store's own cache; anything else is rebuilt). */
const isEntry = (u: unknown): u is Entry => {
  if (typeof u !== "object" || u === null) return false
  const { covered, summary, version } = u as Record<string, unknown>
  if (!isInt(covered) || !isInt(version) || typeof summary !== "object" || summary === null) return false
  const s = summary as Record<string, unknown>
  return isString(s.sessionId) && isString(s.cwd) && isClient(s.client) && isString(s.createdAt) && isString(s.lastActivityAt) &&
    isInt(s.turnCount) && isInt(s.lastSequence) && (s.awaitingApproval === undefined || (Array.isArray(s.awaitingApproval) && s.awaitingApproval.every(isString))) &&
    (s.title === undefined || isString(s.title)) &&
    isTotals(s)
}

/**
 * A summary with its title as a log's `session.titled` is read (`SessionTitle.stored`): an index can
 * come with a repository, and its title is listed wherever sessions are (the viewer, `sessions`).
 */
const withStoredTitle = (summary: Session.SessionSummary): Session.SessionSummary => {
  const title = summary.title === undefined ? undefined : SessionTitle.stored(summary.title)
  return title === summary.title ? summary : { ...summary, title }
}

/** Whether a summary's usage totals, if any, have their shape. */
const isTotals = (s: Record<string, unknown>): boolean => {
  const usage = s.usage as Record<string, unknown> | null | undefined
  return (usage === undefined || (typeof usage === "object" && usage !== null && isInt(usage.inputTokens) && isInt(usage.outputTokens))) &&
    (s.cost === undefined || typeof s.cost === "number") &&
    (s.costUnknown === undefined || (Array.isArray(s.costUnknown) && s.costUnknown.every(isString)))
}

/** The index's version: what {@link IndexFile} says each one holds. */
const indexVersion = 5

/**
 * Logs each warm listing checks besides those the journal names (see the module's comment): a
 * `stat` each, cheap next to the index itself, and enough that a small data dir is checked whole.
 */
export const verifiedPerListing = 256

/** A journal line's operation: a writer lock taken, let go, or an append made without it. */
export type JournalOp = "+" | "-" | "."

/** What the journal said since the index last read it. */
interface JournalRead {
  readonly inode: number
  /** Its header's id (see {@link appendJournal}); none for a journal an older effect-agent made, told by its inode alone. */
  readonly id?: string | undefined
  /** The end of its last complete line. */
  readonly offset: number
  /** The sessions to check: written since. */
  readonly changed: ReadonlySet<string>
  /** The sessions being written now. */
  readonly writing: ReadonlySet<string>
}

/**
 * The most of the journal a listing reads: ~100,000 lines, far more than the writers append
 * between two listings. More than that unread (a journal a repository shipped, gigabytes of it as a
 * sparse file; a data dir listed once a year) is skipped: the listing checks every log instead, as
 * with no journal. Before, it was read whole into one buffer, then one string: past ~512 MB every
 * listing failed (`ERR_STRING_TOO_LONG`, `ERR_OUT_OF_RANGE`).
 */
export const maxJournalRead = 4 * 1024 * 1024

/**
 * A journal this long is cleared by the listing that read it to its end (see `clearJournal`): the
 * writers make a new one, which the next listing reads from its start. So the journal never grows
 * for good — also while a server holds a session's lock for days (the sessions being written are
 * carried over in the index, not learnt again from the journal).
 */
export const compactJournalAt = 1024 * 1024

/** The longest journal line this version writes: `+ `, an id (`Session.isValidId`: at most 128), the newline. */
const maxJournalLine = 2 + 128 + 1

/**
 * A journal's first line, as this version makes it: `#journal <id>`, the id random (16 bytes, hex).
 * An older effect-agent's reader skips it (its second character is no space).
 */
const headerPrefix = "#journal "
const headerBytes = headerPrefix.length + 32 + 1
const headerPattern = /^#journal ([0-9a-f]{32})\n$/

/** The id in the header of the open journal `fd` of `size` bytes, if it has one (see {@link appendJournal}). */
const journalId = (fd: number, size: number): string | undefined =>
  size < headerBytes ? undefined : headerPattern.exec(LogSeek.readAt(fd, 0, headerBytes).toString("latin1"))?.[1]

/**
 * Whether the open journal `fd` (its `stat`, its header's `id`) is the one `from` was read from: the
 * same header id, or, for a journal without one (an older effect-agent made it), the same inode.
 * The inode alone is no name: ext4, tmpfs and overlayfs give a removed journal's number to the next
 * file made, and a listing took the writers' new journal for the one it had cleared, read it from the
 * old offset and skipped the `+ <id>` lines before it (stores59).
 */
const isJournalRead = (stat: { readonly ino: number }, id: string | undefined, from: { readonly inode: number; readonly id?: string | undefined }) =>
  id === undefined ? from.id === undefined && stat.ino === from.inode : id === from.id

/**
 * Appends `text` (journal lines) to the journal `file` in one `write(2)`, `O_APPEND`. A missing
 * journal is made with its header (a random id) and `text` in one file under a random name
 * (`PlainFiles.writeNew`), then linked in under the journal's name, which fails if another writer's
 * came first (then `text` is appended to that one): a journal always starts with its header, and a
 * writer never appends before it. Only where the data dir takes no hard link is it made without a
 * header, by `O_CREAT`, and told by its inode as an older effect-agent's. Like the data dir's other
 * files it is opened without following a link or blocking on a pipe (see `PlainFiles`).
 */
export const appendJournal = (file: string, text: string): void => {
  // A journal cleared between the failed link and the append is made again: a few rounds at most.
  for (let round = 0; round < 4; round++) {
    try {
      PlainFiles.withRegular(file, constants.O_WRONLY | constants.O_APPEND, (fd) => writeSync(fd, text))
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
    }
    const made = PlainFiles.temporaryBeside(file)
    try {
      PlainFiles.writeNew(made, `${headerPrefix}${randomBytes(16).toString("hex")}\n${text}`)
      linkSync(made, file)
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") break
    } finally {
      rmSync(made, { force: true })
    }
  }
  PlainFiles.appendText(file, text)
}

/** Where a listing's read of the journal starts: which journal (see {@link isJournalRead}), and how far into it. */
type JournalFrom = { readonly inode: number; readonly id?: string | undefined; readonly offset: number }

/**
 * Reads the journal from `offset` (of the journal `from` names; another one, or one shorter than
 * `offset`, is read from its start and reported as such), applying its lines to `writing`.
 */
export const readJournal = (file: string, from: JournalFrom, writingBefore: ReadonlyArray<string>) => {
  try {
    return PlainFiles.withRegular(file, constants.O_RDONLY, (fd) => readOpenJournal(fd, from, writingBefore))
  } catch (error) {
    // Missing, or not a regular file of the data dir's own (a link or a pipe a repository planted):
    // no journal, so the listing checks every log. Missing is recorded as inode 0 (a journal made
    // later holds every line since, see `readOpenJournal`); a planted file as -1, never the same.
    const code = (error as NodeJS.ErrnoException).code
    if (code !== "ENOENT" && code !== "ELOOP" && code !== "EINVAL") throw error
    const missing = code === "ENOENT"
    return { read: { inode: missing ? 0 : -1, id: undefined, offset: 0, changed: new Set<string>(), writing: new Set(writingBefore) }, same: from.inode === 0 && from.offset === 0 && missing, size: 0 }
  }
}

/** Reads an open journal (see `readJournal`); at most {@link maxJournalRead} bytes of it. */
const readOpenJournal = (fd: number, from: JournalFrom, writingBefore: ReadonlyArray<string>) => {
  const stat = fstatSync(fd)
  const id = journalId(fd, stat.size)
  // Read when there was none (inode 0: missing, or cleared by a listing), a journal holds every line
  // written since, so it continues what was read: from its start, the sessions being written kept.
  const same = from.inode === 0 && from.offset === 0 || isJournalRead(stat, id, from) && stat.size >= from.offset
  const start = same ? from.offset : 0
  if (stat.size - start > maxJournalRead) {
    // Too much to read: taken as read to its end, as another journal (a full check). The sessions
    // being written are learnt again as their writers let them go (`-`).
    return { read: { inode: stat.ino, id, offset: stat.size, changed: new Set<string>(), writing: new Set<string>() }, same: false, size: stat.size }
  }
  const buffer = Buffer.allocUnsafe(stat.size - start)
  let got = 0
  while (got < buffer.length) {
    const n = readSync(fd, buffer, got, buffer.length - got, start + got)
    if (n === 0) break
    got += n
  }
  const changed = new Set<string>()
  const writing = new Set(same ? writingBefore : [])
  // Line by line, each decoded alone (a line longer than this version writes is not one of its).
  let end = 0
  for (let newline = buffer.indexOf(0x0a, 0); newline !== -1 && newline < got; newline = buffer.indexOf(0x0a, end)) {
    const line = newline - end < maxJournalLine ? buffer.toString("latin1", end, newline) : ""
    end = newline + 1
    const op = line[0]
    const sessionId = line.slice(2)
    if (line[1] !== " " || !Session.isValidId(sessionId)) continue
    changed.add(sessionId)
    if (op === "+") writing.add(sessionId)
    else if (op === "-") writing.delete(sessionId)
  }
  return { read: { inode: stat.ino, id, offset: start + end, changed, writing }, same, size: stat.size }
}

/**
 * Clears a long journal a listing read to its end (see {@link compactJournalAt}). It is renamed
 * aside first, then read from where the listing stopped to its end, then removed: a line a writer
 * appended after the listing's read (a `+ S` as it takes a lock) is in the file set aside, so it is
 * heard, not lost with the file. Unlinking it by name lost such a line: the next listing's full check
 * saw S once, but its appends under the lock write no line, so its entry stayed stale until the
 * rotation came round. What was read is recorded as inode 0: the journal the writers make next holds
 * every line since, and is read from its start (`readOpenJournal`), no full check needed.
 *
 * Another listing clearing at once may have renamed the journal first, and the writers made a new
 * one: that one, set aside here, is read from its start. A data dir that cannot be written keeps
 * its journal (`same` as read); one set aside that cannot be read costs a full check next time.
 */
export const clearJournal = (file: string, read: JournalRead): { readonly read: JournalRead; readonly same: boolean } => {
  const aside = `${file}.${randomBytes(8).toString("hex")}.cleared`
  try {
    renameSync(file, aside)
  } catch {
    return { read, same: true }
  }
  try {
    const tail = PlainFiles.withRegular(aside, constants.O_RDONLY, (fd) => {
      const stat = fstatSync(fd)
      const from = isJournalRead(stat, journalId(fd, stat.size), read) ? read : { inode: 0, offset: 0 }
      return readOpenJournal(fd, from, [...read.writing])
    })
    if (!tail.same) return { read: { ...tail.read, inode: -1, id: undefined, offset: 0 }, same: false }
    return { read: { inode: 0, offset: 0, changed: new Set([...read.changed, ...tail.read.changed]), writing: tail.read.writing }, same: true }
  } catch {
    return { read: { ...read, inode: -1, id: undefined, offset: 0, writing: new Set() }, same: false }
  } finally {
    try {
      unlinkSync(aside)
    } catch {
      // Left behind, it is no journal: nothing reads it.
    }
  }
}

const decodeHeader = Schema.decodeUnknownEither(IndexFile)

/**
 * A log's format version, from its first line (read no further than {@link chunkBytes}): a header
 * says it; a first line longer than that is no header, so an event (a log from before headers:
 * version 0); a log without a complete line is taken as of the current version.
 */
const versionOf = (fd: number, size: number): number => {
  const head = LogSeek.readAt(fd, 0, Math.min(size, chunkBytes))
  const end = head.indexOf(0x0a)
  if (end === -1) return head.length === chunkBytes ? 0 : LogFormat.currentVersion
  return Option.match(LogLines.firstLine(head.toString("utf8", 0, end)), { onNone: () => LogFormat.currentVersion, onSome: (f) => f.version })
}

/** The end of the last complete line in the first `size` bytes of a log (0 when none), found from the end a chunk at a time. */
const lastLineEnd = (fd: number, size: number): number => {
  for (let to = size; to > 0; to -= chunkBytes) {
    const from = Math.max(0, to - chunkBytes)
    const newline = LogSeek.readAt(fd, from, to - from).lastIndexOf(0x0a)
    if (newline !== -1) return from + newline + 1
  }
  return 0
}

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
  const journalFile = path.join(options.dataDir, "index.journal")

  // Read with Node's own read and decode (PlainFiles.readText: one read): 10,000 sessions are
  // ~3.7 MB, which the platform's `readFileString` (a buffer, then `TextDecoder`) decodes several times slower.
  const load: Effect.Effect<IndexFile | undefined> = Effect.sync(() => {
    try {
      return decodeIndex(PlainFiles.readText(indexFile))
    } catch {
      // A missing or unreadable index is rebuilt, never trusted.
      return undefined
    }
  })

  let journalWarned = false
  /**
   * Tells later listings that a session's log changes (see the module's comment). A journal that
   * cannot be written costs a stale warm listing, never the append: one warning, then silence.
   */
  const note = (op: JournalOp, sessionId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      try {
        appendJournal(journalFile, `${op} ${sessionId}\n`)
        return Effect.void
      } catch (error) {
        if (journalWarned) return Effect.void
        journalWarned = true
        return Effect.logWarning(`effect-agent: could not write the session index's journal ${journalFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
      }
    })

  // Where the next listing's rotation starts: a file of its own, so that a listing with nothing new
  // writes a few bytes, not the index. Lost or unreadable, the rotation starts over.
  const rotationFile = path.join(options.dataDir, "index.rotation")
  const loadRotation = () => {
    try {
      const n = Number(PlainFiles.readText(rotationFile))
      return Number.isSafeInteger(n) && n >= 0 ? n : 0
    } catch {
      return 0
    }
  }
  const saveRotation = (cursor: number) => {
    try {
      PlainFiles.writeText(rotationFile, String(cursor))
    } catch {
      // As the index: a cache. A data dir that cannot be written checks the same logs each time.
    }
  }

  // Each save writes a temporary file of its own: two listings of one process saving at once (a
  // server's clients listing a cold data dir) shared one name, and the first rename took the file
  // the other was still writing — its rename failed, or renamed a file written by both. Its name is
  // random and it is created exclusively (`PlainFiles.writeNew`): a data dir that came with a
  // repository could hold a link under every `index.json.<pid>.<n>.tmp`, and a read-only `sessions`
  // wrote the index through it (truncating the file it named, then `chmod`ding it 0600).
  const save = (sessions: ReadonlyArray<Entry>, journal: JournalRead) => {
    const temporary = `${indexFile}.${process.pid}.${randomBytes(8).toString("hex")}.tmp`
    const file = { format: "effect-agent/index", version: indexVersion, journal: { inode: journal.inode, offset: journal.offset, ...(journal.id === undefined ? {} : { id: journal.id }) }, writing: [...journal.writing], sessions }
    return Effect.try({ try: () => PlainFiles.writeNew(temporary, JSON.stringify(file)), catch: (error) => error as Error }).pipe(
      Effect.zipRight(fs.rename(temporary, indexFile)),
      // The index is a cache: failing to save it costs a slower listing next time, nothing more. One
      // line, no stack: the error's own message names the file and the reason.
      Effect.catchAll((error) =>
        // Left behind by a failed write or rename, the temporary file is removed (a read-only dir has none).
        Effect.zipRight(
          Effect.ignore(fs.remove(temporary)),
          options.readOnly === true ? Effect.void : Effect.logWarning(`effect-agent: could not save the session index: ${error.message}`)
        )
      )
    )
  }

  /**
   * A log opened for reading without blocking (a named pipe in its place opens at once) and kept
   * only when it is a regular file, with its size then.
   */
  const openLog = (sessionId: string, file: string) =>
    // In libuv's pool, as the `stat` it replaces was: a listing looping while logs are written still
    // lets the event loop turn at each log it checks.
    Effect.async<number, EventStoreFailure>((resume) => {
      let interrupted = false
      open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW, (error, fd) => {
        // A listing interrupted meanwhile: the descriptor is nobody's.
        if (interrupted) {
          if (error === null) closeSync(fd)
          return
        }
        resume(error === null ? Effect.succeed(fd) : Effect.fail(fromLogOpen("list", file, sessionId)(error)))
      })
      return Effect.sync(() => {
        interrupted = true
      })
    }).pipe(Effect.flatMap((fd) => {
      try {
        const stat = fstatSync(fd)
        if (stat.isFile()) return Effect.succeed({ fd, size: stat.size })
        closeSync(fd)
        return notRegular(sessionId, file)
      } catch (error) {
        closeSync(fd)
        return Effect.fail(fromNode("list", file, sessionId)(error))
      }
    }))

  /** Bytes `from` to `to` of the open log `fd`, in chunks (fewer at its end). */
  const chunksOf = (file: string, fd: number, from: number, to: number): Stream.Stream<Uint8Array, EventStoreFailure> =>
    Stream.unfoldChunkEffect(from, (offset) =>
      offset >= to
        ? Effect.succeed(Option.none())
        : Effect.try({
          try: () => {
            const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, to - offset))
            const n = readSync(fd, buffer, 0, buffer.length, offset)
            return n === 0 ? Option.none() : Option.some([Chunk.of(buffer.subarray(0, n) as Uint8Array), offset + n] as const)
          },
          catch: fromNode("list", file)
        }))

  /** The entry of a log that gained bytes since `entry`: its new complete lines folded in, read from the open log `fd`. */
  const extend = (file: string, fd: number, entry: Entry, size: number) =>
    Effect.gen(function*() {
      let covered = entry.covered
      let summary: Session.SessionSummary | undefined = entry.summary
      let valid = true
      yield* LogLines.linesOf(chunksOf(file, fd, entry.covered, size), { maxLineBytes: options.maxLineBytes }).pipe(
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
      Effect.catchTag("LineTooLong", () => Effect.succeed(Option.none<Entry>()))
    )

  /** A log's name on something that is not a regular file (a named pipe or a device planted in a shipped data dir would hold the listing, or never end). */
  const notRegular = (sessionId: string, file: string) =>
    Effect.fail(new EventStoreFailure({ reason: "corrupt", operation: "list", sessionId, path: file, detail: "not a regular file" }))

  /** The entry of a log read from the start, from the open log `fd`. */
  const rebuild = (sessionId: string, file: string, fd: number) =>
    Effect.gen(function*() {
      // The size first, then the summary: a log that grows in between gets a summary ahead of what
      // the entry says it covers, which the next extension finds (its first line's sequence does
      // not follow) and rebuilds — never a summary behind, which a size check would keep for good.
      // The entry covers the log up to the end of its last complete line; a torn tail is left to the
      // next extension. Only the header and the end are read here, a chunk at a time: the log was
      // read whole into one buffer (a cold listing of a 1.26 GB log took 1.47 GB; one over 2 GiB
      // "cannot be read"), and the bytes before `size` of an append-only log do not change.
      const read = <A>(f: () => A) => Effect.try({ try: f, catch: fromNode("list", file, sessionId) })
      const size = yield* read(() => fstatSync(fd).size)
      const version = yield* read(() => versionOf(fd, size))
      const summary = yield* options.summarizeAll(sessionId)
      if (summary === undefined) return Option.none<Entry>()
      return Option.some<Entry>({ covered: yield* read(() => lastLineEnd(fd, size)), version, summary })
    })

  // The folder's names with Node's own synchronous read: 10,000 of them in a third of the time of
  // the platform's (a promise and a worker-thread hop), and a listing has nothing to do meanwhile.
  const readNames = Effect.try({
    try: () => {
      try {
        return readdirSync(options.sessionsDir)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return []
        throw error
      }
    },
    catch: fromNode("list", options.sessionsDir)
  })

  /**
   * After this listing cleared the journal: each session it learnt is being written is announced
   * again (`+ <id>`) in the writers' next journal, while its writer lock is held. Index saves are
   * last-wins: another listing clearing at the same moment, which read an older journal, may save
   * after this one, and the `+` lines this one read went with the file it cleared — so no later
   * listing would hear them, and those sessions' appends under their locks (which write no line)
   * would go unlisted until the rotation came round. Announced again, the next listing reads them
   * whoever's index won (a cleared index reads the next journal from its start). A session whose
   * lock is free (let go, its `-` perhaps in the file cleared) is not announced and is checked now.
   * One `write(2)`, a few lines (the sessions held); a journal that cannot be written costs what a
   * lost `+` did before.
   */
  const announceWriting = (read: JournalRead): JournalRead => {
    const writing = new Set<string>()
    for (const sessionId of read.writing) {
      if (WriterLock.mayBeHeld(path.join(options.sessionsDir, `${sessionId}.jsonl`))) writing.add(sessionId)
    }
    if (writing.size > 0) {
      try {
        appendJournal(journalFile, [...writing].map((sessionId) => `+ ${sessionId}\n`).join(""))
      } catch {
        // As a journal line a writer cannot write: a stale warm listing, never a failed one.
      }
    }
    return { ...read, changed: new Set([...read.changed, ...read.writing]), writing }
  }

  /**
   * Every session's summary, most recently active first (`byRecentActivity`), bringing the index up
   * to date with the logs on disk. A log that cannot be read is reported as damaged, with the reason;
   * the others are listed all the same.
   */
  const refresh: Effect.Effect<{
    readonly sessions: ReadonlyArray<Session.SessionSummary>
    readonly damaged: ReadonlyArray<{ readonly sessionId: string; readonly failure: EventStoreFailure }>
  }, EventStoreFailure> = Effect.gen(function*() {
    const names = yield* readNames
    const ids: Array<string> = []
    for (const name of names) {
      if (!name.endsWith(".jsonl")) continue
      const id = name.slice(0, -".jsonl".length)
      if (Session.isValidId(id)) ids.push(id)
    }
    ids.sort()
    const index = yield* load
    const previous = entriesOf(index)
    // The journal is read before any log: a change it does not hold yet is announced after its
    // write, so the next listing sees it (and a full check's `stat`s come after this read).
    const { read: journal, same } = yield* Effect.try({
      try: () => {
        const read = readJournal(journalFile, index?.journal ?? { inode: -1, offset: 0 }, index?.writing ?? [])
        // A long journal read to its end with no writer holding a lock is cleared before any log is
        // checked: the lines it gains meanwhile are checked by this listing, and the index saved
        // records it cleared (the writers' next journal is read whole, see `clearJournal`).
        if (read.size < compactJournalAt || read.read.offset !== read.size) return read
        const cleared = clearJournal(journalFile, read.read)
        return { read: cleared.read.inode === 0 ? announceWriting(cleared.read) : cleared.read, same: read.same && cleared.same }
      },
      catch: (error) =>
        new EventStoreFailure({ reason: "unavailable", operation: "list", path: journalFile, detail: `could not read the index's journal: ${(error as NodeJS.ErrnoException).code ?? String(error)}` })
    })
    // Warm: only the logs the journal names, those being written and the names the index lacks.
    const full = index === undefined || !same
    const start = ids.length === 0 ? 0 : loadRotation() % ids.length
    const rotation = new Set<string>()
    for (let i = 0; i < Math.min(ids.length, verifiedPerListing); i++) rotation.add(ids[(start + i) % ids.length]!)
    const cursor = ids.length === 0 ? 0 : (start + verifiedPerListing) % ids.length
    // A known log whose size is what its entry covers is kept: a synchronous `stat` (the rotation's
    // 256 of them cost ~1 ms so, against tens through the platform's async one). Anything else —
    // grown, shrunk, gone, unreadable — takes the path below, which reports it as before.
    const sameSize = (sessionId: string, known: Entry) => {
      try {
        return statSync(path.join(options.sessionsDir, `${sessionId}.jsonl`), { throwIfNoEntry: false })?.size === known.covered
      } catch {
        return false
      }
    }
    // The known logs a warm listing checks, in one set: the journal's and the rotation's.
    const checked = new Set([...journal.changed, ...journal.writing, ...rotation])
    // The entries listed: the index's own, kept, and those rebuilt (`fresh`).
    const entries: Array<Entry> = []
    let fresh = false
    const damaged: Array<{ readonly sessionId: string; readonly failure: EventStoreFailure }> = []
    let changed = index?.version !== indexVersion || previous.size !== ids.length || journal.offset !== index?.journal?.offset || journal.inode !== index.journal.inode ||
      journal.id !== index.journal.id
    const unchecked: Array<string> = []
    for (const sessionId of ids) {
      const known = previous.get(sessionId)
      if (known !== undefined && ((!full && !checked.has(sessionId)) || sameSize(sessionId, known))) entries.push(known)
      else unchecked.push(sessionId)
    }
    yield* Effect.forEach(unchecked, (sessionId) =>
      Effect.gen(function*() {
        const known = previous.get(sessionId)
        const file = path.join(options.sessionsDir, `${sessionId}.jsonl`)
        // Opened once, and everything below reads that descriptor: a log looked at by name and
        // read by name again could be swapped in between for a named pipe, which blocks a read.
        yield* Effect.acquireUseRelease(openLog(sessionId, file), ({ fd, size }) =>
          Effect.gen(function*() {
            if (known !== undefined && known.covered === size) {
              entries.push(known)
              return
            }
            changed = true
            fresh = true
            const grown = known !== undefined && size > known.covered ? yield* extend(file, fd, known, size) : Option.none<Entry>()
            const entry = Option.isSome(grown) ? grown : yield* rebuild(sessionId, file, fd)
            if (Option.isSome(entry)) entries.push(entry.value)
          }), ({ fd }) => Effect.sync(() => closeSync(fd)))
      }).pipe(
        Effect.catchAll((failure) =>
          Effect.sync(() => {
            damaged.push({ sessionId, failure: withOperation(failure) })
          })
        )
      ), { concurrency: 8, discard: true })
    // Every entry of a version 5 index kept, none added: the index's own array is these entries,
    // and is listed as it stands when it is in order (a warm listing with nothing new is).
    const stored = index !== undefined && Array.isArray(index.sessions) ? index.sessions as ReadonlyArray<Entry> : undefined
    const whole = !fresh && stored !== undefined && stored.length === previous.size && entries.length === stored.length
    const listed = whole && inListingOrder(stored) ? stored : entries.sort(byEntryActivity)
    if (changed || listed !== stored) yield* save(listed, journal)
    if (!full && ids.length > verifiedPerListing) saveRotation(cursor)
    damaged.sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0))
    return { sessions: listed.map((entry) => withStoredTitle(entry.summary)), damaged }
  })

  return { refresh, note }
}
