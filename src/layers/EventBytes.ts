/**
 * Counting the bytes of one event of an event stream (SSE) as the stream arrives, so that a reader
 * can stop one that never ends before it is held whole: both the MCP client's `fetch`
 * (`mcp/BoundedFetch`) and the model providers' (`providers/BoundedFetch`) bound an event so.
 *
 * An event is counted whole, to the blank line that ends it, not line by line: an SSE parser joins
 * every `data:` line of one event, and one event split over many short lines passed any cap of a
 * line (100 MiB listed, 1.1 GiB held by the MCP SDK).
 *
 * @since 0.14.0
 * @internal
 */

const LF = 10
const CR = 13

/** Where the next `byte` is in `chunk` from `from` on: `known` if it is still ahead (a search is not run again for each line). */
const next = (chunk: Uint8Array, byte: number, from: number, known: number): number =>
  known >= from || known === -1 ? known : chunk.indexOf(byte, from)

/**
 * Counts the bytes of an event stream since the last event's end, chunk by chunk; whether they are
 * past `limit`. A line ends at CRLF, LF or CR (the SSE grammar); an event ends at a blank line, that
 * is two line ends in a row. The state is kept between chunks: a CRLF split across two is one line
 * end. Only line ends are looked at one by one (`indexOf` finds them): a loop over every byte read
 * an event stream of long lines many times slower than a JSON answer is counted. `open` is the count
 * so far of the event the last chunk left unended (it drops when an event ended in that chunk).
 */
export const eventCounter = (limit: number) => {
  let counted = 0
  // Whether nothing but a line end came since the last line end (a stream starts so).
  let atLineStart = true
  // Whether the last byte was a CR: an LF right after it ends no line of its own.
  let afterCR = false
  const over = (chunk: Uint8Array): boolean => {
    let lf = chunk.indexOf(LF)
    let cr = chunk.indexOf(CR)
    let at = 0
    while (at < chunk.length) {
      lf = next(chunk, LF, at, lf)
      cr = next(chunk, CR, at, cr)
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr)
      const content = (end === -1 ? chunk.length : end) - at
      if (content > 0) {
        counted += content
        atLineStart = false
        afterCR = false
      }
      if (end === -1) return counted > limit
      // The LF of a CRLF ends no line of its own; any other line end after a line end ends the event.
      if (chunk[end] === LF && afterCR) {
        afterCR = false
      } else {
        if (atLineStart) counted = 0
        atLineStart = true
        afterCR = chunk[end] === CR
      }
      if (++counted > limit) return true
      at = end + 1
    }
    return counted > limit
  }
  // A getter on the function itself (`Object.assign` would copy the count once, as a value).
  return Object.defineProperty(over, "open", { get: () => counted }) as typeof over & { readonly open: number }
}

