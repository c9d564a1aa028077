/**
 * `--image <file>` (run) and `/image <path>` (chat): image files the user named, read and checked
 * before anything of the message is stored. A file outside the working directory is fine — the
 * user named it on their own command line, no model chose it. Missing, unreadable, not a file,
 * over the size cap (told by its size before it is read, and counted while it is read) or not a PNG/JPEG/GIF/WebP by its bytes:
 * a `CliError` naming the file and the reason.
 *
 * @since 0.6.0
 */
import { constants } from "node:fs"
import { type FileHandle, open } from "node:fs/promises"
import { resolve } from "node:path"
import * as Effect from "effect/Effect"
import { Image } from "../index.js"
import { CliError } from "./CliError.js"

const plain = (code: string | undefined) => {
  switch (code) {
    case "ENOENT":
      return "no such file"
    case "EACCES":
    case "EPERM":
      return "permission denied"
    case "EISDIR":
      return "a directory, not an image file"
    default:
      return `cannot be read (${code ?? "error"})`
  }
}

/**
 * The handle's bytes up to `max`, or `undefined` once it holds more: counted while reading, since a
 * size of 0 says nothing (`/proc/self/pagemap`, gigabytes that `readFile` read whole) and a file can
 * grow after its `stat`.
 */
const readUpTo = async (handle: FileHandle, max: number): Promise<Uint8Array | undefined> => {
  const chunks: Array<Buffer> = []
  let total = 0
  for (;;) {
    // Whole chunks, at most one past the cap: some files take only reads of a multiple of a size (pagemap: 8 bytes).
    const chunk = Buffer.allocUnsafe(64 * 1024)
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null)
    if (bytesRead === 0) return new Uint8Array(Buffer.concat(chunks, total))
    chunks.push(chunk.subarray(0, bytesRead))
    total += bytesRead
    if (total > max) return undefined
  }
}

const refused = (file: string, detail: string) => new CliError({ reason: "invalid_file", message: `--image ${file}: ${detail}` })

/** Reads one image file (relative to `cwd`), checked: its bytes and media type, or a `CliError`. */
export const read = (file: string, cwd: string = process.cwd()): Effect.Effect<Image.ImageInput, CliError> =>
  Effect.gen(function*() {
    const bytes = yield* Effect.tryPromise({
      try: async () => {
        // One open: the size checked and the bytes read are of the same file. Without blocking: a
        // named pipe (one a command of the session made in the workspace, say, for `/image`) would
        // hold the open for good, and the CLI with it; it is opened at once and refused below.
        const handle = await open(resolve(cwd, file), constants.O_RDONLY | constants.O_NONBLOCK)
        try {
          const stat = await handle.stat()
          if (stat.isDirectory()) throw Object.assign(new Error("directory"), { code: "EISDIR" })
          if (!stat.isFile()) throw Object.assign(new Error("not a file"), { code: "ENOTFILE" })
          if (stat.size > Image.maxImageBytes) return stat.size
          return (await readUpTo(handle, Image.maxImageBytes)) ?? "over"
        } finally {
          await handle.close()
        }
      },
      catch: (error) => {
        const code = (error as NodeJS.ErrnoException).code
        return refused(file, code === "ENOTFILE" ? "not a regular file" : plain(code))
      }
    })
    if (typeof bytes === "number") {
      return yield* refused(file, `${Image.tooLargeDetail(bytes)} [too_large]`)
    }
    if (bytes === "over") return yield* refused(file, `holds more than the ${Image.maxImageBytes} bytes (5 MiB) an image may be [too_large]`)
    const checked = yield* Image.verify({ data: bytes }, undefined, file).pipe(Effect.mapError((why) => refused(file, `${why.detail} [${why.reason}]`)))
    return { data: bytes, mediaType: checked }
  })

/** Reads every `--image` file, in order; refuses more than a message may carry before reading any. */
export const readAll = (files: ReadonlyArray<string>, cwd?: string): Effect.Effect<ReadonlyArray<Image.ImageInput>, CliError> =>
  files.length > Image.maxImagesPerMessage
    ? Effect.fail(new CliError({ reason: "invalid_arguments", message: `--image: ${files.length} images; a message may carry ${Image.maxImagesPerMessage}` }))
    : Effect.forEach(files, (file) => read(file, cwd))
