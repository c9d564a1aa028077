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
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Buffer } from "node:buffer"
import { IncomingMessage } from "node:http"
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
 * A run of events written as one buffer, by its first event: the watchers of a session take the
 * same batches from its feed, so a hundred clients share one buffer per batch as well. A run is
 * the same when its first and last events and its length are (its sequences are consecutive, and a
 * sequence of a session is one stored event). While the first client to take a big batch encodes
 * it (a piece at a time, see {@link eventsPerStep}), the run is known but its bytes are not yet:
 * the other clients wait for them rather than each going over the batch again.
 */
interface Run {
  readonly last: AgentEvent.AgentEvent
  readonly length: number
  /** Undefined while the batch is being encoded. */
  bytes: Uint8Array | undefined
  /** Its bytes were handed out, or its encoding given up: nobody is waiting any more. */
  settled: boolean
  /** The clients waiting for the bytes; each is handed them, or undefined if the encoding was given up. */
  readonly waiting: Set<(bytes: Uint8Array | undefined) => void>
}

const runs = new WeakMap<AgentEvent.AgentEvent, Run>()

/** The run of a chunk of events when another client took the same batch (its bytes may be on their way). */
const runOf = (events: Chunk.Chunk<AgentEvent.AgentEvent>): Run | undefined => {
  const known = runs.get(Chunk.unsafeHead(events))
  return known !== undefined && known.last === Chunk.unsafeLast(events) && known.length === events.length ? known : undefined
}

/** The run's bytes are known (or it is given up, `undefined`): every waiting client is handed them. */
const settle = (run: Run, bytes: Uint8Array | undefined) => {
  run.bytes = bytes
  run.settled = true
  const waiting = Array.from(run.waiting)
  run.waiting.clear()
  for (const resume of waiting) resume(bytes)
}

/** The messages of a chunk of events as one buffer: one write to the client's socket per chunk, not per event. */
const concatenated = (events: Chunk.Chunk<AgentEvent.AgentEvent>): Uint8Array => {
  if (events.length === 1) return message(Chunk.unsafeHead(events))
  const known = runOf(events)
  if (known?.bytes !== undefined) return known.bytes
  const bytes = joined(events)
  // A run still being encoded is left to the client encoding it, which settles it.
  if (known === undefined) runs.set(Chunk.unsafeHead(events), { last: Chunk.unsafeLast(events), length: events.length, bytes, settled: true, waiting: new Set() })
  return bytes
}

const joined = (events: Chunk.Chunk<AgentEvent.AgentEvent>): Uint8Array =>
  Buffer.concat(Chunk.toReadonlyArray(Chunk.map(events, message)))

/**
 * At most this many events are encoded in one step. A turn's batch can hold thousands of events (a
 * scripted or fast model's whole answer), and encoding one costs tens of µs: one step over all of
 * them would hold the event loop for tens of ms, which no scheduler can cut. Between pieces the
 * watch yields, so the loop (`/healthz`, other clients) gets its turn once the server's time slice
 * is used (see `EventLoop`). The batch is still handed over and written as one buffer (a write per
 * piece would cost every client a socket write per 128 events), and the bytes are the same.
 */
export const eventsPerStep = 128

/**
 * A chunk's bytes, a big one encoded a piece at a time first (see {@link eventsPerStep}) by the
 * first client to take it; the clients taking the same batch meanwhile wait for its bytes (with a
 * hundred clients, each used to go over the batch a piece at a time itself: 10,000 events were 78
 * pieces, yields and lookups per client, and most of the server's allocation in a turn).
 *
 * @internal
 */
export const bytesOf = (events: Chunk.Chunk<AgentEvent.AgentEvent>): Effect.Effect<Uint8Array> => {
  if (events.length <= eventsPerStep) return Effect.succeed(concatenated(events))
  const known = runOf(events)
  if (known?.bytes !== undefined) return Effect.succeed(known.bytes)
  if (known !== undefined) {
    // Another client is encoding this batch: its bytes, or (that client gone mid-way) this one's turn to encode it.
    return Effect.flatMap(
      Effect.async<Uint8Array | undefined>((resume) => {
        // Settled since the look above (this fiber may be cut between the two, and the encoding
        // client end meanwhile): its bytes now, or this client's turn to encode — never a wait.
        if (known.settled) return resume(Effect.succeed(known.bytes))
        const handed = (bytes: Uint8Array | undefined) => resume(Effect.succeed(bytes))
        known.waiting.add(handed)
        return Effect.sync(() => {
          known.waiting.delete(handed)
        })
      }),
      (bytes) => (bytes === undefined ? bytesOf(events) : Effect.succeed(bytes))
    )
  }
  const head = Chunk.unsafeHead(events)
  const run: Run = { last: Chunk.unsafeLast(events), length: events.length, bytes: undefined, settled: false, waiting: new Set() }
  runs.set(head, run)
  return Effect.forEach(
    Chunk.chunksOf(events, eventsPerStep),
    (piece) => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => Chunk.forEach(piece, message))),
    { discard: true }
  ).pipe(
    // The run this client holds is settled, not whichever the map holds by then: a client taking a
    // batch with the same first event but another length replaces the map's entry, and the clients
    // waiting on this one must still be handed its bytes.
    Effect.map(() => {
      const bytes = joined(events)
      settle(run, bytes)
      return bytes
    }),
    // This client gone before the bytes were made: the run is forgotten, and a waiting client encodes it.
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        if (run.bytes !== undefined) return
        if (runs.get(head) === run) runs.delete(head)
        settle(run, undefined)
      })
    )
  )
}

/** A comment line: ignored by `EventSource`, it keeps the connection alive. */
export const keepAliveComment = ": keep-alive\n\n"

const keepAliveBytes = utf8.encode(keepAliveComment)
const connectedBytes = utf8.encode(": connected\n\n")

/**
 * What passes from a client's watch to its response: at most one buffer, so a client that does not
 * read holds its watch (which then finds its oldest events gone from the session's feed and reads
 * them from the store when it goes on — see `Watchers`), never a growing queue. Plain callbacks,
 * no Effect queue: a batch costs a hand-over, not a queue's fibers and signals.
 *
 * @internal
 */
export class Mailbox {
  private slot: Uint8Array | undefined
  private ended = false
  /** The response waiting for bytes. */
  private reader: ((bytes: Uint8Array | undefined) => void) | undefined
  /** The watch waiting for the slot to empty, with its bytes. */
  private writer: { readonly bytes: Uint8Array; readonly resume: () => void } | undefined

  constructor(first: Uint8Array) {
    this.slot = first
  }

  /** Hands `bytes` over: at once when the slot is free, else once the response has taken what it holds. */
  readonly put = (bytes: Uint8Array): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (this.deliver(bytes)) return Effect.void
      return Effect.async<void>((resume) => {
        // Tried again where nothing can come between the try and the wait: this fiber may be cut
        // after the try above, and the response empty the slot meanwhile (then both waited for ever).
        if (this.deliver(bytes)) return resume(Effect.void)
        this.writer = { bytes, resume: () => resume(Effect.void) }
        return Effect.sync(() => {
          this.writer = undefined
        })
      })
    })

  /** A keep-alive comment, when nothing is waiting to be written (else the connection is busy anyway). */
  readonly ping = (): void => {
    if (this.slot === undefined && !this.ended) this.deliver(keepAliveBytes)
  }

  /** No more bytes: the response ends once it has written what the slot holds. */
  readonly end = (): void => {
    this.ended = true
    if (this.slot === undefined) this.wake(undefined)
  }

  /** The next bytes to write; `None` once ended. */
  readonly take: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<never>> = Effect.suspend(() => {
    const bytes = this.next()
    if (bytes !== undefined) return Effect.succeed(Chunk.of(bytes))
    if (this.ended) return Effect.fail(Option.none())
    return Effect.async<Chunk.Chunk<Uint8Array>, Option.Option<never>>((resume) => {
      // Looked at again where nothing can come between the look and the wait: this fiber may be cut
      // after the look above, and the watch hand its last bytes over, or end, meanwhile.
      const now = this.next()
      if (now !== undefined) return resume(Effect.succeed(Chunk.of(now)))
      if (this.ended) return resume(Effect.fail(Option.none()))
      this.reader = (given) => resume(given === undefined ? Effect.fail(Option.none()) : Effect.succeed(Chunk.of(given)))
      return Effect.sync(() => {
        this.reader = undefined
      })
    })
  })

  /** Into the slot, or straight to a waiting response; false when the slot is taken. */
  private deliver(bytes: Uint8Array): boolean {
    if (this.slot !== undefined) return false
    if (this.reader !== undefined) this.wake(bytes)
    else this.slot = bytes
    return true
  }

  private wake(bytes: Uint8Array | undefined) {
    const reader = this.reader
    this.reader = undefined
    reader?.(bytes)
  }

  /** Empties the slot, and lets a waiting writer's bytes in. */
  private next(): Uint8Array | undefined {
    const bytes = this.slot
    this.slot = undefined
    const writer = this.writer
    if (bytes !== undefined && writer !== undefined) {
      this.writer = undefined
      this.slot = writer.bytes
      writer.resume()
    }
    return bytes
  }
}

/**
 * A response the keep-alive comment can be written to directly, between the body's writes: Node's
 * `ServerResponse` (`http.ServerResponse` has all of these), which `@effect/platform-node` writes
 * each chunk of a stream body to with one `write` — a whole batch of frames — so a comment written
 * between two of them never splits a frame.
 */
export interface DirectResponse {
  readonly writableEnded: boolean
  /** The connection is gone. */
  readonly destroyed: boolean
  /** The socket is full: the platform waits for `drain` before it writes on. */
  readonly writableNeedDrain: boolean
  readonly write: (bytes: Uint8Array) => boolean
  readonly once: (event: "close", listener: () => void) => unknown
}

/**
 * The Node response `request` is written to, when the server is `@effect/platform-node`'s (see
 * {@link response}); `undefined` for another server (the web handler's, Bun's). A request without a
 * body is read to its end and let go meanwhile (see `letGoOnceRead`): a `/live` response needs
 * nothing more of it.
 */
export const directResponse = (request: HttpServerRequest.HttpServerRequest): DirectResponse | undefined => {
  if (!(request.source instanceof IncomingMessage)) return undefined
  letGoOnceRead(request.source)
  return NodeHttpServerRequest.toServerResponse(request)
}

/**
 * Lets a `/live` request's message go once read to its end, when Node has the whole message (a
 * `GET`'s, without a body), so that its client's close finds nothing of it to abort. Node aborts each
 * request whose response has not finished when its socket closes — an `ECONNRESET` error whose stack
 * it formats, `aborted` and `close` events, the stream's teardown — and a `/live` response never
 * finishes: when hundreds of watchers close together after a turn, Node's poll did all of that for
 * each of them in one turn of the event loop, which a `/healthz` probe waited behind
 * (docs/benchmarks.md, probe21). A message read to its end and destroyed is neither aborted nor its
 * socket touched, and Node's close skips it; the response needs nothing of it. A message whose body
 * is still coming is left as it was (read by nobody, so Node stops reading its socket once its
 * buffer is full): draining it would read whatever a client sends, for as long as it sends.
 */
const letGoOnceRead = (message: IncomingMessage) => {
  if (message.destroyed || !(message.complete || bodiless(message))) return
  if (message.readableEnded) {
    message.destroy()
    return
  }
  message.once("end", () => message.destroy())
  message.resume()
}

/** A request that says it has no body (no `Transfer-Encoding`, no `Content-Length` but 0): Node ends its message once the headers are read. */
const bodiless = (message: IncomingMessage) =>
  message.headers["transfer-encoding"] === undefined && (message.headers["content-length"] ?? "0") === "0"

const sseHeaders = {
  contentType: "text/event-stream",
  headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
} as const

/**
 * What a `HEAD` of `/live` answers: the headers a GET's response has, and no watch — a HEAD has no
 * body to carry events in, so none is asked of the engine.
 */
export const headResponse = (): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.empty({ status: 200, headers: { ...sseHeaders.headers, "content-type": sseHeaders.contentType } })

/**
 * The SSE response for a stream of events. With a {@link DirectResponse} (a Node server's) the
 * body is the watch itself, its chunks mapped to their shared bytes: the platform's run of the
 * body pulls the watch and writes each batch, waiting for the socket to drain before it pulls on
 * (so a client that does not read holds its watch: it then finds its oldest events gone from the
 * session's feed and reads them from the store when it goes on — see `Watchers`); the keep-alive
 * comment is written to the response by a Node timer re-armed by each batch. A response is then
 * two fibers (the request's and its body's run) — a client's close interrupts those two, where a
 * watch forked beside the body made four (the close was most of a client's cost, 1.2–3.5 ms).
 * Without one (the in-process web handler), see {@link mailboxResponse}.
 */
export const response = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration, direct?: DirectResponse) =>
  direct === undefined ? mailboxResponse(events, keepAlive) : directBody(events, keepAlive, direct)

const directBody = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration, direct: DirectResponse) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const ms = Math.max(1, Duration.toMillis(keepAlive))
  // Armed when the body's run starts (its first pull, `: connected`), so no comment precedes that one.
  const arm = () => {
    timer = setTimeout(function ping() {
      // A response that ended or whose client went away takes nothing more (and its timer is done).
      if (direct.writableEnded || direct.destroyed) return
      // One waiting for its socket to drain is busy anyway.
      if (!direct.writableNeedDrain) direct.write(keepAliveBytes)
      timer!.refresh()
    }, ms)
    // The server's lifetime is its listening socket's: a client's timer never keeps the process up.
    timer.unref()
    direct.once("close", () => clearTimeout(timer))
    return connectedBytes
  }
  const written = (bytes: Uint8Array) => {
    timer?.refresh()
    return Chunk.of(bytes)
  }
  const body = Stream.concat(
    // A first comment flushes the headers at once, so a client knows it is connected before any event.
    Stream.sync(arm),
    Stream.mapChunksEffect(events, (chunk) => (Chunk.isEmpty(chunk) ? Effect.succeed(Chunk.empty()) : Effect.map(bytesOf(chunk), written))).pipe(
      // A failed watch (the store failed mid-stream) ends the response; the client reconnects from its last id.
      Stream.catchAll((error) => Stream.drain(Stream.fromEffect(Effect.logWarning("a live stream ended", error))))
    )
  )
  return HttpServerResponse.stream(body, sseHeaders)
}

/**
 * The SSE response where the body is all there is to write to (the in-process web handler). One
 * fiber runs the watch and hands each chunk's shared bytes over (see {@link Mailbox}); the
 * response's own fiber writes them. A keep-alive comment goes out after `keepAlive` without a
 * write (a timer of the runtime, re-armed by each write, not a schedule merged into the stream: a
 * merge costs two more fibers per client and a hand-off between them per chunk).
 */
const mailboxResponse = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration) => {
  const body = Stream.unwrapScoped(Effect.gen(function*() {
    // A first comment flushes the headers at once, so a client knows it is connected before any event.
    const box = new Mailbox(connectedBytes)
    yield* Stream.runForEachChunk(events, (chunk) => (Chunk.isEmpty(chunk) ? Effect.void : Effect.flatMap(bytesOf(chunk), box.put))).pipe(
      // A failed watch (the store failed mid-stream) ends the response; the client reconnects from its last id.
      Effect.catchAll((error) => Effect.logWarning("a live stream ended", error)),
      Effect.ensuring(Effect.sync(box.end)),
      Effect.forkScoped
    )
    const ms = Math.max(1, Duration.toMillis(keepAlive))
    const timer = setTimeout(function ping() {
      box.ping()
      timer.refresh()
    }, ms)
    // The server's lifetime is its listening socket's: a client's timer never keeps the process up.
    timer.unref()
    yield* Effect.addFinalizer(() => Effect.sync(() => clearTimeout(timer)))
    return Stream.repeatEffectChunkOption(Effect.map(box.take, (bytes) => {
      timer.refresh()
      return bytes
    }))
  }))
  return HttpServerResponse.stream(body, sseHeaders)
}
