/**
 * The writer lock of a JSONL session: one process at a time may append to (or repair) a log.
 *
 * Node has no `flock`, so the lock is built from the two atomic, create-if-absent operations a
 * file system offers (`link`, `mkdir`) and one rule. The lock of `<id>.jsonl` is the folder
 * `<id>.jsonl.lock/` (0700) holding generation files `<n>.json` (0600), each a {@link Holder.Holder}.
 * The holder is the one whose generation is the highest; `<n>.released` marks a generation given up.
 *
 * To acquire: read the highest generation `n`. If it is held by a live process, fail `SessionBusy`.
 * If it is free (released, or its holder is dead), publish `n + 1` with `link` (atomic, fails if it
 * exists: of two processes racing for `n + 1`, one wins). Then list the folder again: if a higher
 * generation exists, this one lost a race it could not see (it read an old `n`) and steps back.
 * The highest generation is never deleted (only the winner deletes lower ones), so a process that
 * read a stale `n` always finds the higher one in that check. Every holder record is written whole
 * to a temporary file before it is linked, so no one ever reads half a record.
 *
 * @since 0.1.0
 * @internal
 */
import { closeSync, constants, fsyncSync, linkSync, lstatSync, openSync, readdirSync, readSync, rmSync, unlinkSync, writeSync } from "node:fs"
import * as Directories from "../Directories.js"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { EventStoreFailure, type EventStoreFailureReason, SessionBusy } from "../../domain/Errors.js"
import * as PlainRelease from "../PlainRelease.js"
import * as Boots from "../writer/Boots.js"
import * as Holder from "../writer/Holder.js"
import * as PlainFiles from "./PlainFiles.js"

/** What acquiring found: the generation held, its record's nonce, and the dead holder it took over from, if any. */
export interface Acquired {
  readonly generation: number
  readonly nonce: string
  readonly takenOverFrom: Holder.Holder | undefined
}

const reasonOf = (error: unknown): EventStoreFailureReason => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (Directories.noRoom(code)) return "disk_full"
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") return "permission_denied"
  return "unavailable"
}

const lockFailure = (sessionId: string, path: string, error: unknown) =>
  new EventStoreFailure({
    reason: reasonOf(error),
    operation: "lock",
    sessionId,
    path,
    detail: `could not take the session's writer lock: ${describe(error)}`,
    cause: error
  })

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code

/** An error's code, in plain words where there are some (a read-only disk, a folder not writable). */
const describe = (error: unknown): string => {
  const code = codeOf(error)
  if (code === undefined) return String(error)
  const words = Directories.plainWords(code)
  return words === undefined ? code : `${words} (${code})`
}

/**
 * Creates a file for writing with mode 0600 whatever the umask: `O_EXCL`, so anything already under
 * its name — a link planted there too — fails `EEXIST` and is never written through.
 */
export const openNewFile = (file: string): number => openSync(file, "wx", 0o600)

/** Writes a whole file with mode 0600 whatever the umask (it is created here, with O_EXCL). */
export const writeNewFile = (file: string, text: string, sync = false) => {
  const fd = openNewFile(file)
  try {
    writeSync(fd, text)
    if (sync) fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * The generation a lock file's name gives (`<n>.json`, `<n>.released`), or undefined. Only a name
 * that is a safe integer written as this store writes it: `9007199254740993.json` read as `Number`
 * is 9007199254740992, whose record is never there, so every run retried until "the lock kept
 * changing", for good. Such a name is none of this store's and is ignored (a winner leaves it alone).
 */
const generationOf = (name: string, kind: "json" | "released"): number | undefined => {
  const match = /^(\d+)\.(json|released)$/.exec(name)
  if (match === null || match[2] !== kind) return undefined
  const n = Number(match[1])
  return Number.isSafeInteger(n) && String(n) === match[1] ? n : undefined
}

const generations = (names: ReadonlyArray<string>): Array<number> =>
  names.flatMap((name) => {
    const n = generationOf(name, "json")
    return n === undefined ? [] : [n]
  })

const removeQuietly = (file: string) => {
  try {
    unlinkSync(file)
  } catch {
    // already gone
  }
}

/**
 * Removes whatever has the name — a file, a link (never what it names) or a folder with what it
 * holds — as `rm -rf` does: `rm` looks at each entry with `lstat` and unlinks a link itself.
 */
const removeAnything = (path: string) => rmSync(path, { recursive: true, force: true })

/** The most a lock record may be: a holder's record is a line of JSON of a few hundred bytes. */
const maxRecordBytes = 64 * 1024

/**
 * A lock record's text, or undefined when it is not a regular file of at most `maxRecordBytes`
 * (read as no holder: this store writes records whole, as regular files). Read through
 * `PlainFiles` (no link followed, no blocking): a data dir can come with a repository, and
 * `readFileSync` of a record that was a link to `/dev/tty` or a named pipe blocked the main thread
 * for good (`/dev/zero`: read until memory ran out). Throws `ENOENT` when it is gone.
 */
const readRecord = (file: string): string | undefined => {
  try {
    return PlainFiles.withRegular(file, constants.O_RDONLY, (fd) => {
      const buffer = Buffer.alloc(maxRecordBytes + 1)
      const read = readSync(fd, buffer, 0, buffer.length, 0)
      return read > maxRecordBytes ? undefined : buffer.toString("utf8", 0, read)
    })
  } catch (error) {
    if (codeOf(error) === "ELOOP" || codeOf(error) === "EINVAL") return undefined
    throw error
  }
}

/** The lock folder of a log file. */
export const lockDirOf = (logFile: string) => `${logFile}.lock`

/**
 * Makes the lock folder if missing and checks it is one this store can own: a real folder (not a
 * link to one) of this user's. A data dir can come with a repository, and `repair`, which the CLI
 * recommends for a damaged log, takes the lock of a session no one started here: a lock "folder"
 * that was a link to a folder elsewhere had its `<n>.json` and `<n>.released` deleted and this
 * process's records written there. Every later operation names a file inside it, by name: none
 * follows a link (records are read `O_NOFOLLOW`, written `O_EXCL`, published by `link`, removed by
 * `unlink`, which removes a link itself).
 */
const ownFolder = (sessionId: string, dir: string): EventStoreFailure | undefined => {
  Directories.makeSync(dir, 0o700)
  const stat = lstatSync(dir)
  const uid = process.getuid?.()
  if (stat.isDirectory() && (uid === undefined || stat.uid === uid)) return undefined
  return new EventStoreFailure({
    reason: "corrupt",
    operation: "lock",
    sessionId,
    path: dir,
    detail: stat.isDirectory()
      ? "the session's lock folder belongs to another user; nothing was changed (remove it if it is not in use)"
      : "the session's lock folder is a link or not a folder; nothing was changed (remove it: this store makes it as a folder)"
  })
}

type Attempt =
  | { readonly _tag: "Held"; readonly generation: number; readonly nonce: string; readonly takenOverFrom: Holder.Holder | undefined }
  | { readonly _tag: "Busy"; readonly holder: Holder.Holder; readonly liveness: Holder.Liveness }
  | { readonly _tag: "Retry" }

/** One try at the lock; `Retry` when another process moved it meanwhile. Synchronous, and short. */
const attempt = (dir: string, me: Holder.Holder): Attempt => {
  const names = readdirSync(dir)
  const all = generations(names)
  const highest = all.length === 0 ? 0 : Math.max(...all)
  let takenOverFrom: Holder.Holder | undefined
  if (highest > 0) {
    let text: string | undefined
    try {
      text = readRecord(join(dir, `${highest}.json`))
    } catch (error) {
      if (codeOf(error) === "ENOENT") return { _tag: "Retry" }
      throw error
    }
    const holder = text === undefined ? undefined : Holder.parse(text)
    const released = names.includes(`${highest}.released`)
    // An unreadable record cannot be a live holder's: records are published whole.
    if (holder !== undefined && !released) {
      // A holder whose liveness cannot be known here (another host or container) is taken as alive;
      // one of a boot of this machine that is over (its own record says so: see `Boots`) is dead.
      const liveness = Holder.liveness(holder, Boots.recorded)
      if (liveness !== "dead") return { _tag: "Busy", holder, liveness }
      takenOverFrom = holder
    }
  }
  const mine = highest + 1
  const temporary = join(dir, `.${me.nonce}.tmp`)
  // Not flushed to disk: a record matters only while its process lives. After a power loss a record
  // the crash left empty or torn reads as no holder; a whole one names the boot before, which this
  // boot reads as dead when this machine recorded that boot as its own (`Boots`, flushed before any
  // lock of the boot is taken), else as "unknown" (another machine of this host name may hold it: see
  // `Holder.sameMachine`): the lock is busy until someone removes the folder, as `SessionBusy` says.
  // A flush would only make the second likelier. Another process sees the record through the page
  // cache as soon as it is linked. (An fsync here cost every first turn of a session milliseconds, many more on a busy disk.)
  writeNewFile(temporary, JSON.stringify(me))
  try {
    linkSync(temporary, join(dir, `${mine}.json`))
  } catch (error) {
    if (codeOf(error) === "EEXIST") return { _tag: "Retry" }
    throw error
  } finally {
    removeQuietly(temporary)
  }
  // A process that read an older generation may have published below us; one that won above us means we lost.
  const after = readdirSync(dir)
  if (generations(after).some((n) => n > mine)) {
    removeQuietly(join(dir, `${mine}.json`))
    return { _tag: "Retry" }
  }
  // (One publishing below us after this listing finds `mine` in its own check and removes its record.)
  for (const name of after) {
    const n = generationOf(name, "json") ?? generationOf(name, "released")
    if (n !== undefined && n < mine) removeQuietly(join(dir, name))
  }
  // The winner owns the folder, so no rewrite mark there is its own: one a dead holder's crash left,
  // or planted with a clone — "1" names a fresh folder's first holder. Removed, so nothing reads it
  // (the listing is read anyway: nothing costs more without one). Best effort: a planted folder
  // holding a folder not writable fails `rm`, and a mark left never counts (it names no holder's
  // nonce), so it must not cost the lock.
  if (after.includes(rewriteMarkName)) {
    try {
      removeAnything(join(dir, rewriteMarkName))
    } catch {
      // left: ignored by `rewriteUnderWay`, replaced (or refused, naming why) by the next `markRewrite`
    }
  }
  return { _tag: "Held", generation: mine, nonce: me.nonce, takenOverFrom }
}

/**
 * Whether some process may hold the writer lock of `logFile` now: its highest generation is not
 * released and its holder is not known to be dead (alive, or on another machine or container). Only
 * reads, never through a link; a lock folder that is missing, a link or unreadable is not held. A
 * look, not a lock: the answer may change as soon as it is given.
 */
export const mayBeHeld = (logFile: string): boolean => heldBy(logFile) !== undefined

/** The generation of the writer lock of `logFile` some process may hold now, and its holder (see {@link mayBeHeld}). */
const heldBy = (logFile: string): { readonly generation: number; readonly holder: Holder.Holder } | undefined => {
  const dir = lockDirOf(logFile)
  try {
    if (!lstatSync(dir).isDirectory()) return undefined
    const names = readdirSync(dir)
    const all = generations(names)
    if (all.length === 0) return undefined
    const highest = Math.max(...all)
    if (names.includes(`${highest}.released`)) return undefined
    const text = readRecord(join(dir, `${highest}.json`))
    const holder = text === undefined ? undefined : Holder.parse(text)
    return holder !== undefined && Holder.liveness(holder, Boots.recorded) !== "dead" ? { generation: highest, holder } : undefined
  } catch {
    return undefined
  }
}

/** Where a rewrite of a log (`repair`) marks, in its lock folder, that it is swapping a new log in. */
const rewriteMarkName = "rewrite"
const rewriteMarkOf = (logFile: string) => join(lockDirOf(logFile), rewriteMarkName)

/**
 * A mark's text: the holder's generation and its record's nonce. Not the generation alone: those are
 * predictable (1 for a fresh lock folder), and a mark naming only one counted for whoever held it.
 */
const markText = (held: Pick<Acquired, "generation" | "nonce">) => `${held.generation} ${held.nonce}`

/**
 * For the scope, marks that the holder `held` of the writer lock of `logFile` (the caller) is
 * rewriting the log: an append made without the lock meanwhile is taken back (see
 * {@link rewriteUnderWay}). A mark left by a crash names a holder that no longer holds and is
 * ignored, then removed by the next one to take the lock.
 */
export const markRewrite = (logFile: string, held: Pick<Acquired, "generation" | "nonce">): Effect.Effect<void, unknown, Scope.Scope> => {
  const mark = rewriteMarkOf(logFile)
  return PlainRelease.acquireRelease(
    Effect.try(() => {
      // Whatever has the name is not this holder's: a file, link or folder planted since it took
      // the lock. Removed (a folder made this fail EEXIST, every repair of the session with it),
      // never followed.
      removeAnything(mark)
      writeNewFile(mark, markText(held))
    }),
    () => Effect.sync(() => removeQuietly(mark))
  )
}

/**
 * Whether a rewrite of `logFile` is under way: its mark names the generation of the writer lock a
 * live process holds and that holder's nonce. One open of a missing file when none is (an append
 * without the lock pays it).
 */
export const rewriteUnderWay = (logFile: string): boolean => {
  let text: string | undefined
  try {
    text = readRecord(rewriteMarkOf(logFile))
  } catch {
    return false
  }
  if (text === undefined) return false
  const held = heldBy(logFile)
  return held !== undefined && text === markText({ generation: held.generation, nonce: held.holder.nonce })
}

/**
 * Who holds the lock, for `SessionBusy`. A holder this process cannot see (another machine, a boot before this one, or a
 * container of this machine in another pid namespace) may be long gone, and this lock has no
 * expiry: the text says what to remove then — by its name in the data dir, never a runtime path
 * (`SessionBusy` goes out on the wire).
 */
const busyHolder = (sessionId: string, holder: Holder.Holder, liveness: Holder.Liveness) =>
  liveness === "alive"
    ? Holder.describe(holder)
    : `${Holder.describe(holder)}, which this process cannot see (another machine or container, or this machine before a reboot); if that process is gone, remove the folder sessions/${sessionId}.jsonl.lock in the data dir`

/**
 * Holds the writer lock of `logFile` for the scope: fails `SessionBusy` naming the live holder, or
 * takes over a lock whose holder is dead. Closing the scope marks the generation released.
 */
export const acquire = (sessionId: string, logFile: string): Effect.Effect<Acquired, SessionBusy | EventStoreFailure, Scope.Scope> => {
  const dir = lockDirOf(logFile)
  // Its release writes a file and reads nothing of the acquiring fiber: a plain finalizer (see `PlainRelease`).
  return PlainRelease.acquireRelease(
    Effect.suspend((): Effect.Effect<Acquired, SessionBusy | EventStoreFailure> => {
      const me = Holder.current()
      // Before any record of this boot can outlive it: so that after a crash and a reboot this
      // machine knows the boot as its own (once per process; best effort). Not in a container: its
      // records would name its host's boots, and count for nothing there (see `Holder.trustsBootRecords`).
      if (Holder.ownBootRecordsCount()) Boots.recordOwn(me.bootId, me.hostname)
      try {
        const refused = ownFolder(sessionId, dir)
        if (refused !== undefined) return Effect.fail(refused)
        // A few rounds are plenty: each Retry means another process made progress.
        for (let round = 0; round < 100; round++) {
          const result = attempt(dir, me)
          if (result._tag === "Busy") return Effect.fail(new SessionBusy({ sessionId, holder: busyHolder(sessionId, result.holder, result.liveness) }))
          if (result._tag === "Held") return Effect.succeed({ generation: result.generation, nonce: result.nonce, takenOverFrom: result.takenOverFrom })
        }
        return Effect.fail(lockFailure(sessionId, dir, "the lock kept changing"))
      } catch (error) {
        return Effect.fail(lockFailure(sessionId, dir, error))
      }
    }),
    ({ generation }) =>
      Effect.sync(() => {
        try {
          writeNewFile(join(dir, `${generation}.released`), "")
        } catch {
          // The folder is gone or unwritable: the holder's death will free the lock instead.
        }
      })
  ).pipe(
    Effect.tap(({ takenOverFrom }) =>
      takenOverFrom === undefined
        ? Effect.void
        : Effect.logWarning(`effect-agent: took over the writer lock of session ${sessionId} left by ${Holder.describe(takenOverFrom)}, which is gone`)
    )
  )
}
