/**
 * Where a read from a sequence starts in a log: a line at or before the sequence, found by bisecting
 * the file's bytes, so that a ranged read costs what it hands over plus a bounded seek instead of
 * every line before it (a catch-up, `GET /sessions/:id/events?after=N`, an SSE client's `Last-Event-ID`, a watch).
 *
 * Nothing is kept beside the log: each probe reads a few KiB at a byte offset, takes the first whole
 * line after it and parses it, so there is no index to go stale with a crash, a torn line, a log
 * swapped or linked in place. A seek only narrows where the read starts; the read checks every line
 * from there on as a whole read does (sequences that run on one by one from the line found, this
 * session's events, the recovery mode), so a probe that lands on damage can only cost more lines,
 * never hand over other events. Anything a probe cannot judge (a line longer than it reads, one that
 * is not an event of this session, a log of an older format version) stops the seek where it stands.
 * What a ranged read does not check is the lines before where it starts: a damaged prefix is the
 * whole read's to name.
 *
 * @since 0.11.0
 * @internal
 */
import { readSync } from "node:fs"
import * as Option from "effect/Option"
import * as LogFormat from "../../domain/LogFormat.js"
import * as LogLines from "./LogLines.js"

/** Where a ranged read starts: the byte offset of a line, and the sequence of its event. */
export interface Start {
  readonly offset: number
  readonly sequence: number
}

/**
 * Lines parsed by the reads of logs (probes included), over all calls: what the tests count a read's
 * work by, never its time.
 */
export const parsed = { count: 0 }

/** A seek stops once the span left is this small: the read parses its lines (about a chunk's worth). */
const window = 64 * 1024
/** Bytes a probe reads first; a longer line is read in doubling steps up to `maxProbeBytes`. */
const probeBytes = 4 * 1024
const maxProbeBytes = 1024 * 1024
const newline = 0x0a

/** Up to `length` bytes of an open file from `offset` (fewer at its end). */
export const readAt = (fd: number, offset: number, length: number): Buffer => {
  const buffer = Buffer.allocUnsafe(length)
  let got = 0
  while (got < length) {
    const n = readSync(fd, buffer, got, length - got, offset + got)
    if (n === 0) break
    got += n
  }
  return buffer.subarray(0, got)
}

/** The sequence of a whole event line of `sessionId`; undefined for anything else. */
export const sequenceOf = (line: string, sessionId: string): number | undefined => {
  parsed.count++
  let event: unknown
  try {
    event = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof event !== "object" || event === null) return undefined
  const { sequence, sessionId: of } = event as { readonly sequence?: unknown; readonly sessionId?: unknown }
  return of === sessionId && typeof sequence === "number" && Number.isSafeInteger(sequence) && sequence >= 1 ? sequence : undefined
}

interface Found {
  readonly start: number
  readonly end: number
  readonly text: string
}

/** The first whole line starting at `position` (or, `after`, the first starting after it); undefined past `maxProbeBytes` or the end. */
const lineAt = (fd: number, position: number, size: number, after: boolean): Found | undefined => {
  for (let bytes = probeBytes;; bytes *= 2) {
    const length = Math.min(bytes, size - position)
    const buffer = readAt(fd, position, length)
    const start = after ? buffer.indexOf(newline) + 1 : 0
    const end = start === 0 && after ? -1 : buffer.indexOf(newline, start)
    if (end !== -1) return { start: position + start, end: position + end + 1, text: buffer.toString("utf8", start, end) }
    if (buffer.length < bytes || bytes >= maxProbeBytes) return undefined
  }
}

/** Whether a log's first line is this version's header (an older log is read whole, through its migrations). */
const currentHeader = (fd: number, size: number): Found | undefined => {
  const first = lineAt(fd, 0, size, false)
  if (first === undefined) return undefined
  parsed.count++
  const line = LogLines.firstLine(first.text)
  return Option.isSome(line) && line.value.isHeader && line.value.version === LogFormat.currentVersion ? first : undefined
}

/**
 * A line whose event's sequence is at most `fromSequence`, as close before it as a bisection of the
 * log's first `size` bytes finds (within a window of 64 KiB); undefined when the read should start at
 * the log's beginning (a small log, an early sequence, an older log, a probe that cannot judge).
 */
export const seek = (fd: number, size: number, sessionId: string, fromSequence: number): Start | undefined => {
  if (fromSequence <= 1 || size <= window) return undefined
  try {
    const header = currentHeader(fd, size)
    if (header === undefined) return undefined
    let low = header.end
    let high = size
    let found: Start | undefined
    while (high - low > window) {
      const mid = low + Math.floor((high - low) / 2)
      const probe = lineAt(fd, mid, size, true)
      const sequence = probe === undefined ? undefined : sequenceOf(probe.text, sessionId)
      if (probe === undefined || sequence === undefined) break
      if (sequence > fromSequence) {
        high = mid
      } else {
        found = { offset: probe.start, sequence }
        if (sequence === fromSequence) break
        low = probe.start
      }
    }
    return found
  } catch {
    // An unreadable probe: the read from the beginning names whatever is wrong.
    return undefined
  }
}
