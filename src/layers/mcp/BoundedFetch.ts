/**
 * The `fetch` an HTTP MCP server is spoken to with: what it answers is bounded as it arrives. The
 * SDK reads a JSON answer whole (`response.json()`) and an event stream line by line, each without
 * a limit, so a server that sent an endless body — or one endless line of an event stream — held
 * everything it sent in memory until the call's time limit, gigabytes on a fast link. A JSON answer
 * past `maxAnswerBytes`, or a line of an event stream past it, ends the response with an error; the
 * call fails `mcp_invalid_response` and the server is connected to again on the next call.
 *
 * @since 0.5.0
 * @internal
 */

/** The most bytes of one JSON answer, or of one line of an event stream (what the store keeps of a line is 16 MiB too). */
export const maxAnswerBytes = 16 * 1024 * 1024

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>

/** A response whose body errs once it carries more than `limit` bytes (a whole body, or one line of an event stream). */
const boundedBody = (response: Response, limit: number): Response => {
  if (response.body === null) return response
  const lines = (response.headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream")
  let counted = 0
  const cap = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      if (lines) {
        // Bytes since the last line end: a stream of many short events may run as long as it likes.
        const end = Math.max(chunk.lastIndexOf(10), chunk.lastIndexOf(13))
        counted = end === -1 ? counted + chunk.byteLength : chunk.byteLength - end - 1
      } else {
        counted += chunk.byteLength
      }
      if (counted > limit) controller.error(new Error(`the server's answer is over ${limit} bytes${lines ? " in one line" : ""}`))
      else controller.enqueue(chunk)
    }
  })
  const bounded = new Response(response.body.pipeThrough(cap), { status: response.status, statusText: response.statusText, headers: response.headers })
  // The SDK reads where the response came from (redirects within the origin): kept as it was.
  Object.defineProperty(bounded, "url", { value: response.url })
  return bounded
}

/** `inner` (default the global `fetch`) with every answer bounded; a redirect is returned as it is, for the SDK to judge. */
export const make = (limit: number = maxAnswerBytes, inner?: Fetch): Fetch => async (url, init) => {
  const response = await (inner ?? fetch)(url, init)
  return response.status >= 300 && response.status < 400 ? response : boundedBody(response, limit)
}
