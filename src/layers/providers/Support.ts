/**
 * What the vendor providers share: turning an SDK's streamed response into an Effect `Stream` that
 * aborts the request when interrupted and fails when the stream stalls, and reading the status and
 * headers of the SDKs' errors.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { formatWithOptions } from "node:util"
import * as Address from "../../domain/Address.js"
import * as ApiKey from "../../domain/ApiKey.js"
import * as FormatCharacters from "../../domain/FormatCharacters.js"
import { ProviderFailure, type ProviderFailureReason } from "../../domain/Errors.js"
import type { Json } from "../../domain/Json.js"
import * as MonotonicTime from "../../domain/MonotonicTime.js"
import type { Message } from "../../domain/Transcript.js"
import * as ModelProvider from "../../services/ModelProvider.js"
import * as BoundedFetch from "./BoundedFetch.js"

/**
 * The wait a server asked for, in milliseconds: `retry-after-ms` when it is a non-negative number
 * (an empty one read as `Number("")`, 0, and hid the `retry-after` beside it), else `retry-after` as
 * decimal seconds (`Infinity` as the longest wait; `0x10` is no number of seconds) or an HTTP date.
 */
export const retryAfterMs = (headers: { get(name: string): string | null } | undefined, now: number): number | undefined => {
  const millis = headers?.get("retry-after-ms")?.trim()
  if (millis !== undefined && decimal.test(millis) && Number(millis) >= 0) return wholeWait(Number(millis))
  const value = headers?.get("retry-after")?.trim()
  if (value === undefined || value === "") return undefined
  if (decimal.test(value)) return wholeWait(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : wholeWait(date - now)
}

/** A number written in decimal, as a header's delta-seconds is (and `Infinity`): not `0x10`, `0b1` or `""`, which `Number` reads too. */
const decimal = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Infinity)$/

/**
 * A wait as the whole, non-negative, safe-integer milliseconds `ProviderFailure.retryAfterMs` holds:
 * a finite wait past `Number.MAX_SAFE_INTEGER` (`retry-after: 1e20`) made the failure refuse to be
 * built, and the turn ended `internal_error` instead of `rate_limited`. Clamped, it is still far
 * over `Retry.maxRetryAfter`, so the turn ends as for any wait too long.
 */
const wholeWait = (millis: number): number =>
  Number.isNaN(millis) ? 0 : Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(millis)))

/**
 * A failure of the project's own inside what an SDK threw: `BoundedFetch` fails a request (a redirect
 * to another origin) before any response, and both SDKs wrap what their `fetch` throws as a
 * connection error (`cause`), which read as "could not reach".
 */
export const ownFailure = (error: unknown): ProviderFailure | undefined => {
  for (let e = error, depth = 0; typeof e === "object" && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ProviderFailure) return e
  }
  return undefined
}

/** The failure for an HTTP status when the vendor's error type says nothing more specific. */
export const reasonOfStatus = (status: number): ProviderFailureReason => {
  if (status === 429) return "rate_limited"
  if (status === 529) return "overloaded"
  if (status === 401 || status === 403) return "authentication"
  if (status === 408) return "network"
  if (status >= 500) return "server"
  if (status >= 400) return "invalid_request"
  return "unknown"
}

/** The status, headers and vendor error type of an SDK error, whichever it has. */
export interface ErrorShape {
  readonly status: number | undefined
  readonly headers: { get(name: string): string | null } | undefined
  readonly type: string | undefined
  readonly code: string | undefined
  readonly message: string
}

/** Reads the parts of an SDK error both vendors' errors share. */
export const shapeOf = (error: unknown): ErrorShape => {
  const e = error as { status?: unknown; headers?: unknown; type?: unknown; code?: unknown; message?: unknown }
  const headers = typeof (e?.headers as { get?: unknown } | undefined)?.get === "function"
    ? e.headers as { get(name: string): string | null }
    : undefined
  return {
    status: typeof e?.status === "number" ? e.status : undefined,
    headers,
    type: typeof e?.type === "string" ? e.type : undefined,
    code: typeof e?.code === "string" ? e.code : undefined,
    message: typeof e?.message === "string" ? e.message : String(error)
  }
}

/**
 * Whether the SDK failed on an event nested too deep for it: both SDKs build an `error` event's
 * message with a recursive `JSON.stringify`, which overflows the stack at 100,000 levels (`JSON.parse`
 * took them). Nothing of the event can be read then, so it ends `server`, as an unreadable event does
 * — the code the same event gets when shallow (`api_error`, `server_error`), and retried alike — with
 * {@link tooDeepDetail}, never the RangeError's message or stack. Only a stack overflow: any
 * `RangeError` was taken for one, and a string past V8's longest (`Invalid string length`, an event
 * that never ended) read "nested too deep" and was retried.
 */
export const isTooDeep = (error: unknown): boolean => error instanceof RangeError && /call stack/i.test(error.message)

/** The most characters of a failure's detail ({@link loggableDetail}): a vendor's message is a sentence or two. */
export const maxDetailChars = 2000

/** The fewest characters of a secret that are looked for in a detail (a shorter one would blank ordinary words). */
const minSecretChars = 8

/**
 * A failure's detail as it may be logged. The detail keeps the vendor's message (what says a model
 * is unknown or a request too large), and an endpoint's error body may echo what it was sent: a
 * gateway's "invalid x-api-key sk-ant-…", a stack with its server's paths. Each of `secrets` (the
 * API key) is `[redacted]` wherever it is, and so is its start where the text ends (an error body
 * cut at its bound inside the key); control and format characters are escaped (`\u000a`), so a
 * detail is one line that shows what is there; and it is cut at {@link maxDetailChars}, after the
 * secrets went, so the cut never leaves a part of one.
 */
export const loggableDetail = (detail: string, secrets: ReadonlyArray<string>): string => {
  let text = detail
  for (const secret of secrets) {
    if (secret.length < minSecretChars) continue
    text = text.split(secret).join("[redacted]")
    for (let length = secret.length - 1; length >= minSecretChars; length--) {
      if (text.endsWith(secret.slice(0, length))) {
        text = `${text.slice(0, text.length - length)}[redacted]`
        break
      }
    }
  }
  text = FormatCharacters.escapeUnprintable(text)
  return text.length <= maxDetailChars ? text : `${text.slice(0, maxDetailChars)}… (${text.length} characters)`
}

/** `failure` with its detail {@link loggableDetail}; the same failure when that changed nothing. */
export const loggableFailure = (failure: ProviderFailure, secrets: ReadonlyArray<string>): ProviderFailure =>
  withDetail(failure, loggableDetail(failure.detail, secrets))

/** `failure` with `detail` instead of its own; the same failure when they are the same. */
export const withDetail = (failure: ProviderFailure, detail: string): ProviderFailure => {
  if (detail === failure.detail) return failure
  const { cause, reason, retryAfterMs, retryDelayMs, status } = failure
  return new ProviderFailure({
    reason,
    detail,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
    ...(cause === undefined ? {} : { cause })
  })
}

/** What the SDKs log through: both take an object of these four. */
export interface SdkLogger {
  readonly error: (...args: Array<unknown>) => void
  readonly warn: (...args: Array<unknown>) => void
  readonly info: (...args: Array<unknown>) => void
  readonly debug: (...args: Array<unknown>) => void
}

/**
 * The logger a vendor SDK's client is made with. Without one, an SDK logs to `console` — at
 * `ANTHROPIC_LOG=debug` / `OPENAI_LOG=debug`, every request and response on stdout, where the CLI's
 * `run` prints its answer and ACP speaks JSON-RPC. This one writes each line to stderr, as
 * {@link loggableDetail} shows a detail: the key `[redacted]`, escaped, bounded (a debug line holds
 * the whole request). The SDK still decides what it logs (its `*_LOG` level, `warn` by default).
 * A warning repeated word for word (a deprecation notice, once per request and retry) is written once.
 */
export const sdkLogger = (vendor: string, secrets: ReadonlyArray<string>, write: (line: string) => void = (line) => void process.stderr.write(line)): SdkLogger => {
  // A warning the SDK repeats (a deprecation notice, on every request and retry) is written once.
  const warned = new Set<string>()
  const at = (level: string) => (...args: Array<unknown>) => {
    try {
      const line = `${vendor} sdk ${level}: ${loggableDetail(formatWithOptions({ depth: 4, breakLength: Infinity }, ...args), secrets)}\n`
      if (level === "warn") {
        if (warned.has(line)) return
        if (warned.size < 256) warned.add(line)
      }
      write(line)
    } catch {
      // A line that cannot be written (stderr closed) is not the request's failure.
    }
  }
  return { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") }
}

/** The detail of {@link isTooDeep}'s failure. */
export const tooDeepDetail = "the response held an event nested too deep to read"

/**
 * Whether a vendor's 400 says the endpoint has extended thinking on and wants the response's signed
 * thinking blocks back before its `tool_use` (Anthropic: "Expected `thinking` or `redacted_thinking`,
 * but found `tool_use`"). The Anthropic adapter and the `@effect/ai` bridge keep thinking and send it
 * back to the model that wrote it, so this comes only of a request that lost it (a summary, a switch
 * of model) to an endpoint that thinks.
 */
export const isThinkingRequired = (message: string): boolean =>
  /expected\s+`?(redacted_)?thinking`?.*but found\s+`?(tool_use|text)`?|must start with a thinking block/is.test(message)

/** The detail of {@link isThinkingRequired}'s failure: what happened and what to do, for the log. */
export const thinkingRequiredDetail =
  "the endpoint has extended thinking on and wants its signed thinking blocks sent back before a tool call, and this request has none " +
  "(a summary or a switch of model left them out, docs/embedding-notes.md): turn thinking off at the endpoint, or continue on the model that wrote them"

/** What Node and undici name a connection that broke: reset, closed mid-body, timed out. */
const brokenConnection = /^(ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|UND_ERR_SOCKET|UND_ERR_CLOSED|UND_ERR_ABORTED)$/

/**
 * Whether an error is the connection breaking mid-response, at any depth of its `cause`s: undici
 * fails a body read with `TypeError: terminated`, its cause the socket's error (`ECONNRESET`,
 * `UND_ERR_SOCKET` "other side closed"). Neither SDK wraps it, so it read as `unknown` (not retried);
 * it is `network`, as a stall or a refused connection is.
 */
export const isBrokenConnection = (error: unknown): boolean => {
  for (let e = error, depth = 0; typeof e === "object" && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message, name } = e as { code?: unknown; message?: unknown; name?: unknown }
    if (typeof code === "string" && brokenConnection.test(code)) return true
    if (name === "TypeError" && message === "terminated") return true
  }
  return false
}

/** The system's code of a connection that could not be made (`ECONNREFUSED`, `ENOTFOUND`), at any depth of its `cause`s. */
const connectionCode = (error: unknown): string | undefined => {
  for (let e = error, depth = 0; typeof e === "object" && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const { code } = e as { code?: unknown }
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code
  }
  return undefined
}

/**
 * The detail of a connection the SDK could not make: its message ("Connection error.") said
 * nothing of where — a `--base-url` pointing at nothing read the same as a network down. It names
 * the address ({@link Address.shown}: no userinfo, query or fragment) and the system's code.
 */
export const unreachable = (message: string, error: unknown, baseURL: string): string => {
  const code = connectionCode(error)
  return `could not reach ${Address.shown(baseURL)}${code === undefined ? "" : ` (${code})`}: ${message}`
}

/** The content types of a body that is no event stream, whatever it holds: a proxy's page, an error in JSON. */
const notAStream = /^\s*(text\/html|application\/(problem\+)?json)\b/i

/**
 * An error a vendor put in a JSON body (`{error: {type, code, message}}`, Anthropic's with
 * `type: "error"` around it), shaped as the SDKs' errors are for {@link shapeOf}: no status, since
 * the response's 200 says nothing.
 */
export class ErrorBody extends Error {
  constructor(readonly type: string | undefined, readonly code: string | undefined, message: string) {
    super(message)
  }
}

/** The first `limit` bytes of a body as text; the rest is not read. */
const bodyStart = async (response: Response, limit: number): Promise<string> => {
  const reader = response.body?.getReader()
  if (reader === undefined) return ""
  const parts: Array<Uint8Array> = []
  let size = 0
  try {
    while (size < limit) {
      const { done, value } = await reader.read()
      if (done) break
      parts.push(value)
      size += value.length
    }
  } finally {
    void reader.cancel().catch(() => undefined)
  }
  return new TextDecoder().decode(Buffer.concat(parts).subarray(0, limit))
}

/** The error a JSON body names, if it names one. */
const errorOfBody = (text: string): ErrorBody | undefined => {
  try {
    const error = (JSON.parse(text) as { error?: unknown } | null)?.error
    if (typeof error !== "object" || error === null) return undefined
    const { code, message, type } = error as Record<string, unknown>
    return new ErrorBody(
      typeof type === "string" ? type : undefined,
      typeof code === "string" ? code : undefined,
      typeof message === "string" ? message : "the response's body was an error"
    )
  } catch {
    return undefined
  }
}

/**
 * The streamed response of an SDK's request, unless its body is plainly no event stream: both SDKs
 * read any 200 as SSE, and an HTML page (a proxy's, a captive portal's) or a JSON error body holds no
 * event — the stream ended at once and read as a connection closed early (`network`). Such a body
 * fails with the error its JSON names (translated as the vendor's), else as `server`; the page itself
 * goes nowhere (a detail names its status and type). A body of any other type is read as SSE, as
 * before: a compatible server may label its stream loosely.
 */
export const eventStream = async <A>(
  request: { withResponse(): Promise<{ readonly data: AsyncIterable<A>; readonly response: Response }> }
): Promise<AsyncIterable<A>> => {
  const { data, response } = await request.withResponse()
  const type = response.headers.get("content-type") ?? ""
  if (!notAStream.test(type)) return data
  const named = /json/i.test(type) ? errorOfBody(await bodyStart(response, BoundedFetch.errorBodyBytes)) : undefined
  if (named !== undefined) throw named
  void response.body?.cancel().catch(() => undefined)
  throw ProviderFailure.of("server", `the response (HTTP ${response.status}, ${type.split(";")[0]!.trim()}) was not an event stream`)
}

/** Options of {@link fromSdk}. */
export interface StreamOptions<A> {
  /** Starts the request; the SDK gets `signal` so interruption aborts the HTTP request. */
  readonly open: (signal: AbortSignal) => Promise<AsyncIterable<A>>
  /** Translates anything the SDK throws. */
  readonly toFailure: (error: unknown) => ProviderFailure
  /** Fail with `network` when no event arrives for this long. */
  readonly idleTimeout: Duration.DurationInput
}

/**
 * The longest wait `setTimeout` takes (2^31 - 1 ms, about 24.8 days): it runs a longer one after
 * 1 ms, so an idle timeout of 30 days re-armed its watch every millisecond (a core's half, and a
 * `TimeoutOverflowWarning` each time). A longer wait is watched in waits of this length.
 */
export const maxTimerMs = 2 ** 31 - 1

/** The class of the real `Clock` (effect's default), told apart from a test's. */
const realClock: unknown = Object.getPrototypeOf(Clock.make())

/** How many SDK events may wait for the engine before the SDK's reads are held back. */
const pendingCapacity = 4096

/**
 * How many SDK events end a window's gathering early (as the engine's commit window ends at 1,024
 * pieces): a flood is handed over in batches of this many at most, never held for the window.
 */
const windowEvents = 1024

/**
 * An SDK's streamed response as a `Stream`. Interrupting it aborts the request (the server sees the
 * connection close); no event for `idleTimeout` (by the `Clock`) fails it as a stalled stream.
 *
 * The SDK's iterator is read by a plain loop into a buffer, and the stream hands over everything
 * buffered at each pull: a vendor's one event per SSE message costs no fiber step of its own, and
 * the engine gets what arrived since its last pull as one chunk. Read by the engine (its run-ahead
 * tells the stream its commit window, `ModelProvider.currentHandOff`), what arrives once the engine
 * has its response's first piece is gathered for the window (from the last hand-over; 1,024 events
 * end it early) and handed over together — one wake-up of the engine's reader a window, not one a
 * delta, for a vendor pacing one delta per socket read; everything before that first piece goes at
 * once, so a step's first delta is never held. The end of the stream, a failure or a stall hands
 * over what is gathered first; closing the stream (a cancel) drops it with the request. One timer
 * watches for a stall, re-armed from the time of the last event, rather than one per event.
 */
export const fromSdk = <A>(options: StreamOptions<A>): Stream.Stream<A, ProviderFailure> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const clock = yield* Effect.clock
    // The engine's reader's window, if the engine is reading (`runAheadIn`): read once, as the stream starts.
    const handOff = yield* FiberRef.get(ModelProvider.currentHandOff)
    const idleMs = Duration.toMillis(Duration.decode(options.idleTimeout))
    /** How a failed read ends the stream: the vendor's failure, or a defect if translating it threw (as with `Effect.tryPromise`). */
    const failedRead = (error: unknown): Exit.Exit<void, ProviderFailure> => {
      try {
        return Exit.fail(options.toFailure(error))
      } catch (defect) {
        return Exit.die(defect)
      }
    }
    const stalled = () => ProviderFailure.of("network", `the response stream stalled: no event for ${Duration.format(Duration.decode(options.idleTimeout))}`)
    const controller = new AbortController()
    const arrived = yield* Mailbox.make<A, ProviderFailure>({ capacity: pendingCapacity })
    const real = Object.getPrototypeOf(clock) === realClock
    // Monotonic time, read per event: on the wall clock, a clock stepped forward an hour in an
    // ordinary gap between events failed the response as stalled, and one stepped back hid a real
    // stall for the length of the step. `performance.now` on the real clock (as cheap as `Date.now`);
    // a test's Clock's own time otherwise, which moving it moves.
    const now = real ? () => performance.now() : () => MonotonicTime.unsafeMillis(clock)
    let lastEventAt = now()
    // The stall watch: on the real clock, one Node timer re-armed from the time of the last event
    // when it fires (a fiber and its sleep cost a fiber a response, 19 ops); on any other `Clock` (a
    // test's), a fiber sleeping on it, so that moving the clock moves the timeout.
    let timer: ReturnType<typeof setTimeout> | undefined
    const stopWatch = () => {
      clearTimeout(timer)
      timer = undefined
    }
    if (!Number.isFinite(idleMs)) {
      // An infinite idle timeout: no watch at all.
    } else if (real) {
      const check = (): void => {
        const wait = lastEventAt + idleMs - now()
        if (wait > 0) timer = setTimeout(check, Math.min(wait, maxTimerMs))
        else {
          // What arrived before the stall (a window's worth at most) goes first, as before a failed read.
          handOver()
          arrived.unsafeDone(Exit.fail(stalled()))
        }
      }
      timer = setTimeout(check, Math.min(idleMs, maxTimerMs))
    } else {
      const watch: Effect.Effect<void> = Effect.suspend(() => {
        const wait = lastEventAt + idleMs - now()
        return wait <= 0 ? Effect.zipRight(Effect.sync(() => handOver()), Effect.asVoid(arrived.fail(stalled()))) : Effect.zipRight(Effect.sleep(wait), watch)
      })
      yield* Effect.forkScoped(watch)
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopWatch()
        unschedule()
        controller.abort()
      })
    )
    // The events the SDK has handed over since the last hand-over to `arrived`. An SDK yields the
    // events of one socket read in consecutive microtasks; they are handed over together, once the
    // event loop moves on (`setImmediate`), rather than one `Mailbox` offer each: an offer schedules
    // a task of effect's scheduler to wake the taker (a loop over an async generator: 2.5 µs an
    // event, 4.9 with an offer each). Row 10's warm turns cost the same either way; its first,
    // cold turn less (docs/benchmarks.md).
    let pending: Array<A> = []
    // The hand-over to come: on the event loop's next turn, or at the end of the window (a Node timer,
    // not the `Clock`, as the engine's window: a test's clock neither holds it up nor moves it).
    let immediate: ReturnType<typeof setImmediate> | undefined
    let windowEnd: ReturnType<typeof setTimeout> | undefined
    // When the last hand-over was (`performance.now()`): a window runs from there.
    let lastHandOver = 0
    const unschedule = (): void => {
      clearImmediate(immediate)
      clearTimeout(windowEnd)
      immediate = undefined
      windowEnd = undefined
    }
    const schedule = (): void => {
      if (immediate !== undefined || pending.length === 0) return
      if (handOff === undefined || !handOff.started || pending.length >= windowEvents) {
        immediate = setImmediate(handOver)
        return
      }
      if (windowEnd !== undefined) return
      const wait = lastHandOver + handOff.windowMs - performance.now()
      if (wait <= 0) immediate = setImmediate(handOver)
      else windowEnd = setTimeout(handOver, Math.min(wait, maxTimerMs))
    }
    // While `arrived` is full: the hand-over waiting for room. Nothing else is handed over meanwhile (order).
    let blocked: Promise<void> | undefined
    const handOver = (): void => {
      unschedule()
      if (blocked !== undefined || pending.length === 0) return
      lastHandOver = performance.now()
      const rest = arrived.unsafeOfferAll(pending)
      pending = []
      if (!Chunk.isEmpty(rest)) blocked = Effect.runPromise(arrived.offerAll(rest)).then(() => void (blocked = undefined))
    }
    /** Hands over everything pending before the read ends, so the end or failure comes after it. */
    const handOverAll = async (): Promise<void> => {
      while (blocked !== undefined || pending.length > 0) {
        if (blocked !== undefined) await blocked
        else handOver()
      }
    }
    // Pulled by hand rather than with Stream.fromAsyncIterable: its finalizer calls the iterator's
    // return(), which waits behind a pending next() on a stalled connection. Aborting the request
    // (above) is what ends a pending read.
    const read = async (): Promise<void> => {
      try {
        const iterator = (await options.open(controller.signal))[Symbol.asyncIterator]()
        for (;;) {
          const next = await iterator.next()
          if (next.done === true) return
          lastEventAt = now()
          pending.push(next.value)
          if (pending.length >= pendingCapacity) handOver()
          // A full buffer holds the reads back until the engine has taken some.
          if (blocked !== undefined) await blocked
          schedule()
        }
      } finally {
        // Not once the stream is closed (interrupted, or the consumer gone): nobody takes any more.
        if (!controller.signal.aborted) await handOverAll()
      }
    }
    // The read ends `arrived` itself, from its promise: a fiber forked to await it would cost a fiber
    // (its refs, its scope entry) a response and do nothing the promise does not. Closing the scope
    // aborts the read (above); what it then ends, nobody takes.
    read().then(
      () => {
        stopWatch()
        arrived.unsafeDone(Exit.void)
      },
      (error) => {
        stopWatch()
        arrived.unsafeDone(failedRead(error))
      }
    )
    return Stream.repeatEffectChunkOption(
      // Gathering one more turn of the event loop only while nothing is gathered for a window.
      Effect.flatMap(Effect.mapError(ModelProvider.takeArrived(arrived, handOff === undefined || !handOff.started), Option.some), ([events, done]) =>
        done && Chunk.isEmpty(events) ? Effect.fail(Option.none()) : Effect.succeed(events))
    )
  }))

/**
 * `Stream.mapConcat` for a vendor's events: each chunk's pieces gathered into one array, where
 * `Stream.mapConcat` makes a `Chunk` of each event's pieces and appends them one by one into a tree
 * of chunks, which the engine then flattens again (a chunk holds the dozens of SSE events a read
 * handed over).
 *
 * The events are the endpoint's JSON, typed by the SDK but never checked: an event of a shape the
 * API does not send (`data: null`) that `f` cannot read ends the response, after the pieces of the
 * events before it, with a `server` failure — the endpoint's fault, retried before anything was
 * stored — where the `TypeError` was a defect that ended the turn `internal_error`, the engine's own.
 */
export const mapConcatArrays = <A, B, E>(
  stream: Stream.Stream<A, E>,
  f: (a: A) => ReadonlyArray<B>
): Stream.Stream<B, E | ProviderFailure> =>
  Stream.suspend(() => {
    let failure: ProviderFailure | undefined
    const body = Stream.mapChunks(stream, (chunk) => {
      const out: Array<B | typeof unreadable> = []
      for (const a of chunk) {
        let pieces: ReadonlyArray<B>
        try {
          pieces = f(a)
        } catch (cause) {
          // The pieces of the events before it are handed on; then the stream ends, no more read from the endpoint.
          failure = ProviderFailure.of("server", "the response stream held an event of a shape the API does not send", { cause })
          out.push(unreadable)
          break
        }
        for (let i = 0; i < pieces.length; i++) out.push(pieces[i]!)
      }
      return Chunk.unsafeFromArray(out)
    })
    return Stream.concat(
      Stream.takeWhile(body, (piece): piece is B => piece !== unreadable),
      Stream.suspend(() => (failure === undefined ? Stream.empty : Stream.fail(failure)))
    )
  })

/** Where {@link mapConcatArrays} met an event it could not read. */
const unreadable: unique symbol = Symbol("unreadable")

/**
 * A field of a vendor's event that the API sends as a string, as the endpoint sent it: a number,
 * an object or `null` there is no text — stored as it came, it was a `model.delta` whose `text` was
 * `42`, or a call whose id and name were missing, events of no shape the log's schema takes.
 */
export const stringField = (value: unknown): string => (typeof value === "string" ? value : "")

/**
 * The end of a vendor's stream, unless `whole()` says it ended as the vendor ends a response
 * (`expected`: what marks that end). A stream the connection cut reads as a plain end through both
 * SDKs; taken as the response, it ended the turn `final` on half an answer, and a call the cut left
 * open ran. It is a `network` failure, which the engine retries when none of the response was stored.
 */
export const endedEarly = (whole: () => boolean, expected: string): Stream.Stream<never, ProviderFailure> =>
  Stream.suspend(() =>
    whole() ? Stream.empty : Stream.fail(ProviderFailure.of("network", `the response stream ended before ${expected}: the connection was closed early`))
  )

/** ES2024's string methods, which Node 20 has (the project's `lib` is ES2023): native, and instant on a one-byte string. */
type WellFormedString = string & { isWellFormed(): boolean; toWellFormed(): string }

/**
 * A request body with every lone surrogate in its strings replaced by U+FFFD (what
 * `String.prototype.toWellFormed` does); what has none is returned as it is, not copied. JSON
 * carries a lone surrogate (`"\ud83d"`), and the log keeps one as it came — a model's delta that
 * split a pair and was cut before the other half, a tool's output cut inside one — but Anthropic
 * refuses a request holding one (400 `no low surrogate in string`), and the session's every later
 * request holds it: the session was wedged. Only what is sent is repaired.
 */
export const wellFormed = <A>(value: A): A => {
  if (typeof value === "string") {
    const text = value as unknown as WellFormedString
    return (text.isWellFormed() ? value : text.toWellFormed()) as A
  }
  // Bytes (an image's, in the bridge's prompt) hold no text: not walked byte by byte.
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return value
  if (Array.isArray(value)) {
    let out: Array<unknown> | undefined
    for (let i = 0; i < value.length; i++) {
      const item = wellFormed(value[i])
      if (item !== value[i]) (out ??= value.slice())[i] = item
    }
    return (out ?? value) as A
  }
  let out: Record<string, unknown> | undefined
  for (const [key, item] of Object.entries(value)) {
    const repaired = wellFormed(item)
    if (repaired !== item) (out ??= { ...value } as Record<string, unknown>)[key] = repaired
  }
  return (out ?? value) as A
}

/** The context window of a model: the first matching prefix in a table, else a default. */
export const contextWindow = (
  table: ReadonlyArray<readonly [prefix: string, tokens: number]>,
  model: string,
  fallback: number
): number => Option.getOrElse(Option.fromNullable(table.find(([prefix]) => model.startsWith(prefix))?.[1]), () => fallback)

/** Tool names both vendors take (Anthropic's and OpenAI's rule for a tool's name). */
const vendorToolName = /^[A-Za-z0-9_-]{1,64}$/

/**
 * The tool names one request sends its stored calls under. A model's name is any string, and the log
 * keeps it as it came; one no vendor takes (control characters, 10 KB, empty) in a request fails it
 * (400) — that request and every later one of the session. Such a name is sent with each character
 * the vendors do not take as `_`, and a hash of the name it came as (`read file` → `read_file_…`),
 * cut to 64 — never the name of a tool of the request nor of another call: `read file` sent as
 * `read_file` showed the model a call of `read_file` that never ran as one. The same name is sent
 * the same way in every request of the same tools (what a prompt cache keeps); the call's result
 * already says no such tool ran.
 */
export const sentToolNames = (
  tools: ReadonlyArray<{ readonly name: string }>,
  messages: ReadonlyArray<Message>
): (name: string) => string => {
  // Who each sent name stands for: the request's tools and the calls sent as they came.
  const owners = new Map<string, string>()
  for (const { name } of tools) owners.set(name, name)
  for (const message of messages) {
    if (message.role === "assistant") for (const call of message.toolCalls) if (vendorToolName.test(call.tool)) owners.set(call.tool, call.tool)
  }
  const sent = new Map<string, string>()
  return (name) => {
    if (vendorToolName.test(name)) return name
    const known = sent.get(name)
    if (known !== undefined) return known
    const base = name.replace(/[^A-Za-z0-9_-]/g, "_")
    const hash = nameHash(name)
    for (let attempt = 1;; attempt++) {
      const suffix = attempt === 1 ? `_${hash}` : `_${hash}_${attempt}`
      const candidate = base.slice(0, 64 - suffix.length) + suffix
      if (!owners.has(candidate)) {
        owners.set(candidate, name)
        sent.set(name, candidate)
        return candidate
      }
    }
  }
}

/** FNV-1a of a name's UTF-16 code units, as 8 hex digits: the same name, the same suffix, in every request. */
const nameHash = (name: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, "0")
}

/**
 * The most characters of a tool call's streamed arguments (or name) kept: 4 Mi. A model's own are far
 * shorter (its output is capped by its max tokens), but an endpoint you point `baseURL` at can stream
 * a call's pieces without end, and each is kept until the call completes. Past the limit the pieces
 * are dropped and the call's arguments are {@link argumentsOverLimit}: text, not JSON, which every
 * tool's schema refuses — the call fails, the model is told, the turn goes on.
 */
export const maxStreamedChars = 4 * 1024 * 1024

/** What a tool call's arguments are once its pieces went over {@link maxStreamedChars}. */
export const argumentsOverLimit = `(the call's arguments were over ${maxStreamedChars} characters and were not kept)`

/** A tool call's streamed text with its next piece, up to {@link maxStreamedChars}. */
export const appendStreamed = (text: string, piece: string): string =>
  text === argumentsOverLimit || text.length + piece.length > maxStreamedChars ? argumentsOverLimit : text + piece

/** Tool calls one response may have streaming at once (a model's parallel calls are a few dozen). */
export const maxOpenCalls = 4096

/** Characters one response's tool calls may stream in all, names and arguments. */
export const maxCallsChars = 4 * maxStreamedChars

/**
 * What one response's tool calls stream, bounded as a whole. Each call is bounded by
 * {@link maxStreamedChars}, but a response may stream many: 10,000 calls of 4 Mi characters each were
 * all held (an OpenAI response's calls are handed on only at its end). Past {@link maxCallsChars} in
 * all, every further piece is dropped as a call's own over its limit are (the call gets
 * {@link argumentsOverLimit}); past {@link maxOpenCalls} open at once, a new call is not taken.
 */
export const streamedCalls = () => {
  let chars = 0
  return {
    /** A call's streamed text with its next piece: {@link appendStreamed}, within the response's bound. */
    append: (text: string, piece: string): string => {
      chars += piece.length
      return chars > maxCallsChars ? argumentsOverLimit : appendStreamed(text, piece)
    },
    /** Whether a new call is taken, with `open` calls streaming already. */
    takes: (open: number): boolean => open < maxOpenCalls
  }
}

/**
 * Whether a response that finished so may have cut its last tool call: the output limit (`length`)
 * or a filter (`content_filter`) stops the model wherever it is, even before a call's first argument
 * byte, where a call finished with no arguments is `{}` (see {@link parseArgs}).
 */
export const cutsLastCall = (reason: ModelProvider.FinishReason): boolean => reason === "length" || reason === "content_filter"

/**
 * A tool call's streamed arguments; text that is not JSON is passed on as is, for the tool's schema
 * to refuse. No text at all is `{}` (a call with no arguments) — unless the call is `cut`: the last
 * of a response that ended at the output limit or a filter ({@link cutsLastCall}), which may have
 * stopped before its first byte. That
 * one stays `""`, which no tool takes and the engine reads as cut; `{}` would run a tool with no
 * required argument (list_dir) on a call the model never finished.
 */
export const parseArgs = (json: string, cut = false): Json => {
  if (json.trim() === "") return cut ? "" : {}
  try {
    return JSON.parse(json) as Json
  } catch {
    return json
  }
}

/**
 * A call's arguments as a request sends them back: an object, which is all both APIs take. The
 * arguments a model streamed that did not parse (cut by its output limit, or malformed) were kept
 * as the string it sent; sent back as they were, Anthropic refuses the request (`tool_use.input`
 * must be an object) — every later request of the session with it. The call's result says what was
 * wrong with them.
 */
export const argsObject = (args: unknown): Record<string, unknown> =>
  typeof args === "object" && args !== null && !Array.isArray(args) ? args as Record<string, unknown> : {}

/** What both vendor providers are configured with. */
export interface VendorOptions {
  readonly apiKey: Redacted.Redacted<string>
  readonly model?: string | undefined
  /** The API's address, for a proxy, a compatible server or a test server (default: the SDK's). */
  readonly baseURL?: string | undefined
  /** The most tokens one response may have (default: the provider's). */
  readonly maxOutputTokens?: number | undefined
  /** Overrides the context window from the table of known models. */
  readonly maxContextTokens?: number | undefined
  /** Fail with `network` when the stream is silent this long (default 2 minutes). */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

/**
 * `key` if a header can carry it, else a `ConfigError` at `path` saying why (`ApiKey.unusable`; `path` is
 * `[]` in a `Config.nested`, which names it) —
 * never the key's characters: a layer built from configuration refuses it when it is built, not
 * at the first request as an unknown error.
 */
const usableKey = (path: Array<string>, key: Redacted.Redacted<string>): Either.Either<Redacted.Redacted<string>, ConfigError.ConfigError> => {
  const why = ApiKey.unusable(Redacted.value(key))
  return why === undefined ? Either.right(key) : Either.left(ConfigError.InvalidData(path, `${why}: set it to the key itself`))
}

/**
 * A provider's failure for every request when its key cannot be sent (a layer built from options,
 * not configuration): `authentication`, saying why, instead of the SDK's unknown error.
 */
export const refusedKey = (key: Redacted.Redacted<string>): ProviderFailure | undefined => {
  const why = ApiKey.unusable(Redacted.value(key))
  return why === undefined ? undefined : ProviderFailure.of("authentication", `the API key ${why}: set it to the key itself`)
}

/**
 * A provider's failure for every request when its base URL cannot be used (`Address.unusable`; a
 * layer built from options): `invalid_request`, saying why and naming the address without its
 * userinfo, query or fragment, before any request.
 */
export const refusedBaseUrl = (baseURL: string | undefined): ProviderFailure | undefined => {
  const why = baseURL === undefined ? undefined : Address.unusable(baseURL)
  return why === undefined ? undefined : ProviderFailure.of("invalid_request", `the base URL ${Address.shown(baseURL!)} ${why}`)
}

/** A base URL from configuration, refused as {@link refusedBaseUrl} refuses one from options (a `ConfigError` naming `path`). */
const usableBaseUrl = (path: Array<string>, baseURL: string): Either.Either<string, ConfigError.ConfigError> => {
  const why = Address.unusable(baseURL)
  return why === undefined ? Either.right(baseURL) : Either.left(ConfigError.InvalidData(path, `the base URL ${Address.shown(baseURL)} ${why}`))
}

/** A number of tokens from configuration: an integer above 0 (the API refuses `max_tokens: 0`; no window is empty). */
const tokenCount = (name: string) =>
  Config.integer(name).pipe(Config.validate({ message: "Expected a positive integer", validation: (tokens) => tokens > 0 }))

/**
 * The options from configuration under a prefix: `<P>_API_KEY` (required, redacted, refused when no
 * header can carry it), `<P>_MODEL`, `<P>_BASE_URL`, `<P>_MAX_OUTPUT_TOKENS`, `<P>_MAX_CONTEXT_TOKENS`.
 */
export const config = (prefix: string): Config.Config<VendorOptions> =>
  Config.all({
    apiKey: Config.nested(Config.mapOrFail(Config.redacted(), (key) => usableKey([], key)), `${prefix}_API_KEY`),
    model: Config.option(Config.string(`${prefix}_MODEL`)),
    baseURL: Config.option(Config.nested(Config.mapOrFail(Config.string(), (url) => usableBaseUrl([], url)), `${prefix}_BASE_URL`)),
    maxOutputTokens: Config.option(tokenCount(`${prefix}_MAX_OUTPUT_TOKENS`)),
    maxContextTokens: Config.option(tokenCount(`${prefix}_MAX_CONTEXT_TOKENS`))
  }).pipe(Config.map(({ apiKey, baseURL, maxContextTokens, maxOutputTokens, model }) => ({
    apiKey,
    model: Option.getOrUndefined(model),
    baseURL: Option.getOrUndefined(baseURL),
    maxOutputTokens: Option.getOrUndefined(maxOutputTokens),
    maxContextTokens: Option.getOrUndefined(maxContextTokens)
  })))

/**
 * A provider layer from `Config` values: each is read, then the provider is made from them. A key
 * from the caller's own `Config` (`Config.redacted("MY_KEY")`) is checked as `config`'s is.
 */
export const layerConfig = <Options extends { readonly apiKey: Redacted.Redacted<string>; readonly baseURL?: string | undefined }>(
  config: Config.Config.Wrap<Options>,
  make: (options: Options) => Effect.Effect<ModelProvider.ModelProvider.Service, ConfigError.ConfigError>
): Layer.Layer<ModelProvider.ModelProvider, ConfigError.ConfigError> =>
  Layer.effect(
    ModelProvider.ModelProvider,
    Config.unwrap(config).pipe(
      Effect.flatMap((options) => Effect.as(usableKey(["apiKey"], options.apiKey), options)),
      Effect.flatMap((options) => options.baseURL === undefined ? Effect.succeed(options) : Effect.as(usableBaseUrl(["baseURL"], options.baseURL), options)),
      Effect.flatMap(make)
    )
  )
