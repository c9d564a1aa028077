/**
 * A new log written to its descriptor a line at a time, in writes of about 64 KiB: what `repair` and
 * the upgrade of an older log write, so neither holds the new log whole (a long log built in memory
 * took several times its size, and one past 512 MB failed "Invalid string length").
 *
 * @since 0.1.0
 * @internal
 */
import { closeSync, fstatSync, fsyncSync, rmSync, type Stats, writeSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as LogLines from "./LogLines.js"
import * as WriterLock from "./WriterLock.js"

export class LineWriter {
  private buffered: Array<string>
  private size: number

  /** Writes to `fd`, beginning with the line `first` (a log's header). */
  constructor(private readonly fd: number, first: string) {
    this.buffered = [first]
    this.size = first.length
  }

  /** One line (without its newline). */
  push(line: string) {
    this.buffered.push(line)
    this.size += line.length + 1
    if (this.size >= 64 * 1024) this.flush()
  }

  /** Writes what is left, and flushes the file to disk when `sync`. */
  end(sync: boolean) {
    this.flush()
    if (sync) fsyncSync(this.fd)
  }

  /** The written file, by its descriptor (after {@link end}: its whole size). */
  stat(): Stats {
    return fstatSync(this.fd)
  }

  private flush() {
    if (this.buffered.length === 0) return
    const bytes = Buffer.from(this.buffered.join("\n") + "\n")
    for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at)
    this.buffered = []
    this.size = 0
  }
}

/**
 * Writes a new log to `temporary` (created `O_EXCL` after removing whatever had its name: never
 * through a link), header first, by `write`; the file is closed after, and removed if `write` fails.
 */
export const newLog = <A, E, R>(
  temporary: string,
  cannotWrite: (error: unknown) => E,
  write: (out: LineWriter) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.try({
      try: () => {
        rmSync(temporary, { force: true })
        return WriterLock.openNewFile(temporary)
      },
      catch: cannotWrite
    }),
    (fd) => write(new LineWriter(fd, LogLines.header)),
    (fd) => Effect.sync(() => closeSync(fd))
  ).pipe(Effect.tapError(() => Effect.sync(() => rmSync(temporary, { force: true }))))
