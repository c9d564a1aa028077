/**
 * Workspace checkpoints kept in the store's blob area (the `WorkspaceCheckpoints` port).
 *
 * - `write_file` / `edit_file`: the file's content before the call is read (when it is inside the
 *   session's cwd) and, if the call changed it, put in the blob area (by SHA-256: deduplicated).
 * - `shell` at any risk but `read` (see `CommandRisk`): the files of cwd are scanned before and after
 *   the command — `.git/` and what `.gitignore` files ignore left out (gitignore semantics by the
 *   `ignore` package), links not followed — within caps (`maxFiles`, `maxBytes` of content held
 *   while the command runs). Files are compared by size, mtime, ctime, inode and mode, then by hash;
 *   the pre-images of changed and deleted files are put in the blob area, created files are noted.
 *   Past a cap the snapshot says it is `incomplete`, and a rewind says so.
 *
 * A restore writes only inside cwd: every path is relative, without `..`, with no link on the way
 * (a link in place of a folder is refused, `unsafe_path`); a file is written through a handle opened
 * without following links (`SafeFile`), so a link planted in place of a file is never written
 * through — it is a change made outside the agent, refused unless forced, then removed and replaced;
 * so is a file with a second name (a hard link, maybe outside cwd). Modes lose special bits and what
 * the umask withholds. One file's content is held at a time: current files are hashed as read, each
 * pre-image read when its file is written.
 *
 * A command's snapshot sees everyone's writes: a file tool's write in this process meanwhile (a
 * sibling subagent's) is left to that call's record; another command's in the same cwd is told from
 * this one's by the scans both took (a change between two scans while no other command ran is not
 * theirs; the others are named as uncertain); anyone else's (an editor) is credited to the command.
 *
 * @since 0.10.0
 */
import { createHash } from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import ignore, { type Ignore } from "ignore"
import type { FileChange, FileImage } from "../../domain/AgentEvent.js"
import { EventStoreFailure, RewindRefused } from "../../domain/Errors.js"
import { asStoreFailure, BlobStore } from "../../services/BlobStore.js"
import type { PreparedCall } from "../../services/ToolRouter.js"
import { type Capture, type Restore, type Restored, WorkspaceCheckpoints } from "../../services/WorkspaceCheckpoints.js"
import * as Sha256 from "../blobs/Sha256.js"
import * as RegularFiles from "../RegularFiles.js"
import * as Paths from "./Paths.js"
import * as PackageHooks from "./PackageHooks.js"
import * as RunsLater from "./RunsLater.js"
import * as SafeFile from "./SafeFile.js"

/** Caps of a shell command's snapshot. */
export interface Options {
  /** Most files a snapshot looks at (default 10,000); past it the snapshot is incomplete. */
  readonly maxFiles?: number
  /** Most bytes of content a snapshot holds while the command runs (default 50 MiB); files past it have no pre-image. */
  readonly maxBytes?: number
}

/** The default caps. */
export const defaults = { maxFiles: 10_000, maxBytes: 50 * 1024 * 1024 } as const

/**
 * What a snapshot applies of a repository's `.gitignore` files. Every entry the scan meets is tested
 * against every rule of its folder's and its parents' files, on the main thread (the `ignore`
 * package compiles a regular expression per rule): a clone's `.gitignore` of 200,000 rules (3.8 MB)
 * made `touch made.txt` in a folder of 100 files take 48 s and 870 MB, 175 ms of the event loop per
 * entry tested, and before and after every command. So a `.gitignore` is applied only while the
 * rules in force stay within `ignoreRulesInForce` and those read by the scan within
 * `ignoreRulesRead` (a file over `ignoreFileBytes` is not read); one past them is not applied,
 * which only makes the snapshot look at more files, within its caps. Real ones have hundreds.
 */
export const ignoreLimits = { ignoreFileBytes: 64 * 1024, ignoreRulesInForce: 1_000, ignoreRulesRead: 10_000 } as const

/** The rules of a `.gitignore`: its lines but blank ones and comments (what `ignore` compiles). */
const ruleCount = (text: string) => text.split(/\r?\n/).filter((line) => line.trim() !== "" && !line.startsWith("#")).length

/** A file as a scan saw it; `bytes` when the scan kept its content. */
interface Seen {
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly ino: number
  readonly mode: number
  readonly bytes?: Uint8Array | undefined
}

interface Scan {
  readonly files: Map<string, Seen>
  incomplete: string | undefined
}

const seenOf = (info: import("node:fs").Stats, bytes?: Uint8Array): Seen => ({
  size: info.size,
  mtimeMs: info.mtimeMs,
  ctimeMs: info.ctimeMs,
  ino: info.ino,
  mode: info.mode & 0o7777,
  bytes
})

const sameStat = (a: Seen, b: Seen) => a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.mode === b.mode

/** Reads a regular file without following a link; undefined when it is gone, not a regular file, or over `maxBytes`. */
const readRegular = (file: string, maxBytes?: number): Promise<Uint8Array | undefined> =>
  RegularFiles.readRegular(file, maxBytes).then((bytes) => new Uint8Array(bytes), () => undefined)

/** The SHA-256 of a regular file, read in chunks (a file of any size), without following a link; undefined when it is gone or not a regular file. */
const hashRegular = (file: string): Promise<string | undefined> =>
  RegularFiles.withRegular(file, async (handle) => {
    const hash = createHash("sha256")
    const buffer = Buffer.allocUnsafe(1024 * 1024)
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null)
      if (bytesRead === 0) return hash.digest("hex")
      hash.update(buffer.subarray(0, bytesRead))
    }
  }).catch(() => undefined)

/**
 * The files of `root` (a real path), relative with `/`: `.git/` and gitignored paths left out, links
 * and special files skipped. With `keep`, contents are read and held up to the byte cap.
 */
const scan = async (root: string, caps: Required<Options>, keep: boolean): Promise<Scan> => {
  const result: Scan = { files: new Map(), incomplete: undefined }
  let held = 0
  const rules: Array<{ readonly base: string; readonly ig: Ignore; readonly count: number }> = []
  let inForce = 0
  let read = 0
  const ignored = (relative: string, isDir: boolean) =>
    rules.some(({ base, ig }) => {
      const inside = base === "" ? relative : relative.slice(base.length + 1)
      return ig.ignores(isDir ? `${inside}/` : inside)
    })
  const visit = async (dir: string, relativeDir: string): Promise<void> => {
    const gitignore = await readRegular(NodePath.join(dir, ".gitignore"), ignoreLimits.ignoreFileBytes).catch(() => undefined)
    const text = gitignore === undefined ? undefined : new TextDecoder().decode(gitignore)
    const count = text === undefined ? 0 : ruleCount(text)
    const pushed = text !== undefined && inForce + count <= ignoreLimits.ignoreRulesInForce && read + count <= ignoreLimits.ignoreRulesRead
    if (pushed) {
      rules.push({ base: relativeDir, ig: ignore().add(text), count })
      inForce += count
      read += count
    }
    try {
      const listed = await NodeFs.readdir(dir, { withFileTypes: true, encoding: "buffer" }).catch(() => [])
      const entries: Array<{ readonly name: string; readonly entry: (typeof listed)[number] }> = []
      for (const entry of listed) {
        const name = Paths.nameOf(entry.name)
        // Read as text, such a name (a byte 0xff) is U+FFFD: another file's name, or none. Left out, and said.
        if (name === undefined) result.incomplete ??= `a name that is not UTF-8 (${Paths.escapedName(Buffer.concat([Buffer.from(relativeDir === "" ? "" : `${relativeDir}/`), entry.name]))}) is not in the snapshot`
        else entries.push({ name, entry })
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      for (const { name, entry } of entries) {
        if (result.incomplete !== undefined && result.files.size >= caps.maxFiles) return
        const relative = relativeDir === "" ? name : `${relativeDir}/${name}`
        if (entry.isDirectory()) {
          if (name === ".git" || ignored(relative, true)) continue
          await visit(NodePath.join(dir, name), relative)
        } else if (entry.isFile()) {
          if (ignored(relative, false)) continue
          if (result.files.size >= caps.maxFiles) {
            result.incomplete = `more than ${caps.maxFiles} files in the working directory`
            return
          }
          const file = NodePath.join(dir, name)
          const info = await NodeFs.lstat(file).catch(() => undefined)
          if (info === undefined || !info.isFile()) continue
          let bytes: Uint8Array | undefined
          if (keep) {
            if (held + info.size > caps.maxBytes) result.incomplete ??= `more than ${caps.maxBytes} bytes in the working directory`
            else {
              // Bounded by what is left of the cap: a file that grew since its stat has no pre-image (a change to it is then incomplete).
              bytes = await readRegular(file, caps.maxBytes - held)
              held += bytes?.byteLength ?? 0
            }
          }
          result.files.set(relative, seenOf(info, bytes))
        }
      }
    } finally {
      if (pushed) inForce -= rules.pop()!.count
    }
  }
  await visit(root, "")
  return result
}

/** A pre-image the plan names that the blob area does not hold. */
const notKept = (blob: string, cause?: unknown) =>
  new EventStoreFailure({ reason: "unknown", operation: "read", detail: `the pre-image ${blob} is not in the blob area`, cause })

/** Builds the checkpoints; needs the store's blob area. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const caps = { maxFiles: options.maxFiles ?? defaults.maxFiles, maxBytes: options.maxBytes ?? defaults.maxBytes }
    const put = (bytes: Uint8Array) => blobs.put(bytes).pipe(Effect.mapError(asStoreFailure))

    /**
     * A current file a rewind replaces, read within the cap (one that grew past it since its stat,
     * or cannot be read, is a typed refusal: never replaced without its content kept).
     */
    const readCurrent = (full: string, path: string, done: string) =>
      Effect.tryPromise({
        try: () => RegularFiles.readRegular(full, caps.maxBytes).then((bytes) => new Uint8Array(bytes)),
        catch: (error) => {
          const code = (error as { readonly code?: unknown }).code
          return code === "EFBIG"
            ? new RewindRefused({ reason: "too_large", detail: `a file grew past the ${caps.maxBytes} bytes a rewind keeps of a file it replaces; ${done}`, files: [path] })
            : new RewindRefused({ reason: "io_error", detail: `a file could not be read to keep it (${typeof code === "string" ? code : "unreadable"}); ${done}`, files: [path] })
        }
      })

    /** A pre-image in the blob area; a failure to put it makes the change unknown, not the call failed. */
    const imageOf = (seen: Seen): Effect.Effect<FileImage | undefined> =>
      seen.bytes === undefined
        ? Effect.succeed(undefined)
        : put(seen.bytes).pipe(
          Effect.map((blob) => ({ blob, mode: seen.mode })),
          Effect.catchAll((failure) => Effect.as(Effect.logWarning("could not keep a file's pre-image", failure), undefined))
        )

    /** What changed between two scans; `incomplete` when a change could not be known. */
    const compare = (before: Scan, after: Scan, root: string): Effect.Effect<Capture> =>
      Effect.gen(function*() {
        const changes: Array<FileChange> = []
        let incomplete = before.incomplete ?? after.incomplete
        const paths = [...new Set([...before.files.keys(), ...after.files.keys()])].sort()
        for (const path of paths) {
          const was = before.files.get(path)
          const now = after.files.get(path)
          if (was !== undefined && now !== undefined && sameStat(was, now)) continue
          const hashNow = () => now === undefined ? Effect.succeed(undefined) : Effect.promise(() => hashRegular(NodePath.join(root, path)))
          if (was === undefined) {
            const afterHash = yield* hashNow()
            if (afterHash !== undefined) changes.push({ path, after: afterHash })
            continue
          }
          // A file changed past the byte cap has no pre-image: not hashed (a command's 10 GB output was read whole to no end).
          if (was.bytes === undefined) {
            incomplete ??= `${path} changed past the snapshot's byte cap`
            continue
          }
          const afterHash = yield* hashNow()
          if (afterHash === Sha256.of(was.bytes) && now?.mode === was.mode) continue
          const image = yield* imageOf(was)
          if (image === undefined) {
            incomplete ??= `the pre-image of ${path} could not be kept`
            continue
          }
          changes.push(afterHash === undefined ? { path, before: image } : { path, before: image, after: afterHash })
        }
        return { changes, ...(incomplete === undefined ? {} : { incomplete }) }
      })

    // Who else writes in a cwd while a command's snapshot runs, in this process: sibling subagents
    // share the session's cwd. Their file tools' writes are theirs (recorded in their own session),
    // not the command's; another command's cannot be told apart from this one's, so it is said.
    const writers = new Map<string, { readonly commands: Set<CommandWatch>; readonly files: Map<string, number> }>()
    const writersOf = (root: string) => {
      let found = writers.get(root)
      if (found === undefined) writers.set(root, found = { commands: new Set(), files: new Map() })
      return found
    }
    const forget = (root: string) => {
      const found = writers.get(root)
      if (found !== undefined && found.commands.size === 0 && found.files.size === 0) writers.delete(root)
    }
    /** A file tool writes `path` in `root` until the effect it returns runs. */
    const fileWriting = (root: string, path: string) => {
      const { commands, files } = writersOf(root)
      files.set(path, (files.get(path) ?? 0) + 1)
      for (const command of commands) command.byFileTools.add(path)
      return Effect.sync(() => {
        const left = (files.get(path) ?? 1) - 1
        if (left === 0) files.delete(path)
        else files.set(path, left)
        forget(root)
      })
    }
    /** A command's snapshot runs in `root`: what else writes there meanwhile is noted on it until the effect it returns runs. */
    const commandRunning = (root: string) => {
      const { commands, files } = writersOf(root)
      const watch: CommandWatch = { byFileTools: new Set(files.keys()), registered: tick(), others: new Set(), nested: new Map(), scans: [] }
      for (const other of commands) {
        other.others.add(watch)
        watch.others.add(other)
      }
      // A command in a folder inside this one's, or around it (a subagent's in `dir/sub`): they share
      // that subtree, whose files are uncertain for both while both run (their scans do not compare).
      for (const [at, { commands: there }] of writers) {
        const inside = at.startsWith(`${root}/`) ? `${at.slice(root.length + 1)}/` : root.startsWith(`${at}/`) ? "" : undefined
        const around = inside === undefined ? undefined : inside === "" ? `${root.slice(at.length + 1)}/` : ""
        if (inside === undefined || around === undefined) continue
        for (const other of there) {
          watch.nested.set(other, inside)
          other.nested.set(watch, around)
        }
      }
      commands.add(watch)
      return { watch, done: Effect.sync(() => {
        watch.done = tick()
        commands.delete(watch)
        forget(root)
      }) }
    }
    /** A command's scan of `root`, told to the other commands there: the points between which their changes are placed. */
    const scanned = (root: string, watch: CommandWatch, which: "before" | "after", scanning: () => Promise<Scan>) =>
      Effect.promise(async () => {
        const start = tick()
        if (which === "after") watch.afterStart = start
        const result = await scanning()
        const end = tick()
        if (which === "before") watch.beforeEnd = end
        const others = [...(writers.get(root)?.commands ?? [])].filter((other) => other !== watch)
        // Only while commands overlap (rare): the other commands keep the file stats, not the contents.
        if (others.length > 0) {
          const point: Point = { start, end, files: new Map([...result.files].map(([path, seen]) => [path, { ...seen, bytes: undefined }])) }
          for (const other of others) keepScan(other.scans, point)
        }
        return { scan: result, point: { start, end, files: result.files } satisfies Point }
      })

    /** One file a file tool writes: its content before, then what changed. */
    const watchFile = (call: PreparedCall, cwd: string) =>
      Effect.gen(function*() {
        const target = call.paths[0]
        if (target === undefined || !target.insideCwd) return undefined
        const root = yield* Paths.realCwd(cwd)
        const relative = NodePath.relative(root, target.resolved)
        if (relative === "" || relative.startsWith("..") || NodePath.isAbsolute(relative)) return undefined
        const path = relative.split(NodePath.sep).join("/")
        const one = (keep: boolean) =>
          Effect.promise(async (): Promise<Scan> => {
            const info = await NodeFs.lstat(target.resolved).catch(() => undefined)
            const files = new Map<string, Seen>()
            if (info?.isFile() === true) {
              const bytes = keep && info.size <= caps.maxBytes ? await readRegular(target.resolved, caps.maxBytes) : undefined
              files.set(path, seenOf(info, bytes))
            }
            return { files, incomplete: undefined }
          })
        const done = fileWriting(root, path)
        const before = yield* one(true).pipe(Effect.onError(() => done))
        return Effect.flatMap(one(false), (after) => compare(before, after, root)).pipe(Effect.ensuring(done))
      })

    /** A shell command that can write: cwd before, then what changed. */
    const watchTree = (cwd: string) =>
      Effect.gen(function*() {
        const root = yield* Paths.realCwd(cwd)
        const { done, watch } = commandRunning(root)
        const before = yield* scanned(root, watch, "before", () => scan(root, caps, true)).pipe(Effect.onError(() => done))
        return scanned(root, watch, "after", () => scan(root, caps, false)).pipe(
          Effect.ensuring(done),
          Effect.flatMap((after) =>
            Effect.map(compare(before.scan, after.scan, root), (capture) => creditedToCommand(capture, watch, sharedChanges(capture, watch, before.point, after.point)))
          )
        )
      })

    const watch = (call: PreparedCall, cwd: string): Effect.Effect<Effect.Effect<Capture> | undefined> => {
      if (call.tool === "write_file" || call.tool === "edit_file") return watchFile(call, cwd)
      if (call.tool === "shell" && call.risk !== "read") return watchTree(cwd)
      return Effect.succeed(undefined)
    }

    const restore = (input: { readonly cwd: string; readonly files: ReadonlyArray<Restore>; readonly force: boolean }) =>
      Effect.gen(function*() {
        const root = yield* Paths.realCwd(input.cwd)
        const unsafe: Array<string> = []
        const large: Array<string> = []
        const changedOutside: Array<string> = []
        const checked: Array<{ readonly restore: Restore; readonly full: string; readonly current: Current }> = []
        // What the file tools protect, read as they read it: the protected folders by name, and what
        // RunsLater says runs later (the repository's hooks folders and included configs, a home
        // folder's start-up files when cwd holds it).
        const runsLater = {
          home: yield* Effect.promise(() => RunsLater.homeHeldBy(root, process.env.PATH)),
          hooks: yield* Effect.promise(() => RunsLater.hooksFoldersOf(root))
        }
        const fenced = input.files.filter((restore) => {
          const full = safePath(root, restore.path)
          return RunsLater.inProtectedFolder(restore.path) || (full !== undefined && RunsLater.reasonFor(runsLater, full) !== undefined)
        }).map((restore) => restore.path)
        if (fenced.length > 0) {
          return yield* new RewindRefused({
            reason: "unsafe_path",
            detail: "these paths are where files decide what later runs do (.git/, .effect-agent/, .husky/, .vscode/, .idea/, git's hooks " +
              "folder or an included config, a hook manager's config such as .pre-commit-config.yaml, a home folder's start-up files), " +
              "which a rewind never writes; nothing was changed",
            files: fenced
          })
        }
        for (const restore of input.files) {
          const full = safePath(root, restore.path)
          const current = full === undefined ? undefined : yield* Effect.promise(() => currentOf(root, full, caps.maxBytes))
          if (full === undefined || current === undefined || current.kind === "unsafe") {
            unsafe.push(restore.path)
            continue
          }
          if (current.kind === "large") {
            large.push(restore.path)
            continue
          }
          const now = current.kind === "file" ? current.hash : current.kind === "absent" ? undefined : current.kind
          if (now !== restore.expected) changedOutside.push(restore.path)
          // A folder in place of a file is never removed: a rewind does not delete trees.
          if (current.kind === "directory" && restore.target !== undefined) unsafe.push(restore.path)
          else checked.push({ restore, full, current })
        }
        if (unsafe.length > 0) {
          return yield* new RewindRefused({ reason: "unsafe_path", detail: "these paths lead outside the working directory or through a link or folder; nothing was changed", files: unsafe })
        }
        // What a rewind replaces it keeps (so that the rewind can be undone), read whole: a file past
        // the cap a file tool's pre-image has is neither hashed nor read (a 2.2 GiB file was read into
        // memory, failed, and was replaced with no pre-image kept). Forcing does not help: nothing could keep it.
        if (large.length > 0) {
          return yield* new RewindRefused({
            reason: "too_large",
            detail: `these files are over the ${caps.maxBytes} bytes a rewind keeps of a file it replaces; move or remove them, then rewind again; nothing was changed`,
            files: large
          })
        }
        if (changedOutside.length > 0 && !input.force) {
          return yield* new RewindRefused({
            reason: "changed_outside",
            detail: "these files were changed outside the agent since it last wrote them; rewind with force to overwrite them",
            files: changedOutside
          })
        }
        // Every pre-image needed is known to be there before any file is touched; each is read (and
        // checked against its hash) only when its file is written: one file's content in memory at a time.
        for (const blob of new Set(checked.flatMap(({ restore }) => restore.target === undefined ? [] : [restore.target.blob]))) {
          if (!(yield* blobs.has(blob).pipe(Effect.mapError(asStoreFailure)))) return yield* Effect.fail(notKept(blob))
        }
        // A package.json to which the rewind would give git hook runners' keys with other settings
        // (`PackageHooks`): the file tools ask before such a write, so a rewind never makes it; one
        // that only takes keys away is restored (review 57b). Both contents are read here,
        // for package.json files only (small), before any file is touched.
        const text = (bytes: Uint8Array | undefined) => bytes === undefined ? undefined : new TextDecoder().decode(bytes)
        const hooked: Array<string> = []
        for (const { current, full, restore } of checked) {
          if (!PackageHooks.isPackageJson(restore.path)) continue
          const now = current.kind === "file" ? yield* readCurrent(full, restore.path, "nothing was changed") : undefined
          const then = restore.target === undefined ? undefined : yield* blobs.get(restore.target.blob).pipe(
            Effect.mapError((e) => e._tag === "BlobNotFound" ? notKept(restore.target!.blob, e) : asStoreFailure(e))
          )
          if (PackageHooks.keysGiven(text(now), text(then)).length > 0) hooked.push(restore.path)
        }
        if (hooked.length > 0) {
          return yield* new RewindRefused({
            reason: "unsafe_path",
            detail: "these package.json files would get other keys git hook runners read (lint-staged, simple-git-hooks, husky, pre-commit, …), " +
              "which run commands at your next commit or install outside the sandbox; a rewind never writes them; nothing was changed",
            files: hooked
          })
        }
        const umask = yield* Effect.promise(umaskOfProcess)
        const changes: Array<FileChange> = []
        for (const { current, full, restore } of checked) {
          const target = restore.target
          const mode = target === undefined ? 0 : restoredMode(target.mode, umask)
          const same = target === undefined ? current.kind === "absent" : current.kind === "file" && current.hash === target.blob && current.mode === mode
          if (same) continue
          // What is overwritten, read now (one file at a time) and kept so that the rewind can be rewound.
          const overwritten = current.kind === "file"
            ? yield* readCurrent(full, restore.path, `${changes.length === 1 ? "the file before it was" : `the ${changes.length} files before it were`} restored, the others not`)
            : undefined
          const before = overwritten === undefined || current.kind !== "file" ? undefined : { blob: yield* put(overwritten), mode: current.mode }
          const content = target === undefined ? undefined : yield* blobs.get(target.blob).pipe(
            Effect.mapError((e) => e._tag === "BlobNotFound" ? notKept(target.blob, e) : asStoreFailure(e))
          )
          yield* Effect.tryPromise({
            try: async () => {
              // A file with other names (a hard link) is never written through: its name here is removed, a new file made.
              if (current.kind !== "absent" && (current.kind !== "file" || target === undefined)) await SafeFile.removeNow(full, "file")
              if (content !== undefined) await Effect.runPromise(SafeFile.writeFile(full, content, { singleName: true, mode }))
              else await removeEmptyFolders(root, NodePath.dirname(full))
            },
            catch: () =>
              new RewindRefused({
                reason: "io_error",
                detail: `a file could not be written; ${changes.length === 1 ? "the file before it was" : `the ${changes.length} files before it were`} restored, the others not`,
                files: [restore.path]
              })
          })
          changes.push({
            path: restore.path,
            ...(before === undefined ? {} : { before }),
            ...(target === undefined ? {} : { after: target.blob })
          })
        }
        const forced = input.force ? changedOutside : []
        return { changes, forced } satisfies Restored
      })

    return WorkspaceCheckpoints.of({ watch, restore })
  })

/**
 * A logical clock of this process's scans: each scan's start and end, and when a command's snapshot
 * began and ended, get a tick, so that which command could have written between two scans is known
 * by order alone, never by time.
 */
let clock = 0
const tick = () => ++clock

/** A scan of a cwd, between two ticks (a file was read somewhere between them). */
interface Point {
  readonly start: number
  readonly end: number
  readonly files: ReadonlyMap<string, Seen>
}

/** What else wrote in a command's cwd while its snapshot ran (in this process). */
interface CommandWatch {
  /** The files file tools (a sibling subagent's) wrote meanwhile. */
  readonly byFileTools: Set<string>
  readonly registered: number
  /** Its first scan's end: its command starts after it. */
  beforeEnd?: number
  /** Its second scan's start: its command (its process tree, in the sandbox) has ended before it. */
  afterStart?: number
  /** When its snapshot was let go. */
  done?: number
  /** The other commands whose snapshots ran in the same cwd at some time while this one's did. */
  readonly others: Set<CommandWatch>
  /** The scans they took meanwhile (file stats only). */
  readonly scans: Array<Point>
  /** The commands whose snapshots ran in a folder inside or around this one's meanwhile: the subtree both see (relative to this cwd, `""` all of it). */
  readonly nested: Map<CommandWatch, string>
}

/**
 * Most scans of the others a command keeps (each a stat map of up to `maxFiles` entries) while it
 * runs: a long command under a loop of short ones kept every one of their scans until it ended.
 */
export const maxKeptScans = 32

/**
 * Keeps `point` among a command's scans of the others, at most `cap`: past it every second one of
 * the kept is let go, first and last kept. Fewer points only place a change between farther scans,
 * where another command is likelier to have run: more files are named uncertain, never fewer.
 *
 * @internal
 */
export const keepScan = <P>(scans: Array<P>, point: P, cap = maxKeptScans): void => {
  scans.push(point)
  if (scans.length <= Math.max(2, cap)) return
  const kept = scans.filter((_, i) => i % 2 === 0 || i === scans.length - 1)
  scans.splice(0, scans.length, ...kept)
}

/** When another command could have written: after its first scan, before its second (a snapshot that never scanned: from its start to its end). */
const writesBetween = (other: CommandWatch): readonly [number, number] | undefined => {
  const from = other.beforeEnd ?? (other.done === undefined ? undefined : other.registered)
  return from === undefined ? undefined : [from, other.afterStart ?? other.done ?? Number.POSITIVE_INFINITY]
}

/**
 * The files of a command's capture that another command running in the same cwd could have written:
 * its two scans and the scans the others took meanwhile place each file's changes between two of
 * them (by stats, as the snapshot compares files); a change placed where no other command ran is not
 * theirs (whether it is this command's or another program's is what the snapshot never knows). With
 * no other command, none.
 */
const sharedChanges = (capture: Capture, watch: CommandWatch, before: Point, after: Point): ReadonlyArray<string> => {
  const subtrees = [...watch.nested].filter(([other]) => {
    const window = writesBetween(other)
    return window !== undefined && window[0] < after.end && before.start < window[1]
  }).map(([, under]) => under)
  const inSubtree = capture.changes.map((change) => change.path).filter((path) => subtrees.some((under) => path.startsWith(under)))
  const windows = [...watch.others].map(writesBetween).filter((w) => w !== undefined)
  if (windows.length === 0) return inSubtree
  return [...new Set([...inSubtree, ...sameFolder(capture, windows, watch, before, after)])].sort()
}

/** Of {@link sharedChanges}: the others in the very same cwd, placed by their scans. */
const sameFolder = (capture: Capture, windows: ReadonlyArray<readonly [number, number]>, watch: CommandWatch, before: Point, after: Point): ReadonlyArray<string> => {
  const points = [before, ...watch.scans.filter((p) => p.start > before.end && p.end < after.start).sort((a, b) => a.end - b.end), after]
  const shared = (from: Point, to: Point) => {
    const start = Math.min(from.start, to.start)
    const end = Math.max(from.end, to.end)
    return windows.some(([writesFrom, writesUntil]) => writesFrom < end && start < writesUntil)
  }
  const differ = (a: Seen | undefined, b: Seen | undefined) => a === undefined || b === undefined ? a !== b : !sameStat(a, b)
  return capture.changes.map((change) => change.path).filter((path) =>
    points.slice(1).some((to, i) => differ(points[i]!.files.get(path), to.files.get(path)) && shared(points[i]!, to))
  )
}

/** At most three paths, and how many more. */
const named = (paths: ReadonlyArray<string>) => `${paths.slice(0, 3).join(", ")}${paths.length > 3 ? ` and ${paths.length - 3} more` : ""}`

/**
 * A command's capture without the files a file tool wrote while it ran (they are that call's
 * change, in its own session: a rewind of the command must not undo them), saying so, and naming
 * the files another command in the same folder may have written meanwhile (`shared`: their changes
 * cannot be told from this one's; the others' are this command's as any other change is).
 */
const creditedToCommand = (capture: Capture, watch: CommandWatch, shared: ReadonlyArray<string>): Capture => {
  const others = capture.changes.filter((change) => watch.byFileTools.has(change.path)).map((change) => change.path)
  const reasons = [
    ...(others.length > 0 ? [`another call wrote ${named(others)} while this command ran: recorded as that call's change, not this command's`] : []),
    ...(shared.some((path) => !watch.byFileTools.has(path))
      ? [`another command ran in this working directory at the same time: ${named(shared.filter((path) => !watch.byFileTools.has(path)))} changed while it ran, and may be its change recorded here as this command's`]
      : [])
  ]
  if (reasons.length === 0) return capture
  const why = reasons.join("; ")
  return { changes: capture.changes.filter((change) => !watch.byFileTools.has(change.path)), incomplete: capture.incomplete ?? why }
}

/**
 * What is at a path now; `linked`: a regular file with other names (hard links), which may be
 * outside cwd; `large`: a regular file over the cap (not hashed).
 */
type Current =
  | { readonly kind: "absent" }
  | { readonly kind: "file"; readonly hash: string; readonly mode: number }
  | { readonly kind: "link" | "linked" | "special" | "directory" | "unsafe" | "large" }

/** The path inside `root` a log's relative path names, or undefined when it is not one (absolute, `..`, empty parts, NUL). */
const safePath = (root: string, path: string): string | undefined => {
  if (path === "" || path.includes("\0") || path.startsWith("/")) return undefined
  const parts = path.split("/")
  if (parts.some((p) => p === "" || p === "." || p === "..")) return undefined
  return NodePath.join(root, ...parts)
}

/** What is at `full` now; `unsafe` when a folder on the way from `root` is a link or not a folder; `large` past `maxBytes`. */
const currentOf = async (root: string, full: string, maxBytes: number): Promise<Current> => {
  const parts = NodePath.relative(root, full).split(NodePath.sep)
  let at = root
  for (const part of parts.slice(0, -1)) {
    at = NodePath.join(at, part)
    const info = await NodeFs.lstat(at).catch(() => undefined)
    if (info === undefined) return { kind: "absent" }
    if (!info.isDirectory()) return { kind: "unsafe" }
  }
  const info = await NodeFs.lstat(full).catch(() => undefined)
  if (info === undefined) return { kind: "absent" }
  if (info.isSymbolicLink()) return { kind: "link" }
  if (info.isDirectory()) return { kind: "directory" }
  if (!info.isFile()) return { kind: "special" }
  // Changed outside the agent (the agent's file tools never write through a second name): a forced
  // rewind removes this name and writes a new file, the other names keep their content.
  if (info.nlink > 1) return { kind: "linked" }
  if (info.size > maxBytes) return { kind: "large" }
  const hash = await hashRegular(full)
  if (hash === undefined) return { kind: "special" }
  return { kind: "file", hash, mode: info.mode & 0o7777 }
}

/**
 * The mode a restored file gets: the permission bits of the one recorded, less what the user's umask
 * withholds from new files. The log says the mode, and a log can come with a repository: a pre-image
 * `6777` made a file setuid, setgid and world-writable. Special bits are never restored (a setuid
 * program the user owns runs as them for anyone); group or other write only when the umask gives it
 * to new files (`002`: a recorded `664` is kept) — what a fresh checkout of the file would get.
 */
const restoredMode = (recorded: number, umask: number) => recorded & 0o777 & ~umask

/**
 * This process's umask, from `/proc/self/status` (Linux 4.7+): `process.umask()` reads it by setting
 * it to 0 and back, and a file another thread creates in between would get every permission.
 * Elsewhere, `022`.
 */
const umaskOfProcess = async (): Promise<number> => {
  const status = await NodeFs.readFile("/proc/self/status", "utf8").catch(() => "")
  const found = /^Umask:\s*([0-7]+)$/m.exec(status)
  return found === null ? 0o022 : Number.parseInt(found[1]!, 8)
}

/**
 * Removes the folders a removed file leaves empty, up to (not including) cwd: the file was created
 * after the point, and so, most likely, were they. `rmdir` removes only an empty folder, never a link.
 */
const removeEmptyFolders = async (root: string, dir: string) => {
  for (let at = dir; at !== root && at.startsWith(`${root}${NodePath.sep}`); at = NodePath.dirname(at)) {
    if (!(await SafeFile.removeNow(at, "folder").then(() => true, () => false))) return
  }
}

/** The checkpoints as a layer; they need the store's blob area (every store's layer provides one). */
export const layer = (options: Options = {}): Layer.Layer<WorkspaceCheckpoints, never, BlobStore> => Layer.effect(WorkspaceCheckpoints, make(options))
