/**
 * The `fetch` an HTTP MCP server is spoken to with: what it answers is bounded as it arrives. The
 * SDK reads a JSON answer whole (`response.json()`) and an event stream event by event, each without
 * a limit, so a server that sent an endless body — or one endless event — held everything it sent in
 * memory until the call's time limit, gigabytes on a fast link. A JSON answer past `maxAnswerBytes`,
 * or an event of an event stream past it, ends the response with an error; the call fails
 * `mcp_invalid_response` and the server is connected to again on the next call.
 *
 * An event is counted whole, to the blank line that ends it, not line by line: the SDK's parser
 * joins every `data:` line of one event, and one answer split over many short lines (pretty JSON)
 * passed any cap (100 MiB listed, 1.1 GiB held).
 *
 * @since 0.5.0
 * @internal
 */
import { mediaTypeEssence } from "@modelcontextprotocol/sdk/shared/mediaType.js"
import { eventCounter } from "../EventBytes.js"

/** The most bytes of one JSON answer, or of one event of an event stream (what the store keeps of a line is 16 MiB too). */
export const maxAnswerBytes = 16 * 1024 * 1024

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>

/** A response whose body errs once it carries more than `limit` bytes (a whole body, or one event of an event stream). */
const boundedBody = (response: Response, limit: number): Response => {
  if (response.body === null) return response
  // As the SDK decides how to read it (by the media type, parameters aside): a JSON answer with
  // `text/event-stream` in a parameter was counted line by line here and read whole there. A GET
  // stream the SDK reads as events whatever its type is counted whole unless so typed: bounded too.
  const events = mediaTypeEssence(response.headers.get("content-type")) === "text/event-stream"
  const overInEvent = events ? eventCounter(limit) : undefined
  let counted = 0
  const cap = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const over = overInEvent !== undefined ? overInEvent(chunk) : (counted += chunk.byteLength) > limit
      if (over) controller.error(new Error(`the server's answer is over ${limit} bytes${events ? " in one event" : ""}`))
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
