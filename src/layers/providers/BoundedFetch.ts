/**
 * The `fetch` the vendor SDKs' clients are made with: what a model endpoint answers is bounded as it
 * arrives. Both SDKs read an error's body whole (`response.text()`) and parse a stream's events
 * with no limit on one event, so an endpoint you point `baseURL` at that sent an endless 500 body,
 * or one event without end, had everything it sent held in memory until the stream's idle timeout
 * (3 GiB in 20 s over loopback), and the string past V8's longest ended as a `RangeError`.
 *
 * - A response that is not a success has its body cut at {@link errorBodyBytes}: cut, not failed,
 *   so that the SDK still reads the vendor's message (its start) and the status decides the failure.
 * - A success's body is read as events (both SDKs read any streamed 200 so): one event past
 *   {@link maxEventBytes}, to the blank line that ends it, fails the response with
 *   {@link oversizedEvent} — a typed failure of its own, not retried: the same request would get
 *   the same endpoint's answer, and no vendor sends such an event (a response's output is bounded
 *   by its max tokens).
 *
 * @since 0.14.0
 * @internal
 */
import { ProviderFailure } from "../../domain/Errors.js"
import { eventCounter } from "../EventBytes.js"

/** The most bytes of one event of a streamed response (16 MiB, the store's bound of a line too). */
export const maxEventBytes = 16 * 1024 * 1024

/** The most bytes of an error's body that are read (its start names the error; the rest is not read). */
export const errorBodyBytes = 64 * 1024

/** The failure of a response that held an event past {@link maxEventBytes}: `unknown`, which is not retried. */
export const oversizedEvent = (limit: number = maxEventBytes): ProviderFailure =>
  ProviderFailure.of("unknown", `the response held an event over ${limit} bytes; it was not read further`)

/** The `fetch` the SDKs call: both type it so. */
type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/** A body cut after `limit` bytes: the bytes before are passed on, the rest is not read (the connection is let go). */
const cutAfter = (limit: number) => {
  let kept = 0
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const room = limit - kept
      kept += Math.min(room, chunk.byteLength)
      controller.enqueue(chunk.byteLength <= room ? chunk : chunk.subarray(0, room))
      if (kept >= limit) controller.terminate()
    }
  })
}

/** The fewest bytes of an event not yet ended that are held back before they are passed on (see {@link eventsUpTo}). */
const heldBytes = 1024 * 1024

/**
 * A body that fails with {@link oversizedEvent} once one of its events is past `limit` bytes.
 *
 * A chunk that ends no event is held back and passed on with the chunk that ends it: the SDK can
 * give no event before its end anyway, and both SDKs join their buffer with each chunk and search
 * it again from the start, so that one long event in the 64 KiB chunks the socket gives cost time
 * growing with its square (OpenAI's: 16 MiB took 78 s at load 20, 5 s in chunks of 1 MiB).
 */
const eventsUpTo = (limit: number) => {
  const over = eventCounter(limit)
  let held: Array<Uint8Array> = []
  let heldSize = 0
  const release = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (heldSize > 0) controller.enqueue(held.length === 1 ? held[0]! : Buffer.concat(held, heldSize))
    held = []
    heldSize = 0
  }
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const before = over.open
      if (over(chunk)) return controller.error(oversizedEvent(limit))
      held.push(chunk)
      heldSize += chunk.byteLength
      // The count drops only where an event ended (the LF of a CRLF aside, which passes a chunk early).
      // Past that, held until they are as many as the event's bytes passed on already (at least
      // {@link heldBytes}): the SDK searches an event of n bytes some log n times, not n / 64 Ki.
      if (over.open < before + chunk.byteLength || heldSize >= Math.max(heldBytes, over.open - heldSize)) release(controller)
    },
    flush: release
  })
}

/** `response` with its body bounded: a success's by event, any other's cut. */
export const bounded = (response: Response, limits: { readonly eventBytes: number; readonly errorBytes: number }): Response => {
  if (response.body === null) return response
  const body = response.body.pipeThrough(response.ok ? eventsUpTo(limits.eventBytes) : cutAfter(limits.errorBytes))
  const bounded = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  // What the SDKs may read of where the response came from, kept as it was.
  Object.defineProperty(bounded, "url", { value: response.url })
  return bounded
}

/** `inner` (default the global `fetch`) with every response {@link bounded}. */
export const make = (
  limits: { readonly eventBytes: number; readonly errorBytes: number } = { eventBytes: maxEventBytes, errorBytes: errorBodyBytes },
  inner?: Fetch
): Fetch =>
async (input, init) => bounded(await (inner ?? fetch)(input, init), limits)
