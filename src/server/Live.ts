/**
 * The `/live` response: a session's events as Server-Sent Events, written with
 * `@effect/experimental`'s SSE encoder — `id:` the sequence (what `Last-Event-ID` sends back on a
 * reconnect), `event:` the type, `data:` the stored event's JSON unchanged — with a keep-alive
 * comment whenever no event came for a while, so proxies and browsers keep the connection.
 *
 * The events come from the engine's `watchSession` (stored ones from a sequence, then live ones
 * across turns, each once). The client going away interrupts the watch only: turns run elsewhere.
 * On a Node server a session's clients share one watch ({@link fanOut}): a batch costs a client
 * one write of the bytes every client is written.
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
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
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

let encodings = 0

/** An event as an SSE message in UTF-8, encoded once however many clients send it. */
export const message = (event: AgentEvent.AgentEvent): Uint8Array => {
  let bytes = messages.get(event)
  if (bytes === undefined) {
    encodings++
    bytes = utf8.encode(encode(event))
    messages.set(event, bytes)
  }
  return bytes
}

/**
 * How many events this process has encoded as SSE messages so far (each at most once per event
 * object, whatever the number of clients sending it): what the tests count.
 *
 * @internal
 */
export const encoded = (): number => encodings

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
 * A {@link DirectResponse} a session's {@link FanOut} writes to without the client's fiber: it tells
 * how many bytes it holds that its socket has not taken yet, and when it has handed them all over.
 */
export interface FollowedResponse extends DirectResponse {
  /** Bytes written and not yet taken by the socket (Node's `writableLength`). */
  readonly writableLength: number
  readonly once: (event: "close" | "drain", listener: () => void) => unknown
  /** Holds writes until `uncork`, which hands them to the socket at once (Node's own cork waits for a tick of its own). */
  readonly cork: () => void
  readonly uncork: () => void
}

/** A fiber {@link FanOut.follow} forks for a client let go. */
export type ForkedFiber = Fiber.RuntimeFiber<void>

/** A {@link FollowedResponse} whose status and headers are written by its owner: Node's `ServerResponse`. */
export interface NodeFollowedResponse extends FollowedResponse {
  readonly writeHead: (status: number, headers: Readonly<Record<string, string>>) => unknown
  readonly end: () => unknown
}

/**
 * A `/live` answer's headers as the platform writes them (`sseHeaders`, then the guards' `nosniff`),
 * in the same order: a client answered in Node's request callback ({@link FanOut.follow}) reads
 * the same bytes.
 */
const followedHeaders = {
  "cache-control": "no-store",
  "x-accel-buffering": "no",
  "content-type": "text/event-stream",
  "x-content-type-options": "nosniff"
} as const

/**
 * The Node response `request` is written to, when the server is `@effect/platform-node`'s (see
 * {@link response}); `undefined` for another server (the web handler's, Bun's). A request without a
 * body is read to its end and let go meanwhile (see `letGoOnceRead`): a `/live` response needs
 * nothing more of it.
 */
export const directResponse = (request: HttpServerRequest.HttpServerRequest): FollowedResponse | undefined => {
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

/**
 * The keep-alive comment of a Node response: written by a Node timer, re-armed by each write
 * (`refresh`). `arm` starts it when the body's run starts (its first pull, `: connected`), so no
 * comment precedes that one, and answers that first comment.
 */
const keepAliveTimer = (direct: DirectResponse, keepAlive: Duration.Duration) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const ms = Math.max(1, Duration.toMillis(keepAlive))
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
  return { arm, refresh: () => void timer?.refresh() }
}

/** A failed watch (the store failed mid-stream) ends the response; the client reconnects from its last id. */
const endedBy = (error: unknown) => Effect.logWarning("a live stream ended", error)

const directBody = <E>(events: Stream.Stream<AgentEvent.AgentEvent, E>, keepAlive: Duration.Duration, direct: DirectResponse) => {
  const timer = keepAliveTimer(direct, keepAlive)
  const written = (bytes: Uint8Array) => {
    timer.refresh()
    return Chunk.of(bytes)
  }
  const body = Stream.concat(
    // A first comment flushes the headers at once, so a client knows it is connected before any event.
    Stream.sync(timer.arm),
    Stream.mapChunksEffect(events, (chunk) => (Chunk.isEmpty(chunk) ? Effect.succeed(Chunk.empty()) : Effect.map(bytesOf(chunk), written))).pipe(
      Stream.catchAll((error) => Stream.drain(Stream.fromEffect(endedBy(error))))
    )
  )
  return HttpServerResponse.stream(body, sseHeaders)
}

/**
 * How many bytes a client following a session's {@link FanOut} may leave unsent (written to its
 * response, not yet taken by its socket) before the fan-out stops writing to it: past that, the
 * client is let go to read on by itself from its last event once its socket has drained — the
 * gap read from the store. The bytes are the batches' shared buffers, so the clients holding the
 * same batches hold them once. Less once the session's clients let go hold
 * {@link maxSessionHeldBytes} between them.
 */
export const maxHeldBytes = 4 * 1024 * 1024

/**
 * What the clients of a session that were let go (see {@link maxHeldBytes}) may hold unsent between
 * them before the session's followers are held to what a client of a watch of its own holds. A
 * client let go keeps what its socket has not taken until its reader reads again — for a client
 * that never does, as long as its connection lasts — and clients that stalled at different points
 * hold different batches: each up to {@link maxHeldBytes} would be that much a stalled client. Once
 * they hold this much, a follower is written a batch only when its socket has taken everything it
 * was written before (else it is let go), so each further stalled client holds at most its last
 * batch, as one writing by itself does.
 */
export const maxSessionHeldBytes = 4 * 1024 * 1024

/** Bytes one step of a fan-out writes before it yields (so the loop turns between big writes to hundreds of sockets). */
const bytesPerStep = 256 * 1024
/** How long one step of a fan-out writes before it yields. */
const msPerStep = 2
/** A fan-out's writes of a batch that took less than this are not followed by a pause (see `deliver`). */
const minPauseMs = 1
/** The longest pause after a batch's writes (see `deliver`). */
const maxPauseMs = 20

/**
 * Waits `ms` of real time on a plain timer, not Effect's `Clock`: the pause is as long as the
 * batch's writes took on the wall clock, and a `TestClock` (an embedder's test of the fan-out)
 * standing still would never end it — the shared watch frozen for every follower. Interrupted, it
 * clears its timer.
 */
const pause = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Written to the socket now, not in a tick of Node's: the time it takes is in the step's clock. */
const writeNow = (direct: FollowedResponse, bytes: Uint8Array) => {
  direct.cork()
  direct.write(bytes)
  direct.uncork()
}

/** A client following a session's shared watch. */
interface Follower {
  readonly sessionId: string
  readonly direct: FollowedResponse
  /** The last sequence written to it. */
  last: number
  /** The shared watch it follows, while it does. */
  hub: Hub | undefined
  /** Wakes its fiber once let go: it writes on by itself from `last + 1`. */
  wake: (() => void) | undefined
  /** Let go and not following again yet: what its response holds counts against the session's budget ({@link maxSessionHeldBytes}). */
  loose: boolean
  /** The keep-alive timer's re-arm. */
  readonly written: () => void
}

/** A session's shared watch: every batch of it encoded once and written to each follower. */
interface Hub {
  readonly sessionId: string
  readonly followers: Set<Follower>
  /** The last sequence handed to the followers: each has every event up to it, and is handed every later one. */
  last: number
  fiber: Fiber.RuntimeFiber<void> | undefined
  /**
   * Its last batches, oldest first, up to {@link recentBytes} (and the last whatever its size): a
   * client a few events behind catches up from them as it joins (see `join`).
   */
  readonly recent: Array<Batch>
  /** The bytes of `recent`. */
  recentBytes: number
}

/** A batch the shared watch handed out: its events (consecutive sequences) and their bytes. */
interface Batch {
  readonly events: ReadonlyArray<AgentEvent.AgentEvent>
  readonly bytes: Uint8Array
}

/**
 * How many bytes of its last batches a session's shared watch keeps for the clients that join it a
 * little behind (see `join`) — a client that connects from the session's start while the watch is
 * a batch or two ahead, as hundreds do when they connect together (row 18 of docs/benchmarks.md).
 * Past them, a client reads what it misses from the store as before.
 */
export const recentBytes = 256 * 1024

/**
 * The `/live` responses of an engine's sessions on a Node server, each session's clients fed by one
 * watch (see {@link fanOut}).
 */
export interface FanOut {
  /**
   * The `/live` response of a session from `fromSequence` on, written to `direct`. `sessionEnd`: the
   * session's last event when the client asked (a shared watch this client starts starts no later
   * than there, though the client asks for events past the session's end).
   */
  readonly response: (sessionId: string, fromSequence: number, keepAlive: Duration.Duration, direct: FollowedResponse, sessionEnd?: number) => HttpServerResponse.HttpServerResponse
  /**
   * Answers a `/live` request in Node's request callback, without a fiber, when the session has a
   * shared watch that reaches back to `fromSequence` (its last batches, see {@link recentBytes}):
   * the SSE headers, the first comment and what the client missed are written in one write, and the
   * client follows the watch — its cost from then on a write a batch, as any follower's. Only a
   * client let go (its socket full, see {@link maxHeldBytes}) gets a fiber, `fork`ed, which reads
   * the gap through its own watch and ends once it follows again. False, having done nothing, when
   * there is no such watch: the request goes the platform's way ({@link response}). The caller has
   * checked the request as the server's guards and the route would (`Handlers`).
   */
  readonly follow: (
    sessionId: string,
    fromSequence: number,
    keepAlive: Duration.Duration,
    direct: NodeFollowedResponse,
    request: IncomingMessage,
    fork: (effect: Effect.Effect<void>) => ForkedFiber
  ) => boolean
  /** How many clients of a session follow its shared watch now. @internal */
  readonly following: (sessionId: string) => number
}

/**
 * `/live` on a Node server with one watch per session, not per client (issue 20's paced turns: a
 * model's stream commits about one delta at a time, and a watch per client cost every client a
 * fiber's wake-up and a run through the stream's machinery per commit, ~80 µs of the server's CPU an
 * event a client with 100 clients). A session's clients that have every event up to the shared
 * watch's last follow it: its fiber takes each batch from the session's feed, encodes it once
 * ({@link bytesOf}) and writes the same bytes to each follower's response — a client's cost per
 * batch is a `write`, its fiber parked. A client a batch or two behind is written what it missed
 * from the shared watch's last batches as it joins ({@link recentBytes}). A client further behind
 * (one that asked for older events, or was let go) writes by itself through its own watch, as
 * {@link response} does — the platform writing each batch once its socket has room — until it has
 * caught up, then follows. A follower whose socket holds more than {@link maxHeldBytes} unsent
 * (less once the session's clients let go hold {@link maxSessionHeldBytes}) is written to no more:
 * it is let go, and once its socket has drained its own watch reads what it missed from the store,
 * then live events until it follows again — every event once, in order, on the same connection; a
 * stalled client costs at most that many bytes (shared with the others') and holds neither the
 * loop nor the other clients. The shared watch ends when its last follower leaves.
 */
export const fanOut = <E>(watch: (sessionId: string, fromSequence: number) => Stream.Stream<AgentEvent.AgentEvent, E>, options?: {
  /** See {@link maxHeldBytes}. */
  readonly maxHeldBytes?: number
  /** See {@link maxSessionHeldBytes}. */
  readonly maxSessionHeldBytes?: number
  /** See {@link recentBytes}. */
  readonly recentBytes?: number
}): FanOut => {
  const maxHeld = options?.maxHeldBytes ?? maxHeldBytes
  const maxSessionHeld = options?.maxSessionHeldBytes ?? maxSessionHeldBytes
  const keptBytes = options?.recentBytes ?? recentBytes
  const hubs = new Map<string, Hub>()
  /** Each session's clients let go that do not follow again yet (see {@link maxSessionHeldBytes}). */
  const loose = new Map<string, Set<Follower>>()

  /** Follows again, or gone: what it holds is a follower's, or nobody's. */
  const tighten = (follower: Follower) => {
    if (!follower.loose) return
    follower.loose = false
    const set = loose.get(follower.sessionId)
    if (set === undefined) return
    set.delete(follower)
    if (set.size === 0) loose.delete(follower.sessionId)
  }

  /** What a session's clients let go hold unsent now (those drained or gone count nothing). */
  const looseHeld = (sessionId: string): number => {
    const set = loose.get(sessionId)
    if (set === undefined) return 0
    let held = 0
    for (const follower of set) {
      const direct = follower.direct
      if (!direct.destroyed && !direct.writableEnded) held += direct.writableLength
    }
    return held
  }

  const leave = (follower: Follower) => {
    const hub = follower.hub
    if (hub === undefined) return
    follower.hub = undefined
    hub.followers.delete(follower)
    if (hub.followers.size > 0) return
    if (hubs.get(hub.sessionId) === hub) hubs.delete(hub.sessionId)
    hub.fiber?.unsafeInterruptAsFork(FiberId.none)
  }

  /** Let go: its fiber writes on by itself. */
  const letGo = (follower: Follower) => {
    leave(follower)
    if (!follower.loose) {
      follower.loose = true
      const set = loose.get(follower.sessionId)
      if (set === undefined) loose.set(follower.sessionId, new Set([follower]))
      else set.add(follower)
    }
    const wake = follower.wake
    follower.wake = undefined
    wake?.()
  }

  /**
   * A batch's bytes to one follower; how many were written. `budget`: what the session's clients let
   * go may still hold (see {@link maxSessionHeldBytes}), less what this one holds when it is let go.
   */
  const hand = (hub: Hub, follower: Follower, events: ReadonlyArray<AgentEvent.AgentEvent>, bytes: Uint8Array, budget: { left: number }): number => {
    if (follower.hub !== hub) return 0
    const first = events[0]!.sequence
    const last = events[events.length - 1]!.sequence
    if (follower.last >= last) return 0
    const direct = follower.direct
    // Gone: its close lets it go.
    if (direct.destroyed || direct.writableEnded) return 0
    const held = direct.writableLength
    if (held > Math.min(maxHeld, budget.left) || follower.last < first - 1) {
      budget.left = Math.max(0, budget.left - held)
      letGo(follower)
      return 0
    }
    // A follower that joined with some of the batch already written: the rest, encoded events shared.
    const out = follower.last < first ? bytes : joined(Chunk.unsafeFromArray(events.slice(follower.last - first + 1)))
    follower.last = last
    writeNow(direct, out)
    follower.written()
    return out.length
  }

  /**
   * A batch to every follower, once encoded; a yield whenever a step has written `bytesPerStep` or
   * taken `msPerStep`. Then, when the writes took a while, a pause as long (up to `maxPauseMs`)
   * before the next batch is taken: a socket write costs about the same for one event as for many
   * (tens of µs on loopback, the kernel's send and the reader's wake-up), so while the server's
   * writes use half its time the batches grow instead — a hundred clients of a model streaming a
   * delta a millisecond cost a write each per few deltas, not per delta, and the turn itself
   * (its commits, in the same process) is not slowed to the pace of the writes.
   */
  const deliver = (hub: Hub, chunk: Chunk.Chunk<AgentEvent.AgentEvent>): Effect.Effect<void> => {
    if (Chunk.isEmpty(chunk)) return Effect.void
    return Effect.flatMap(bytesOf(chunk), (bytes) => {
      const events = Chunk.toReadonlyArray(chunk)
      const followers = Array.from(hub.followers)
      hub.last = Math.max(hub.last, events[events.length - 1]!.sequence)
      remember(hub, events, bytes)
      const budget = { left: Math.max(0, maxSessionHeld - looseHeld(hub.sessionId)) }
      let next = 0
      let spent = 0
      const step = (): Effect.Effect<void> => {
        const start = performance.now()
        let written = 0
        let now = start
        while (next < followers.length && written < bytesPerStep && now - start < msPerStep) {
          written += hand(hub, followers[next++]!, events, bytes, budget)
          now = performance.now()
        }
        spent += now - start
        if (next < followers.length) return Effect.zipRight(Effect.yieldNow(), Effect.suspend(step))
        return spent < minPauseMs ? Effect.void : pause(Math.min(spent, maxPauseMs))
      }
      return step()
    })
  }

  /** The shared watch's run; once it ends (its watch failed), every follower is let go: each reads on by itself. */
  const run = (hub: Hub): Effect.Effect<void> =>
    Stream.runForEachChunk(Stream.suspend(() => watch(hub.sessionId, hub.last + 1)), (chunk) => deliver(hub, chunk)).pipe(
      Effect.catchAllCause(() => Effect.void),
      Effect.ensuring(Effect.sync(() => {
        if (hubs.get(hub.sessionId) === hub) hubs.delete(hub.sessionId)
        for (const follower of Array.from(hub.followers)) letGo(follower)
      }))
    )

  /** Keeps a batch in the hub's `recent`, the oldest let go past {@link recentBytes} (the last is kept whatever its size). */
  const remember = (hub: Hub, events: ReadonlyArray<AgentEvent.AgentEvent>, bytes: Uint8Array) => {
    hub.recent.push({ events, bytes })
    hub.recentBytes += bytes.length
    while (hub.recent.length > 1 && hub.recentBytes > keptBytes) hub.recentBytes -= hub.recent.shift()!.bytes.length
  }

  /** Whether the hub's recent batches hold every event after `last` it has handed out. */
  const reaches = (hub: Hub, last: number): boolean => {
    const oldest = hub.recent[0]
    return oldest !== undefined && oldest.events[0]!.sequence <= last + 1
  }

  /**
   * The bytes of the hub's events after `last`, from its recent batches — the events' shared
   * messages, no store read and no encoding — or undefined when they do not reach back that far.
   */
  const catchUp = (hub: Hub, last: number): Uint8Array | undefined => {
    if (!reaches(hub, last)) return undefined
    const parts: Array<Uint8Array> = []
    for (const batch of hub.recent) {
      const first = batch.events[0]!.sequence
      if (batch.events[batch.events.length - 1]!.sequence <= last) continue
      parts.push(first > last ? batch.bytes : joined(Chunk.unsafeFromArray(batch.events.slice(last - first + 1))))
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts)
  }

  /** Follows `hub`, written what it missed from the hub's recent batches first; false when they do not reach back that far. */
  const joinHub = (hub: Hub, follower: Follower): boolean => {
    if (follower.last < hub.last) {
      const missed = catchUp(hub, follower.last)
      if (missed === undefined) return false
      follower.last = hub.last
      writeNow(follower.direct, missed)
      follower.written()
    }
    hub.followers.add(follower)
    follower.hub = hub
    tighten(follower)
    return true
  }

  /**
   * A client answered in Node's request callback (see {@link FanOut.follow}) that was let go: a fiber
   * of its own reads what it missed through its own watch once its socket has drained, writes each
   * batch (waiting for the socket to take it), and ends once the session's shared watch reaches it
   * again and it follows (`rejoin`) — or ends the response when its watch ends, as the platform's
   * run of a `/live` body does.
   */
  const alone = (follower: Follower, direct: NodeFollowedResponse, rejoin: (hub: Hub) => boolean): Effect.Effect<void> =>
    Effect.scoped(Effect.gen(function*() {
      yield* drained(direct)
      const pull = yield* Stream.toPull(watch(follower.sessionId, follower.last + 1))
      while (!direct.destroyed && !direct.writableEnded) {
        const taken = yield* Effect.either(pull)
        if (taken._tag === "Left") {
          if (Option.isSome(taken.left)) yield* endedBy(taken.left.value)
          direct.end()
          return
        }
        const chunk = taken.right
        if (Chunk.isEmpty(chunk)) continue
        const bytes = yield* bytesOf(chunk)
        follower.last = Chunk.unsafeLast(chunk).sequence
        direct.write(bytes)
        follower.written()
        yield* drained(direct)
        const hub = hubs.get(follower.sessionId)
        // Its own watch goes on while no shared one reaches it (one started by another client; none: it reads on alone).
        if (hub !== undefined && (follower.last >= hub.last || reaches(hub, follower.last)) && rejoin(hub)) return
      }
    }))

  /**
   * Follows the session's shared watch (started when there is none); false when it is ahead of the
   * follower by more than its recent batches (see {@link recentBytes}) — by those, the follower is
   * written them as it joins. A watch it starts starts no later than the session's end (`sessionEnd`): a client that
   * asked for events past it (an `after=` from the future) would else start it there, and every
   * client that has the session's events would be behind it — each writing by itself for as long as
   * that client stayed.
   */
  const join = (sessionId: string, follower: Follower, sessionEnd: number | undefined): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      const hub = hubs.get(sessionId)
      if (hub !== undefined) return Effect.succeed(joinHub(hub, follower))
      const last = sessionEnd === undefined ? follower.last : Math.min(follower.last, sessionEnd)
      const started: Hub = { sessionId, followers: new Set([follower]), last, fiber: undefined, recent: [], recentBytes: 0 }
      hubs.set(sessionId, started)
      follower.hub = started
      tighten(follower)
      // A daemon: it outlives the follower that started it while others follow; the last to leave stops it.
      return Effect.map(Effect.forkDaemon(run(started)), (fiber) => {
        started.fiber = fiber
        // Left before its fiber was known.
        if (started.followers.size === 0) fiber.unsafeInterruptAsFork(FiberId.none)
        return true
      })
    })

  /** Parked while following; resumes once let go (or at once, when let go already). */
  const parked = (follower: Follower) =>
    Effect.async<void>((resume) => {
      if (follower.hub === undefined) return resume(Effect.void)
      follower.wake = () => resume(Effect.void)
      return Effect.sync(() => {
        follower.wake = undefined
        leave(follower)
      })
    })

  /** Once the response's socket has taken what it holds (or at once). */
  const drained = (direct: FollowedResponse) =>
    Effect.async<void>((resume) => {
      if (!direct.writableNeedDrain || direct.destroyed || direct.writableEnded) return resume(Effect.void)
      // Gone before it drains: the platform interrupts this fiber.
      direct.once("drain", () => resume(Effect.void))
    })

  const body = (sessionId: string, fromSequence: number, direct: FollowedResponse, written: () => void, sessionEnd: number | undefined) =>
    Effect.gen(function*() {
      const follower: Follower = { sessionId, direct, last: fromSequence - 1, hub: undefined, wake: undefined, written, loose: false }
      /** The client's own watch, while it writes by itself. */
      let own: { readonly pull: Effect.Effect<Chunk.Chunk<AgentEvent.AgentEvent>, Option.Option<E>>; readonly scope: Scope.CloseableScope } | undefined
      /** Whether it may follow the shared watch: not right after it was let go (its own watch reads the gap first). */
      let mayFollow = true
      const closeOwn = Effect.suspend(() => {
        const closing = own
        own = undefined
        return closing === undefined ? Effect.void : Scope.close(closing.scope, Exit.void)
      })
      yield* Effect.addFinalizer(() =>
        Effect.zipRight(
          Effect.sync(() => {
            leave(follower)
            tighten(follower)
          }),
          closeOwn
        )
      )
      const ownPull = Effect.suspend(() => {
        if (own !== undefined) return Effect.succeed(own.pull)
        // Uninterruptible: a scope made is one the finalizer closes (the pull only runs the watch when pulled).
        return Effect.uninterruptible(Effect.flatMap(Scope.make(), (scope) =>
          Effect.map(Scope.extend(Stream.toPull(watch(sessionId, follower.last + 1)), scope), (pull) => {
            own = { pull, scope }
            return pull
          })))
      })
      const byItself: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<never>> = Effect.flatMap(ownPull, (pull) =>
        Effect.matchEffect(pull, {
          onFailure: (error) => Option.isNone(error) ? Effect.fail(Option.none()) : Effect.zipRight(endedBy(error.value), Effect.fail(Option.none())),
          onSuccess: (chunk) => {
            // Only the events past what was written (a watch from `last + 1` has no other).
            if (Chunk.isEmpty(chunk)) return Effect.succeed(Chunk.empty<Uint8Array>())
            return Effect.map(bytesOf(chunk), (bytes) => {
              follower.last = Chunk.unsafeLast(chunk).sequence
              mayFollow = true
              written()
              return Chunk.of(bytes)
            })
          }
        }))
      const next: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<never>> = Effect.suspend(() => {
        if (!mayFollow) return byItself
        const hub = hubs.get(sessionId)
        // Behind the shared watch by more than its recent batches; or writing by itself with none to
        // follow (a client let go, the others gone): it goes on with its own, rather than start one
        // from where it is each batch.
        if (hub === undefined ? own !== undefined : follower.last < hub.last && !reaches(hub, follower.last)) return byItself
        return Effect.flatMap(Effect.zipRight(closeOwn, join(sessionId, follower, sessionEnd)), (following) =>
          following
            ? Effect.zipRight(parked(follower), Effect.suspend(() => {
              // Let go: its own watch reads on once the socket has room.
              mayFollow = false
              return Effect.as(drained(direct), Chunk.empty<Uint8Array>())
            }))
            : byItself)
      })
      return Stream.repeatEffectChunkOption(next)
    })

  const follow: FanOut["follow"] = (sessionId, fromSequence, keepAlive, direct, request, fork) => {
    const hub = hubs.get(sessionId)
    if (hub === undefined) return false
    if (fromSequence - 1 < hub.last && !reaches(hub, fromSequence - 1)) return false
    letGoOnceRead(request)
    const timer = keepAliveTimer(direct, keepAlive)
    const follower: Follower = { sessionId, direct, last: fromSequence - 1, hub: undefined, wake: undefined, written: timer.refresh, loose: false }
    let fiber: Fiber.RuntimeFiber<void> | undefined
    const rejoin = (to: Hub) => {
      follower.wake = wake
      return joinHub(to, follower)
    }
    const wake = () => {
      fiber = fork(alone(follower, direct, rejoin))
    }
    direct.once("close", () => {
      leave(follower)
      tighten(follower)
      fiber?.unsafeInterruptAsFork(FiberId.none)
    })
    // The headers, the first comment and what it missed in one write.
    direct.cork()
    direct.writeHead(200, followedHeaders)
    direct.write(timer.arm())
    rejoin(hub)
    direct.uncork()
    return true
  }

  return {
    following: (sessionId) => hubs.get(sessionId)?.followers.size ?? 0,
    follow,
    response: (sessionId, fromSequence, keepAlive, direct, sessionEnd) => {
      const timer = keepAliveTimer(direct, keepAlive)
      const stream = Stream.concat(
        // A first comment flushes the headers at once, so a client knows it is connected before any event.
        Stream.sync(timer.arm),
        Stream.unwrapScoped(body(sessionId, fromSequence, direct, timer.refresh, sessionEnd))
      )
      return HttpServerResponse.stream(stream, sseHeaders)
    }
  }
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
