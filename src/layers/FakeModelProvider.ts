/**
 * A scripted model: one scripted response per model request, with optional per-chunk delays (through
 * `Clock`, so `TestClock` drives them), failures after N chunks, tool calls, and a mode that ignores
 * cancellation. When the script runs out it echoes the last user message, which makes it the CLI's
 * built-in model when no API key is set.
 *
 * A compaction's summary request is a model request like any other: it takes the next scripted
 * response, whose text (its `chunks`, joined) is the summary; a `failure` fails the compaction (a
 * retryable one is retried first). Its tool calls are ignored. With the script run out, a summary
 * request is answered with a short fixed summary (see {@link echoSummary}) rather than an echo.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Usage } from "../domain/AgentEvent.js"
import { summaryInstruction } from "../domain/Compaction.js"
import { ProviderFailure, ProviderFailureReason } from "../domain/Errors.js"
import { Json } from "../domain/Json.js"
import * as ModelProvider from "../services/ModelProvider.js"
import * as McpCassette from "./mcp/McpCassette.js"

/** The short forms a script's `delay` takes besides Effect's (`"300 millis"`): `300ms`, `2s`, `1.5m`, `1h`. */
const shortDuration = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/
const shortUnits = { ms: "millis", s: "seconds", m: "minutes", h: "hours" } as const

/**
 * A script's `delay` as a duration: a number is milliseconds; a string is `300ms`, `2s`, `1.5m`,
 * `1h` or one of Effect's duration strings (`"300 millis"`, `"2 seconds"`); undefined when it is none.
 */
export const decodeDelay = (input: number | string): Duration.Duration | undefined => {
  if (typeof input === "number") return Number.isFinite(input) && input >= 0 ? Duration.millis(input) : undefined
  const short = shortDuration.exec(input)
  if (short !== null) return Duration.decode(`${Number(short[1])} ${shortUnits[short[2] as keyof typeof shortUnits]}`)
  return Option.getOrUndefined(Duration.decodeUnknown(input.trim()))
}

/** A number of milliseconds or a duration string (see {@link decodeDelay}), with one message for whatever it is not. */
const DurationInput = Schema.Union(Schema.Number, Schema.String).pipe(
  Schema.filter((input) => decodeDelay(input) !== undefined, {
    message: () => "a delay is milliseconds (200) or a duration: \"300ms\", \"2s\", \"1.5m\", \"2 seconds\""
  })
)

/** One scripted model response. */
export const ScriptedResponse = Schema.Struct({
  /** Text deltas, streamed in order. */
  chunks: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  /** Tool calls, streamed after the text; ids default to `call_1`, `call_2`, … */
  toolCalls: Schema.optionalWith(
    Schema.Array(Schema.Struct({ tool: Schema.String, args: Json, id: Schema.optional(Schema.String) })),
    { default: () => [] }
  ),
  /** Wait this long before each chunk: milliseconds (`200`), or a duration (`"300ms"`, `"2s"`, `"2 seconds"`). */
  delay: Schema.optional(DurationInput),
  /**
   * Fail with this reason after `afterChunks` chunks (default 0: before any). `retryAfterMs`: the
   * vendor's `retry-after`; `retryDelayMs`: the wait a recording made before it sent the request
   * again — the engine retries after exactly that wait (what a cassette replays).
   */
  failure: Schema.optional(Schema.Struct({
    reason: ProviderFailureReason,
    afterChunks: Schema.optional(Schema.NonNegativeInt),
    retryAfterMs: Schema.optional(Schema.NonNegativeInt),
    retryDelayMs: Schema.optional(Schema.NonNegativeInt),
    detail: Schema.optional(Schema.String)
  })),
  /** Keep producing chunks after the request is cancelled, like a provider that ignores the abort. */
  keepEmittingAfterCancel: Schema.optional(Schema.Boolean),
  usage: Schema.optional(Usage),
  /** Why the response ends (default `tool_calls` when it has calls, else `stop`): `length` or `content_filter` cut it short. */
  finishReason: Schema.optional(Schema.Literal("stop", "tool_calls", "length", "content_filter", "other"))
})
/** One scripted model response. */
export type ScriptedResponse = typeof ScriptedResponse.Encoded

/** A whole script: what a `--script` file for the CLI holds. */
export const Script = Schema.Struct({
  responses: Schema.Array(ScriptedResponse),
  maxContextTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Whether the scripted model takes images (default false: images reach it as notes, `read_file` of one gives text). */
  images: Schema.optional(Schema.Boolean),
  /**
   * The MCP servers the recorded session used: their tool lists and their answers, so a replay needs
   * no server (`McpCassette`; the CLI's `run --script` binds them instead of starting servers).
   */
  mcp: Schema.optional(McpCassette.Recording),
  /**
   * The provider and model it says it is (default `fake` / `scripted`): a cassette names the model
   * that recorded it, so its replay prices turns as the recording did.
   */
  provider: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  /**
   * Scripts of subagents (`task` calls), by the task's prompt: a request whose first user message is
   * one of these prompts — a subagent's conversation — takes the next response of that list, the
   * others the next of `responses`. Subagents that run at once then each follow their own script.
   */
  subagents: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Array(ScriptedResponse) }))
})
/** A whole script: what a `--script` file for the CLI holds. */
export type Script = typeof Script.Encoded

/** Options of the fake model. */
export interface Options {
  readonly responses?: ReadonlyArray<ScriptedResponse> | undefined
  /** Scripts of subagents, by the task's prompt (see `Script.subagents`). */
  readonly subagents?: Readonly<Record<string, ReadonlyArray<ScriptedResponse>>> | undefined
  /** The context window it reports (default 128 000 tokens). */
  readonly maxContextTokens?: number | undefined
  /** Whether it takes images (default false: images reach it as notes, `read_file` of one gives text). */
  readonly images?: boolean | undefined
  /** The provider and model it says it is (default `fake` / `scripted`). */
  readonly provider?: string | undefined
  readonly model?: string | undefined
  /**
   * Keep every request received, for `FakeModel.requests` (default false: a long session would
   * otherwise hold every request it ever sent). The count is always kept.
   */
  readonly record?: boolean | undefined
}

/** What the fake recorded; provided beside `ModelProvider` so tests can check the requests it received. */
export class FakeModel extends Context.Tag("effect-agent/FakeModel")<FakeModel, {
  /** Every request received, in order (only with `record: true`). */
  readonly requests: Effect.Effect<ReadonlyArray<ModelProvider.ModelRequest>>
  /** How many requests were received. */
  readonly requestCount: Effect.Effect<number>
}>() {}

// Compiled when a script is given, not as the module loads (the echo model never decodes one).
let decodeScripted: ((response: ScriptedResponse) => typeof ScriptedResponse.Type) | undefined
const decodeResponse = (response: ScriptedResponse): typeof ScriptedResponse.Type => (decodeScripted ??= Schema.decodeSync(ScriptedResponse))(response)

const lastUserMessage = (request: ModelProvider.ModelRequest): string => {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!
    if (message.role === "user") return message.content
  }
  return ""
}

/** What the script run out answers to a compaction's summary request: short, so compacting a session with the built-in model shrinks it. */
export const echoSummary = (request: ModelProvider.ModelRequest): ReadonlyArray<string> => {
  const items = request.messages.length === 0 ? 0 : (request.messages[0]!.content.match(/^\[(User|Assistant|Tool call|Tool result)/gm) ?? []).length
  // "1 earlier item was compacted", not "1 earlier items were".
  return [`Echo summary: ${items} earlier ${items === 1 ? "item was" : "items were"} compacted.`]
}

/** The echo answer, split at word boundaries so it streams. */
export const echo = (request: ModelProvider.ModelRequest): ReadonlyArray<string> =>
  `Echo: ${lastUserMessage(request)}`.match(/\s*\S+|\s+$/g) ?? ["Echo:"]

const chunksOf = (
  response: typeof ScriptedResponse.Type,
  nextCallId: () => string
): ReadonlyArray<ModelProvider.ModelChunk> => {
  const calls = response.toolCalls.map((call) => ModelProvider.toolCall(call.id ?? nextCallId(), call.tool, call.args))
  return [
    ...response.chunks.map(ModelProvider.textDelta),
    ...calls,
    ModelProvider.finish(response.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop"), response.usage)
  ]
}

/**
 * A response handed over at once: the chunks `Stream.fromIterable` makes of it (of up to its
 * default chunk size), a response that fits in one written as that one chunk — what
 * `Stream.fromIterable` emits for it, without its iterator loop (about 145 Effect operations of
 * the engine's pull per response, `bench/ops.ts`).
 */
const atOnce = (chunks: ReadonlyArray<ModelProvider.ModelChunk>): Stream.Stream<ModelProvider.ModelChunk> =>
  chunks.length <= Stream.DefaultChunkSize ? Stream.fromChunk(Chunk.unsafeFromArray(chunks)) : Stream.fromIterable(chunks)

/** Builds the fake model and its recorder. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const script = (options.responses ?? []).map((response) => decodeResponse(response))
    const bySubagent = new Map(Object.entries(options.subagents ?? {}).map(([prompt, responses]) => [prompt, responses.map((r) => decodeResponse(r))]))
    const taken = new Map<string, number>()
    /** The next scripted response for a request: from its subagent's script when its first user message is one's prompt. */
    const next = (request: ModelProvider.ModelRequest, index: number) => {
      const first = request.messages.find((m) => m.role === "user")?.content
      const own = first === undefined ? undefined : bySubagent.get(first)
      if (own === undefined) return script[index]
      const at = taken.get(first!) ?? 0
      taken.set(first!, at + 1)
      return own[at]
    }
    const requests: Array<ModelProvider.ModelRequest> = []
    let received = 0
    let mainTaken = 0
    /** The index in `responses` of a request that is not a subagent's (none taken for a subagent's). */
    const mainIndex = (request: ModelProvider.ModelRequest) => {
      const first = request.messages.find((m) => m.role === "user")?.content
      return first !== undefined && bySubagent.has(first) ? -1 : mainTaken++
    }
    let callIds = 0
    const nextCallId = () => `call_${++callIds}`

    const respond = (response: typeof ScriptedResponse.Type): Stream.Stream<ModelProvider.ModelChunk, ProviderFailure> =>
      // Built when the stream runs (a request sent again runs it again), without an effect of its own.
      Stream.suspend(() => {
        const chunks = chunksOf(response, nextCallId)
        const failure = response.failure
        const emitted = failure === undefined ? chunks : chunks.slice(0, failure.afterChunks ?? 0)
        const delay = response.delay === undefined ? Duration.zero : decodeDelay(response.delay) ?? Duration.zero
        const step = (chunk: ModelProvider.ModelChunk) => {
          const emit = Duration.isZero(delay) ? Effect.succeed(chunk) : Effect.as(Effect.sleep(delay), chunk)
          // A provider that ignores the abort: each chunk arrives even after interruption was requested.
          return response.keepEmittingAfterCancel === true ? Effect.uninterruptible(emit) : emit
        }
        // Without delays the whole response is one chunk, as a fast provider hands it over.
        const body = Duration.isZero(delay) && response.keepEmittingAfterCancel !== true ? atOnce(emitted) : Stream.mapEffect(Stream.fromIterable(emitted), step)
        return failure === undefined
          ? body
          : Stream.concat(body, Stream.fail(ProviderFailure.of(failure.reason, failure.detail ?? `scripted ${failure.reason} failure`, {
            ...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs }),
            ...(failure.retryDelayMs === undefined ? {} : { retryDelayMs: failure.retryDelayMs })
          })))
      })

    const provider = ModelProvider.ModelProvider.of({
      capabilities: { provider: options.provider ?? "fake", model: options.model ?? "scripted", maxContextTokens: options.maxContextTokens ?? 128_000, ...(options.images === true ? { images: true } : {}) },
      stream: (request) =>
        Stream.suspend(() => {
          if (options.record === true) requests.push(request)
          received++
          const response = next(request, mainIndex(request))
          return response === undefined
            ? atOnce([...(request.system === summaryInstruction ? echoSummary(request) : echo(request)).map(ModelProvider.textDelta), ModelProvider.finish("stop")])
            : respond(response)
        })
    })
    return { provider, recorder: FakeModel.of({ requests: Effect.sync(() => [...requests]), requestCount: Effect.sync(() => received) }) }
  })

/**
 * The seed of the `Random` the fake model's layer sets: the retry policy's jitter (and anything
 * else drawing from Effect's `Random`) is the same on every run, so a scripted retry's
 * `model.retry.delayMs` — and the golden log holding it — is the same bytes every time.
 */
export const randomSeed = "effect-agent FakeModelProvider"

// A fresh generator each time the layer is built: a layer provided twice repeats its draws.
const seededRandom = Layer.scopedDiscard(Effect.suspend(() => Effect.withRandomScoped(Random.make(randomSeed))))

/**
 * The fake model as a layer: provides `ModelProvider` and the `FakeModel` recorder, and sets a
 * seeded `Random` (see {@link randomSeed}) for what runs with it, so scripted runs repeat exactly.
 */
export const layer = (options: Options = {}): Layer.Layer<ModelProvider.ModelProvider | FakeModel> =>
  Layer.merge(
    Layer.effectContext(Effect.map(make(options), ({ provider, recorder }) =>
      Context.make(ModelProvider.ModelProvider, provider).pipe(Context.add(FakeModel, recorder)))),
    seededRandom
  )
