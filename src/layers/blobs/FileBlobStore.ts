/**
 * The blob area of the JSONL store: one file per blob at `<dataDir>/blobs/<aa>/<hash>` (`aa`: the
 * hash's first two digits, so no folder grows past a few thousand files). A blob is written to a
 * temporary file in its folder, flushed, then renamed onto its name: a crash leaves either no blob
 * or the whole one, never a torn one (a stray temporary file at worst, never read).
 *
 * @since 0.6.0
 */
import { randomBytes } from "node:crypto"
import { constants, lstatSync } from "node:fs"
import { access, open, rename, rm } from "node:fs/promises"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Blob from "../../domain/Blob.js"
import { BlobStore } from "../../services/BlobStore.js"
import * as Directories from "../Directories.js"
import { withRegular } from "../RegularFiles.js"
import * as Sha256 from "./Sha256.js"

/** Options of the file blob store. */
export interface Options {
  /** The data directory; blobs live in its `blobs/` folder. */
  readonly dataDir: string
}

const codeOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code

const reasonOf = (code: string | undefined): Blob.BlobFailureReason => {
  if (Directories.noRoom(code)) return "disk_full"
  if (code === "EROFS" || code === "EACCES" || code === "EPERM") return "permission_denied"
  return "unavailable"
}

/** A file system error as a failure: its code in plain words, never the path (it may reach the wire). */
const failure = (operation: Blob.BlobFailure["operation"], hash: string | undefined) => (error: unknown) =>
  new Blob.BlobFailure({
    reason: reasonOf(codeOf(error)),
    operation,
    detail: Directories.plainWords(codeOf(error)) ?? `the blob area could not be ${operation === "put" ? "written" : "read"} (${codeOf(error) ?? "error"})`,
    ...(hash === undefined ? {} : { hash }),
    cause: error
  })

// A blob file is read only when it is a regular file, opened without following a link and without
// blocking (RegularFiles.readRegular). The store writes its blobs by renaming a file of its own onto
// the name, never as a link or a pipe; but a data dir can come with a repository (the CLI's default
// is `.effect-agent/` in the current directory), and `readFile` of a link to `/dev/zero` read until
// it held 2 GiB, of `/dev/tty` waited for the terminal, and of a named pipe held a thread of libuv's
// pool in `open(2)` for good — every file operation of the process waits once four are held.

/** Builds the store on a data dir (its `blobs/` folder is made on the first put). */
export const make = (options: Options): BlobStore.Service => {
  const root = join(options.dataDir, "blobs")
  const fileOf = (hash: string) => join(root, hash.slice(0, 2), hash)

  const exists = (file: string) =>
    Effect.tryPromise({ try: () => access(file, constants.F_OK), catch: (error) => error }).pipe(
      Effect.as(true),
      Effect.catchIf((error) => codeOf(error) === "ENOENT", () => Effect.succeed(false))
    )

  /**
   * Whether the file exists and holds `size` bytes that hash to `hash` (a link or anything but a
   * regular file does not, nor a file of another size, which is never read: the put replaces it).
   */
  const holds = (file: string, hash: string, size: number) =>
    Effect.tryPromise({
      try: () => withRegular(file, async (handle) => (await handle.stat()).size === size && Sha256.of(await handle.readFile()) === hash),
      catch: (error) => error
    }).pipe(
      Effect.catchIf((error) => ["ENOENT", "ELOOP", "EINVAL"].includes(codeOf(error) ?? ""), () => Effect.succeed(false))
    )

  const put: BlobStore.Service["put"] = (bytes) =>
    Effect.gen(function*() {
      const hash = Sha256.of(bytes)
      if (bytes.byteLength > Blob.maxBytes) {
        return yield* new Blob.BlobFailure({ reason: "unavailable", operation: "put", detail: `${bytes.byteLength} bytes is more than a blob may hold (${Blob.maxBytes})`, hash })
      }
      const file = fileOf(hash)
      // A file already under the name is checked, not trusted: bytes damaged since (by hand, by the
      // disk) are replaced by the right ones instead of staying corrupt for every later get.
      if (yield* holds(file, hash, bytes.byteLength).pipe(Effect.mapError(failure("put", hash)))) return hash
      const folder = join(root, hash.slice(0, 2))
      const temporary = join(folder, `.${hash}.${randomBytes(6).toString("hex")}.tmp`)
      yield* Effect.try({
        try: () => {
          Directories.makeSync(folder, 0o700)
          // The store makes these folders itself, never as links: a link here (a data dir that came
          // with a repository) would take the blob where it points.
          for (const own of [root, folder]) {
            if (lstatSync(own).isSymbolicLink()) throw Object.assign(new Error(`${own} is a link`), { code: "ELOOP" })
          }
        },
        catch: failure("put", hash)
      })
      yield* Effect.tryPromise({ try: async () => {
        const handle = await open(temporary, "wx", 0o600)
        try {
          await handle.writeFile(bytes)
          await handle.sync()
        } finally {
          await handle.close()
        }
        // Atomic on one file system: a reader sees no file or the whole one. Two puts of the same
        // bytes at once both rename whole, equal files: either wins.
        await rename(temporary, file)
      }, catch: failure("put", hash) }).pipe(
        Effect.tapError(() => Effect.promise(() => rm(temporary, { force: true }).catch(() => undefined)))
      )
      return hash
    }).pipe(Effect.withSpan("FileBlobStore.put"))

  const get: BlobStore.Service["get"] = (hash) =>
    Effect.gen(function*() {
      if (!Blob.isHash(hash)) return yield* Effect.fail(Blob.invalidHash("get", hash))
      // Its size first: a file past any blob's (one that came with a repository) is refused unread.
      const read = yield* Effect.tryPromise({
        try: () => withRegular(fileOf(hash), async (handle) => {
          const { size } = await handle.stat()
          return size > Blob.maxBytes ? size : await handle.readFile()
        }),
        catch: (error): Blob.BlobNotFound | Blob.BlobFailure => codeOf(error) === "ENOENT" ? new Blob.BlobNotFound({ hash }) : failure("get", hash)(error)
      })
      if (typeof read === "number") return yield* Effect.fail(Blob.tooLarge(hash, read))
      const bytes = read
      const actual = Sha256.of(bytes)
      if (actual !== hash) return yield* Effect.fail(Blob.corrupt(hash, actual))
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    }).pipe(Effect.withSpan("FileBlobStore.get"))

  const has: BlobStore.Service["has"] = (hash) =>
    Blob.isHash(hash)
      ? exists(fileOf(hash)).pipe(Effect.mapError(failure("has", hash)))
      : Effect.fail(Blob.invalidHash("has", hash))

  return BlobStore.of({ put, get, has })
}

/** The file blob store as a layer. */
export const layer = (options: Options): Layer.Layer<BlobStore> => Layer.succeed(BlobStore, make(options))
