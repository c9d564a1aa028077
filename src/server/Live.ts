/**
 * The `/live` response: a session's events as Server-Sent Events, written with
 * `@effect/experimental`'s SSE encoder — `id:` the sequence (what `Last-Event-ID` sends back on a
 * reconnect), `event:` the type, `data:` the stored event's JSON unchanged — with a keep-alive
 * comment whenever no event came for a while, so proxies and browsers keep the connection.
 *
 * The events come from the engine's `watchSession` (stored ones from a sequence, then live ones
 * across turns, each once). The client going away interrupts the watch only: turns run elsewhere.
 *
 * @since 0.2.0
 */
import * as Sse from "@effect/experimental/Sse"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Buffer } from "node:buffer"
import { AgentEvent } from "../index.js"

/** One event as an SSE message. */
export const encode = (event: AgentEvent.AgentEvent): string =>
  Sse.encoder.write({ _tag: "Event", id: String(event.sequence), event: event.type, data: AgentEvent.encodeJson(event) })

const utf8 = new TextEncoder()

/**
 * The encoded messages of the events every watcher of a session shares: `watchSession` hands the
 * same event object to all of them, so a hundred clients cost one encoding; the entry goes with
 * the event. (Events read from the store for one client are that client's own objects.)
 */
const messages = new WeakMap<AgentEvent.AgentEvent, Uint8Array>()

/** An event as an SSE message in UTF-8, encoded once however many clients send it. */
export const message = (event: AgentEvent.AgentEvent): Uint8Array => {
  let bytes = messages.get(event)
  if (bytes === undefined) {
    bytes = utf8.encode(encode(event))
    messages.set(event, bytes)
  }
  return bytes
}

/**
 * The last run of events written as one buffer, by its first event: the watchers of a session take
 * the same batches from its feed, so a hundred clients share one buffer per batch as well. A run is
 * the same when its first and last events and its length are (its sequences are consecutive, and a
 * sequence of a session is one stored event).
 */
const runs = new WeakMap<AgentEvent.AgentEvent, { readonly last: AgentEvent.AgentEvent; readonly length: number; readonly bytes: Uint8Array }>()

/** The messages of a chunk of events as one buffer: one write to the client's socket per chunk, not per event. */
const concatenated = (events: Chunk.Chunk<AgentEvent.AgentEvent>): Uint8Array => {
  const first = Chunk.unsafeHead(events)
  if (events.length === 1) return message(first)
  const last = Chunk.unsafeLast(events)
  const known = runs.get(first)
  if (known !== undefined && known.last === last && known.length === events.length) return known.bytes
  const bytes = Buffer.concat(Chunk.toReadonlyArray(Chunk.map(events, message)))
  runs.set(first, { last, length: events.length, bytes })
  return bytes
}

/** A comment line: ignored by `EventSource`, it keeps the connection alive. */
export const keepAliveComment = ": keep-alive\n\n"

const keepAliveBytes = utf8.encode(keepAliveComment)
const connectedBytes = utf8.encode(": connected\n\n")

/** The SSE response for a stream of events. */
export const response = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration) => {
  const frames = events.pipe(
    Stream.mapChunks((chunk) => (Chunk.isEmpty(chunk) ? Chunk.empty<Uint8Array>() : Chunk.of(concatenated(chunk)))),
    // A failed watch (the store failed mid-stream) ends the response; the client reconnects from its last id.
    Stream.catchAll((error) => Stream.fromEffect(Effect.logWarning("a live stream ended", error)).pipe(Stream.drain))
  )
  const pings = Stream.repeatEffectWithSchedule(Effect.succeed(keepAliveBytes), Schedule.spaced(keepAlive)).pipe(Stream.drop(1))
  return HttpServerResponse.stream(
    // A first comment flushes the headers at once, so a client knows it is connected before any event.
    Stream.concat(Stream.make(connectedBytes), Stream.merge(frames, pings, { haltStrategy: "left" })),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
    }
  )
}
