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
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { AgentEvent } from "../index.js"

/** One event as an SSE message. */
export const encode = (event: AgentEvent.AgentEvent): string =>
  Sse.encoder.write({ _tag: "Event", id: String(event.sequence), event: event.type, data: AgentEvent.encodeJson(event) })

/** A comment line: ignored by `EventSource`, it keeps the connection alive. */
export const keepAliveComment = ": keep-alive\n\n"

/** The SSE response for a stream of events. */
export const response = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration) => {
  const messages = events.pipe(
    Stream.map(encode),
    // A failed watch (the store failed mid-stream) ends the response; the client reconnects from its last id.
    Stream.catchAll((error) => Stream.fromEffect(Effect.logWarning("a live stream ended", error)).pipe(Stream.drain))
  )
  const pings = Stream.repeatEffectWithSchedule(Effect.succeed(keepAliveComment), Schedule.spaced(keepAlive)).pipe(Stream.drop(1))
  return HttpServerResponse.stream(
    // A first comment flushes the headers at once, so a client knows it is connected before any event.
    Stream.concat(Stream.make(": connected\n\n"), Stream.merge(messages, pings, { haltStrategy: "left" })).pipe(Stream.encodeText),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
    }
  )
}
