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
import * as Address from "../../domain/Address.js"
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

/**
 * What a bound does with each chunk of a body: passes bytes on (`enqueue`), holds them, or ends the
 * body; `true` once the chunk answered the read (something passed on, or the body ended).
 */
interface Bound {
  readonly take: (chunk: Uint8Array, controller: ReadableStreamDefaultController<Uint8Array>) => boolean
  readonly flush: (controller: ReadableStreamDefaultController<Uint8Array>) => void
}

/**
 * `body` read through `bound`, one read of `body` for each read of the SDK while nothing is held. A
 * pull source rather than `pipeThrough` a `TransformStream`: a pipe puts a writer and a reader, with
 * their promises, between the socket and the SDK for every chunk, and a vendor's stream is one event
 * a chunk (bench row 10). In alternated rounds of row 10 this source is level with no bound at all
 * (docs/benchmarks.md, "mend51prov"). A bound that ends the body lets go of the connection.
 */
const boundedBody = (body: ReadableStream<Uint8Array>, boundOf: (letGo: () => void) => Bound): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  const bound = boundOf(() => void reader.cancel().catch(() => undefined))
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A held chunk answers no read, and a pull that enqueues nothing is not called again: read on.
      for (;;) {
        const read = await reader.read()
        if (read.done) {
          bound.flush(controller)
          return controller.close()
        }
        if (bound.take(read.value, controller)) return
      }
    },
    cancel: (reason) => reader.cancel(reason)
  }, { highWaterMark: 0 })
}

/** A body cut after `limit` bytes: the bytes before are passed on, the rest is not read (the connection is let go). */
const cutAfter = (limit: number) => (letGo: () => void): Bound => {
  let kept = 0
  return {
    take(chunk, controller) {
      const room = limit - kept
      kept += Math.min(room, chunk.byteLength)
      controller.enqueue(chunk.byteLength <= room ? chunk : chunk.subarray(0, room))
      if (kept >= limit) {
        controller.close()
        letGo()
      }
      return true
    },
    flush: () => {}
  }
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
const eventsUpTo = (limit: number) => (letGo: () => void): Bound => {
  const over = eventCounter(limit)
  let held: Array<Uint8Array> = []
  let heldSize = 0
  const release = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (heldSize > 0) controller.enqueue(held.length === 1 ? held[0]! : Buffer.concat(held, heldSize))
    held = []
    heldSize = 0
  }
  return {
    take(chunk, controller) {
      const before = over.open
      if (over(chunk)) {
        controller.error(oversizedEvent(limit))
        letGo()
        return true
      }
      held.push(chunk)
      heldSize += chunk.byteLength
      // The count drops only where an event ended (the LF of a CRLF aside, which passes a chunk early).
      // Past that, held until they are as many as the event's bytes passed on already (at least
      // {@link heldBytes}): the SDK searches an event of n bytes some log n times, not n / 64 Ki.
      if (over.open < before + chunk.byteLength || heldSize >= Math.max(heldBytes, over.open - heldSize)) {
        release(controller)
        return true
      }
      return false
    },
    flush: release
  }
}

/** `response` with its body bounded: a success's by event, any other's cut. */
export const bounded = (response: Response, limits: { readonly eventBytes: number; readonly errorBytes: number }): Response => {
  if (response.body === null) return response
  const body = boundedBody(response.body, response.ok ? eventsUpTo(limits.eventBytes) : cutAfter(limits.errorBytes))
  const bounded = withStatus(body, response.status, { statusText: response.statusText, headers: response.headers })
  // What the SDKs may read of where the response came from, kept as it was.
  Object.defineProperty(bounded, "url", { value: response.url })
  return bounded
}

/**
 * A web `Response` with `status`, though its constructor takes 200–599 only: a server may answer up
 * to 999 (a proxy's own codes) and `fetch` hands that on. Such a one is made as a 599 (not `ok`, its
 * body bounded as an error's) and reads its own status.
 */
export const withStatus = (body: ReadableStream<Uint8Array>, status: number, init: Omit<ResponseInit, "status">): Response => {
  const made = status >= 200 && status <= 599
  const response = new Response(body, { ...init, status: made ? status : 599 })
  if (!made) Object.defineProperty(response, "status", { value: status })
  return response
}

/** The most redirects within one origin followed for one request (`fetch`'s own limit is 20). */
export const maxRedirects = 20

/** The statuses of a redirect `fetch` follows. */
export const redirects: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

/** Whether a redirect of `status` is followed as a `GET` without the body, as `fetch` follows one: a 303, or a 301/302 of a `POST`. */
export const redirectsAsGet = (status: number, method: string): boolean =>
  status === 303 || ((status === 301 || status === 302) && method.toUpperCase() === "POST")

/**
 * The failure of a redirect to another origin: `invalid_request` (not retried), naming where it
 * pointed as every address is shown. `fetch` followed a 307/308 from the base URL to any host with
 * the request's body, the whole prompt — the key headers aside, which it drops across origins.
 */
export const crossOriginRedirect = (from: URL, to: URL): ProviderFailure =>
  ProviderFailure.of(
    "invalid_request",
    `the endpoint ${Address.shown(from.href)} redirected the request to another origin (${Address.shown(to.href)}), which is not followed: set the base URL to the address that answers`
  )

/**
 * `inner` (default the global `fetch`) with every response {@link bounded}, and a redirect followed
 * only within the request's origin (scheme, host and port): one to another origin fails with
 * {@link crossOriginRedirect}. Within it, as `fetch` follows one: a 303, or a 301/302 of a `POST`,
 * as a `GET` without the body; a 307/308 as it was.
 */
export const make = (
  limits: { readonly eventBytes: number; readonly errorBytes: number } = { eventBytes: maxEventBytes, errorBytes: errorBodyBytes },
  inner?: Fetch
): Fetch =>
async (input, init) => {
  const send = inner ?? fetch
  let url = new URL(typeof input === "string" || input instanceof URL ? input : input.url)
  let request: RequestInit = { ...init, redirect: "manual" }
  let target: string | URL | Request = input
  for (let hop = 0;; hop++) {
    const response = await send(target, request)
    const location = response.headers.get("location")
    if (!redirects.has(response.status) || location === null || hop >= maxRedirects) return bounded(response, limits)
    void response.body?.cancel().catch(() => undefined)
    const next = new URL(location, url)
    if (next.origin !== url.origin) throw crossOriginRedirect(url, next)
    if (redirectsAsGet(response.status, request.method ?? "GET")) {
      const { body: _body, ...rest } = request
      request = { ...rest, method: "GET" }
    }
    url = next
    target = next.href
  }
}
