/**
 * The model provider port: streams one model response for one request, and reports what the
 * model can take. Implementations: the scripted fake, Anthropic and OpenAI.
 *
 * @since 0.1.0
 */
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Usage } from "../domain/AgentEvent.js"
import type { ProviderFailure } from "../domain/Errors.js"
import type { Json, JsonObject } from "../domain/Json.js"
import { type Message, proofOf } from "../domain/Transcript.js"

/** A tool as the model sees it: a name, what it is for, and its arguments as JSON Schema. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonObject
}

/** One model request. */
export interface ModelRequest {
  /** The system prompt; empty when there is none. */
  readonly system: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolSpec>
  /**
   * The bytes of the images the messages reference, by blob hash (see `Message.images`): read from
   * the store's blob area by the engine for each request. Absent when no message carries one.
   */
  readonly images?: ReadonlyMap<string, Uint8Array>
}

/** Why a model response ended. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "other"

/** A piece of a streamed model response. */
export type ModelChunk =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly toolCallId: string; readonly tool: string; readonly args: Json }
  | { readonly _tag: "Finish"; readonly reason: FinishReason; readonly usage?: Usage }
  /** A piece of the model's thinking (Anthropic extended thinking): stored as `model.thinking_delta`. */
  | { readonly _tag: "ThinkingDelta"; readonly text: string }
  /**
   * A thinking block ended (its text: the `ThinkingDelta`s since the previous one): `signature` (a
   * signed block's) or `redacted` (a redacted block's `data`) — what lets it be sent back; neither
   * for a block the stream never signed. Stored as `model.thinking_block`.
   */
  | { readonly _tag: "ThinkingBlock"; readonly signature?: string; readonly redacted?: string }

/** What a model can take. */
export interface Capabilities {
  /** Which provider, for logs: "fake", "anthropic", "openai". */
  readonly provider: string
  readonly model: string
  /** The context window: prompt, transcript and tools together must fit. */
  readonly maxContextTokens: number
  /**
   * Whether the model takes images (user messages' and tools'); default false. A model that does
   * not gets a note in each image's place, and `read_file` of an image gives it text.
   */
  readonly images?: boolean
  /**
   * Whether a request leaves out the active turn's thinking when the turn does not open with
   * thinking it sends (Anthropic with a thinking budget: the API refuses a turn that toggles
   * thinking, see `Transcript.activeTurnThinks`); the estimate then does not count it. Default false.
   */
  readonly dropsUnopenedTurnThinking?: boolean | undefined
}

/** The model provider port. */
export class ModelProvider extends Context.Tag("effect-agent/ModelProvider")<ModelProvider, ModelProvider.Service>() {}

/** The model provider port. */
export declare namespace ModelProvider {
  /** What every model provider does. */
  export interface Service {
    readonly capabilities: Capabilities
    /**
     * Streams one response. Interrupting the stream aborts the request. Failures are
     * `ProviderFailure`s; a provider translates its SDK's errors at this boundary.
     */
    readonly stream: (request: ModelRequest) => Stream.Stream<ModelChunk, ProviderFailure>
  }
}

/** Chunk constructors. */
export const textDelta = (text: string): ModelChunk => ({ _tag: "TextDelta", text })
/** Chunk constructors. */
export const toolCall = (toolCallId: string, tool: string, args: Json): ModelChunk => ({ _tag: "ToolCall", toolCallId, tool, args })
/** Chunk constructors. */
export const thinkingDelta = (text: string): ModelChunk => ({ _tag: "ThinkingDelta", text })
/** Chunk constructors. */
export const thinkingBlock = (end: { readonly signature?: string | undefined; readonly redacted?: string | undefined }): ModelChunk => ({
  _tag: "ThinkingBlock",
  ...proofOf(end)
})
/** Chunk constructors. */
export const finish = (reason: FinishReason, usage?: Usage): ModelChunk =>
  usage === undefined ? { _tag: "Finish", reason } : { _tag: "Finish", reason, usage }

/**
 * Lets the event loop run once: what arrives in the meantime (the rest of a socket read an SDK
 * parses event by event, one microtask each) is there to be taken. Not a timer: no delay, and
 * nothing under a `TestClock` waits on it.
 */
export const nextMacrotask: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * How a response's stream may hand over its later pieces, as the reader running it ahead
 * ({@link runAheadIn}) tells it: `windowMs`, the reader's commit window, and whether the reader has
 * been handed a first piece yet (`started`). A provider that reads its vendor's stream itself
 * (`Support.fromSdk`) hands over everything at once until then — a step's first delta is never held
 * — and afterwards gathers what arrives for up to `windowMs` into one hand-over: one wake-up of the
 * reader a batch, not one a delta. Read once, when the provider's stream starts; `undefined` (a
 * stream read by anything else) is no window.
 */
export interface HandOff {
  readonly windowMs: number
  started: boolean
}

/** The {@link HandOff} of the response being run ahead in this fiber, if any. */
export const currentHandOff: FiberRef.FiberRef<HandOff | undefined> = FiberRef.unsafeMake<HandOff | undefined>(undefined)

/** A response's stream run ahead ({@link runAhead}). */
export interface RunAhead<A, E> {
  /** What the stream has handed over, for `takeArrived` to take from. */
  readonly arrived: Mailbox.ReadonlyMailbox<A, E>
  /**
   * The stream ended (or failed) while it was being started: all of it is in `arrived` and nothing
   * runs ahead. Its end was not held back for a turn of the event loop (see `runAhead`): the reader
   * lets the loop run once itself, after it has taken and handed on the last pieces.
   */
  readonly whole: boolean
  /**
   * Waits until at least `enough` pieces wait in `arrived`, the stream has ended or failed, or `ms`
   * milliseconds have passed — whichever comes first (at once for the first two). Timed by a Node
   * timer, not the `Clock`: a test's clock neither holds it up nor is moved by it. Interrupting it
   * stops the wait at once. How a reader gathers a batch over a window ({@link takeWithin}).
   */
  readonly settle: (ms: number, enough: number) => Effect.Effect<void>
}

/**
 * A response's stream run ahead into a buffer of `capacity` pieces (held back when it is full), in
 * a fiber of its own, for `takeArrived` to take from. The fiber starts at once, in this step rather
 * than the scheduler's next (`Runtime.runFork` starts a fiber immediately): a stream that hands
 * over everything without waiting — a scripted or cached response — is read to its end right here
 * and the fiber is gone before the reader takes anything (`whole`), so a turn in flight neither
 * holds nor waits on it; a stream that waits (a vendor's response) leaves the fiber running ahead
 * of the reader, as `Mailbox.fromStream` would, with the stream pulled chunk by chunk
 * (`Channel.toPull`) in that one fiber (`Mailbox.fromStream` forks a second, a channel writer, which
 * the first waits for — per response a fiber and about 110 Effect operations more, per chunk the
 * same). Closing the scope stops the fiber, then closes the stream (a provider aborts its request),
 * then the buffer.
 */
export const runAhead = <A, E>(stream: Stream.Stream<A, E>, capacity: number): Effect.Effect<RunAhead<A, E>, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => runAheadIn(stream, capacity, scope))

/**
 * {@link runAhead} owned by `scope`, given rather than read from the context: a caller that makes the
 * scope itself (`Effect.scopedWith`) puts no `Scope` into its fiber's context around the response and
 * takes none out when it ends (`Effect.scoped` does, once per response, and a cancel unwinds it).
 * `windowMs` above 0 is the reader's commit window, told to the stream ({@link currentHandOff}) so
 * that a provider reading its vendor itself gathers the pieces after the first over it.
 */
export const runAheadIn = <A, E>(
  stream: Stream.Stream<A, E>,
  capacity: number,
  scope: Scope.Scope,
  windowMs = 0
): Effect.Effect<RunAhead<A, E>> =>
  Effect.flatMap(buffered<A, E>(capacity, scope), (buffer) =>
    Effect.flatMap(pulledIn(stream, scope), ([pull, atEnd]) => {
      let starting = true
      let ended = false
      // What the stream is told of this reader (`currentHandOff`): its window, and once a first piece was put in.
      const handOff: HandOff | undefined = windowMs > 0 ? { windowMs, started: false } : undefined
      // The reader waiting in `settle`, and how many pieces end its wait: woken by the offer that
      // brings the buffer to that many, or by the end.
      let settling: (() => void) | undefined
      let enough = 0
      const nudge = (): void => {
        const waiting = settling
        settling = undefined
        waiting?.()
      }
      // What a full buffer did not take, offered (waiting for room) before the next pull.
      let held: Chunk.Chunk<A> | undefined
      // Puts in what there is room for, one piece at a time (`unsafeOfferAll` makes an array and a
      // chunk of the rest on every call, and iterates the chunk: ~200 bytes a pull of one delta);
      // answers the rest, if any.
      const offered = (chunk: Chunk.Chunk<A>): Chunk.Chunk<A> | undefined => {
        for (let i = 0; i < chunk.length; i++) {
          if (!buffer.unsafeOffer(Chunk.unsafeGet(chunk, i))) {
            nudge()
            return Chunk.drop(chunk, i)
          }
        }
        if (handOff !== undefined && chunk.length > 0) handOff.started = true
        if (settling !== undefined && sizeOf(buffer) >= enough) nudge()
        return undefined
      }
      // One loop rather than a `matchCauseEffect` per pull: a provider handing over one delta per
      // chunk pulls as many times as it has deltas, and each pull is then only the channel's own ops.
      // Put in at once while there is room (the usual case), with no effect of its own per chunk.
      const pulls = Effect.whileLoop({
        while: () => !ended,
        body: () => {
          const rest = held
          if (rest === undefined) return pull
          held = undefined
          return Effect.zipRight(buffer.offerAll(rest), pull)
        },
        step: (pulled) => {
          if (Either.isLeft(pulled)) ended = true
          else if (pulled.right === endOfStream) ended = atEnd.read = true
          else held = offered(pulled.right)
        }
      })
      const pump: Effect.Effect<void> = Effect.matchCauseEffect(pulls, {
        // The stream's end, handed over on the event loop's next turn, as a network stream's end
        // comes in a read of its own: the last pieces are taken, committed and handed to the turn's
        // consumer before the response is seen to end — so a steer sent on seeing the last delta
        // is there when the step decides whether the turn is over. (Reached while starting, the
        // reader does that wait: `whole`.)
        onSuccess: () => starting ? buffer.end : Effect.zipRight(nextMacrotask, endedWith(Exit.void)),
        onFailure: (cause) => endedWith(Exit.failCause(cause))
      })
      const endedWith = (exit: Exit.Exit<void, E>) =>
        Effect.sync(() => {
          buffer.unsafeDone(exit)
          nudge()
        })
      const settle = (ms: number, atLeast: number): Effect.Effect<void> =>
        Effect.async<void>((resume) => {
          if (sizeOf(buffer) >= atLeast || (ended && held === undefined)) return resume(Effect.void)
          const timer = setTimeout(() => {
            settling = undefined
            resume(Effect.void)
          }, ms)
          enough = atLeast
          settling = () => {
            clearTimeout(timer)
            resume(Effect.void)
          }
          return Effect.sync(() => {
            clearTimeout(timer)
            settling = undefined
          })
        })
      // This fiber's runtime (its flags as they are here, before the uninterruptible step below), used
      // once: nothing that lives on with the fiber running ahead keeps it (it holds this fiber's refs as they were).
      return Effect.flatMap(Effect.runtime<never>(), (runtime) =>
        // Started and handed to the scope in one uninterruptible step: never left running unowned.
        Effect.uninterruptible(Effect.suspend(() => {
          // Its refs forked from this fiber's, as `Effect.fork` makes them: an interruption this fiber has received is not the new one's.
          // With the window, `currentHandOff` is set in them as they are made: no Effect op of its own (`Effect.locally` is ~20).
          const fiber = Runtime.runFork(runtime, pump, {
            updateRefs: handOff === undefined
              ? FiberRefs.forkAs
              : (refs, id) => FiberRefs.updateAs(FiberRefs.forkAs(refs, id), { fiberId: id, fiberRef: currentHandOff, value: handOff })
          })
          starting = false
          return fiber.unsafePoll() !== null ? Effect.succeed({ arrived: buffer, whole: true, settle }) : runningAhead(fiber, buffer, settle, scope)
        })))
    }))

/**
 * Written after a stream's last chunk by {@link pulledIn}'s channel: seen by the reader, the stream
 * has ended and its own finalizers have run. One object of the process's, compared by identity:
 * no stream hands it over.
 */
const endOfStream: Chunk.Chunk<never> = Chunk.of(undefined as never)
const writeEnd = Channel.write(endOfStream)

/**
 * `stream` to be pulled chunk by chunk, as `Channel.toPullIn(…, scope)` does, for a reader that reads
 * it to its end (`atEnd.read` once the reader has pulled {@link endOfStream}, written after its last
 * chunk) — which, for every response read whole, leaves its channel executor unclosed. Closing an
 * executor whose stream has ended is work for nothing (its own finalizers have already run as the
 * stream ended, before the end is written) yet 94 of the 129 Effect operations of reading a response
 * by `Channel.toPullIn` (bench/response-ops.ts; effect provides the runtime to the close's effect).
 * So the executor is pulled in a scope of its own, closed with `scope` only when the stream was not
 * read to its end (failed, left early, interrupted): then the stream's finalizers run as before (a
 * provider aborts its request). Done the same for every provider's stream: nothing is skipped that
 * the stream has not done itself (perf65steps).
 */
const pulledIn = <A, E>(
  stream: Stream.Stream<A, E>,
  scope: Scope.Scope
): Effect.Effect<readonly [Effect.Effect<Either.Either<Chunk.Chunk<A>, unknown>, E>, { read: boolean }]> =>
  Effect.flatMap(Scope.make(), (own) => {
    const atEnd = { read: false }
    return Effect.zipRight(
      Scope.addFinalizerExit(scope, (exit) => atEnd.read ? Effect.void : Scope.close(own, exit)),
      Effect.map(Channel.toPullIn(Channel.zipRight(Stream.toChannel(stream), writeEnd), own), (pull) => [pull, atEnd] as const)
    )
  })

/**
 * The buffer, shut down when the scope closes. Its finalizer is the scope's own (`Scope.addFinalizer`),
 * not `Effect.acquireRelease`'s, which records the fiber refs at the acquire and diffs and patches them
 * around the release, once per response: shutting a mailbox down reads none of them.
 */
const buffered = <A, E>(capacity: number, scope: Scope.Scope): Effect.Effect<Mailbox.Mailbox<A, E>> =>
  Effect.uninterruptible(Effect.flatMap(Mailbox.make<A, E>({ capacity }), (buffer) => Effect.as(Scope.addFinalizer(scope, buffer.shutdown), buffer)))


/**
 * A fiber running ahead, owned by the scope (interrupted when it closes); made here so that its
 * finalizer keeps only the fiber. The scope's own finalizer, as the buffer's: `Effect.addFinalizer`
 * records the fiber refs here and diffs and patches them around the interruption, which reads none.
 */
const runningAhead = <A, E>(
  fiber: Fiber.RuntimeFiber<void>,
  arrived: Mailbox.ReadonlyMailbox<A, E>,
  settle: RunAhead<A, E>["settle"],
  scope: Scope.Scope
): Effect.Effect<RunAhead<A, E>> => Effect.as(Scope.addFinalizer(scope, Fiber.interrupt(fiber)), { arrived, whole: false, settle })

/** How many pieces wait in a buffer (a buffer that has ended: none more will come, so as many as it may hold). */
const sizeOf = (buffer: Mailbox.ReadonlyMailbox<unknown, unknown>): number => Option.getOrElse(buffer.unsafeSize(), () => Infinity)

/**
 * Takes what a response's buffer holds, waiting for a first piece (`done` once it has ended, as
 * `takeAll`); with `gather`, once a piece is there, the event loop runs once first, so what is
 * arriving with it is taken in the same batch. How the streaming paths batch per arrival rather
 * than per piece (the SDK adapters' reads, the engine's group commit).
 */
export const takeArrived = <A, E>(
  arrived: Mailbox.ReadonlyMailbox<A, E>,
  gather: boolean
): Effect.Effect<readonly [Chunk.Chunk<A>, boolean], E> =>
  Effect.flatMap(arrived.takeAll, (taken) => !gather || taken[1] ? Effect.succeed(taken) : takenWith(arrived, taken, nextMacrotask))

/**
 * Takes what a response's buffer holds, waiting for a first piece (as `takeAll`); once one is there,
 * gathers more until the time `until` (`performance.now()`), `enough` pieces, or the stream's end,
 * whichever comes first ({@link RunAhead.settle}). A first piece that comes after `until` gathers
 * for one turn of the event loop, as {@link takeArrived} does. `done` is true only when the end was
 * taken with nothing before it: pieces taken with the end waiting are handed on first, the end
 * taken next time. How the engine commits a response's later batches (its commit window).
 */
export const takeWithin = <A, E>(
  run: RunAhead<A, E>,
  until: number,
  enough: number
): Effect.Effect<readonly [Chunk.Chunk<A>, boolean], E> =>
  Effect.flatMap(run.arrived.takeAll, (taken) => {
    if (taken[1] || taken[0].length >= enough) return Effect.succeed(taken)
    const wait = until - performance.now()
    return takenWith(run.arrived, taken, wait <= 0 ? nextMacrotask : run.settle(wait, enough - taken[0].length))
  })

/** `taken`, and what has arrived once `gather` is done (its end, or a failure, left for the next take). */
const takenWith = <A, E>(
  arrived: Mailbox.ReadonlyMailbox<A, E>,
  taken: readonly [Chunk.Chunk<A>, boolean],
  gather: Effect.Effect<void>
): Effect.Effect<readonly [Chunk.Chunk<A>, boolean], E> =>
  Effect.zipRight(
    gather,
    Effect.suspend(() =>
      Option.getOrElse(arrived.unsafeSize(), () => 0) > 0
        // Pieces are waiting, so this takes them without waiting; the end (or a failure) is taken next time.
        ? Effect.map(arrived.takeAll, ([more]) => [Chunk.appendAll(taken[0], more), false] as const)
        : Effect.succeed(taken)
    )
  )
