/**
 * A log's last sequence, read from its end: what a catch-up asks before it reads the log from a
 * sequence (a JSONL read from a sequence still goes through every line before it). Only a clear
 * answer is given — the last line whole, an event of this session — and `undefined` otherwise (no
 * log, a torn last line, a line longer than the tail read, anything unreadable): the caller then
 * reads the log, which names whatever is wrong.
 *
 * @since 0.10.0
 * @internal
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs"
import * as LogSeek from "./LogSeek.js"

/** Bytes read from the log's end first (an event line is mostly shorter), then at most: a last line longer is left to the read. */
const firstTailBytes = 4 * 1024
const tailBytes = 64 * 1024

const newline = 0x0a

/** The sequence of the log's last line, when it is a whole event line of `sessionId`. */
export const lastSequence = (file: string, sessionId: string): number | undefined => {
  let fd: number
  try {
    // As the reader opens it: a named pipe or a link in a log's place is never followed.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  } catch {
    return undefined
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile() || stat.size === 0) return undefined
    const line = lastLine(fd, stat.size, firstTailBytes) ?? lastLine(fd, stat.size, tailBytes)
    return line === undefined ? undefined : LogSeek.sequenceOf(line, sessionId)
  } catch {
    return undefined
  } finally {
    try {
      closeSync(fd)
    } catch {
      // The descriptor is gone either way.
    }
  }
}

/**
 * The log's last line (without its newline) when it ends in the last `bytes` of the log; undefined
 * when it is longer, or torn (a crash, or an append under way: the read's to judge).
 */
const lastLine = (fd: number, size: number, bytes: number): string | undefined => {
  const length = Math.min(size, bytes)
  const buffer = Buffer.allocUnsafe(length)
  const read = readSync(fd, buffer, 0, length, size - length)
  if (read !== length || buffer[length - 1] !== newline) return undefined
  const start = buffer.lastIndexOf(newline, length - 2) + 1
  return start === 0 && length < size ? undefined : buffer.toString("utf8", start, length - 1)
}
