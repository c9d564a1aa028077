/**
 * A model provider on any `@effect/ai` `LanguageModel` (the Effect 3 line, `@effect/ai` 0.37: its
 * OpenAI, Anthropic, Google, Bedrock and OpenRouter providers, or one of your own).
 *
 * The engine keeps what it owns: tool execution, permissions and the log. The model sees our tools
 * as `@effect/ai` tools whose parameters are our JSON Schemas, in a toolkit with no handlers, and
 * the request is made with `disableToolCallResolution`, so `@effect/ai` hands every tool call back
 * instead of running it; the toolkit's `handle` dies if anything ever calls it. Each streamed part
 * becomes our chunk as it arrives (one text delta per text part); `AiError`s become
 * `ProviderFailure`s.
 *
 * @since 0.6.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import { ProviderName } from "@effect/ai/Model"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Address from "../domain/Address.js"
import type { Usage } from "../domain/AgentEvent.js"
import { ProviderFailure, type ProviderFailureReason } from "../domain/Errors.js"
import type { ImageRef } from "../domain/Image.js"
import type { Json } from "../domain/Json.js"
import * as Transcript from "../domain/Transcript.js"
import type { ThinkingBlock } from "../domain/Transcript.js"
import * as ModelProvider from "../services/ModelProvider.js"
import * as BoundedHttpClient from "./providers/BoundedHttpClient.js"
import * as Support from "./providers/Support.js"

/** Options of the bridge: what the `LanguageModel` itself cannot say about the model behind it. */
export interface Options {
  /** The model's name, for logs and `model.requested` (the `LanguageModel` does not say). */
  readonly model: string
  /** The provider's name for logs (default: the `@effect/ai` `Model`'s provider name when the layer has one, else "effect-ai"). */
  readonly provider?: string | undefined
  /** The context window: prompt, transcript and tools together must fit (default 128,000 tokens). */
  readonly maxContextTokens?: number | undefined
  /** Whether the model takes images (default false: each image is replaced by a note, as for any model that does not). */
  readonly images?: boolean | undefined
  /** Fail with `network` when no part arrives for this long (default 2 minutes). */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

/** The default context window, when `maxContextTokens` is not given. */
export const defaultMaxContextTokens = 128_000

/**
 * The parameters of every bridged tool: any JSON object, shown to the model as the tool's own JSON
 * Schema (the `jsonSchema` annotation is what `Tool.getJsonSchema` returns). Our tool router checks
 * the arguments against the tool's schema when the engine prepares the call.
 */
const parametersOf = (inputSchema: object) =>
  Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ jsonSchema: inputSchema })

/** Our tool definitions as `@effect/ai` tools. */
export const toolOf = (spec: ModelProvider.ToolSpec) =>
  Tool.make(spec.name, { description: spec.description }).setParameters(parametersOf(spec.inputSchema))

/** Thrown into a fiber (a defect) if `@effect/ai` ever tried to run one of our tools itself. */
export class ToolRunInsideEffectAi extends Schema.TaggedError<ToolRunInsideEffectAi>()("ToolRunInsideEffectAi", {
  tool: Schema.String
}) {}

/**
 * A toolkit of our tools with no handlers: the request is made with `disableToolCallResolution`,
 * so `@effect/ai` never calls `handle`; were it to, the stream would die rather than run a tool
 * outside the engine's permissions and log.
 */
export const toolkitOf = (specs: ReadonlyArray<ModelProvider.ToolSpec>): Toolkit.WithHandler<Record<string, Tool.Any>> => ({
  tools: Object.fromEntries(specs.map((spec) => [spec.name, toolOf(spec)])),
  handle: (name) => Effect.die(new ToolRunInsideEffectAi({ tool: String(name) })) as never
})

const fileParts = (refs: ReadonlyArray<ImageRef> | undefined, images: ReadonlyMap<string, Uint8Array>): Array<Prompt.FilePartEncoded> =>
  (refs ?? []).flatMap((image) => {
    const data = images.get(image.blob)
    // An image whose bytes the request lacks is left out: the engine put a note in its place.
    return data === undefined ? [] : [{ type: "file" as const, mediaType: image.mediaType, data }]
  })

/**
 * The request as an `@effect/ai` prompt: the system prompt; user text and images; assistant text
 * and tool calls; each run of tool results as one tool message. A tool message carries results
 * only, so the images of a run of tool results follow it as one user message, each introduced by
 * the call it came from (as the OpenAI adapter does).
 */
export const toPrompt = (request: ModelProvider.ModelRequest, writer?: Writer): Array<Prompt.MessageEncoded> => {
  const images = request.images ?? new Map<string, Uint8Array>()
  const sentName = Support.sentToolNames(request.tools, request.messages)
  const out: Array<Prompt.MessageEncoded> = request.system === "" ? [] : [{ role: "system", content: request.system }]
  let results: Array<Prompt.ToolResultPartEncoded> = []
  let toolImages: Array<Prompt.UserMessagePartEncoded> = []
  const flush = () => {
    if (results.length > 0) out.push({ role: "tool", content: results })
    if (toolImages.length > 0) out.push({ role: "user", content: toolImages })
    results = []
    toolImages = []
  }
  for (const message of request.messages) {
    if (message.role !== "tool") flush()
    switch (message.role) {
      case "user":
        out.push({
          role: "user",
          content: [...(message.content === "" ? [] : [{ type: "text" as const, text: message.content }]), ...fileParts(message.images, images)]
        })
        break
      case "assistant":
        out.push({
          role: "assistant",
          content: Transcript.inResponseOrder<Prompt.AssistantMessagePartEncoded>(message, message.thinking ?? [], {
            thinking: (block) => reasoningPart(block, writer),
            text: (text) => ({ type: "text", text }),
            call: (call) => ({ type: "tool-call", id: call.toolCallId, name: sentName(call.tool), params: Support.argsObject(call.args), providerExecuted: false })
          })
        })
        break
      case "tool": {
        results.push({ type: "tool-result", id: message.toolCallId, name: sentName(message.tool), isFailure: message.isError, result: message.content, providerExecuted: false })
        const parts = fileParts(message.images, images)
        if (parts.length > 0) toolImages.push({ type: "text", text: `Images from the ${message.tool} call ${message.toolCallId}:` }, ...parts)
        break
      }
    }
  }
  flush()
  return out
}

const finishReason = (reason: Response.FinishReason): ModelProvider.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "tool-calls":
      return "tool_calls"
    case "length":
      return "length"
    case "content-filter":
      return "content_filter"
    default:
      return "other"
  }
}

const count = (n: number | undefined) => n === undefined || !Number.isFinite(n) ? 0 : Math.max(0, Math.round(n))

const usageOf = (usage: Response.Usage): Usage => ({
  inputTokens: count(usage.inputTokens),
  outputTokens: count(usage.outputTokens),
  ...(usage.cachedInputTokens === undefined ? {} : { cacheReadTokens: count(usage.cachedInputTokens) })
})

/** Strings a vendor's error says about itself (its `code`, `type` and `message`, at the top or under `error`). */
const errorWords = (error: unknown): string => {
  const strings = (value: unknown): Array<string> => {
    if (typeof value !== "object" || value === null) return typeof value === "string" ? [value] : []
    const record = value as Record<string, unknown>
    return ["code", "type", "message"].flatMap((key) => typeof record[key] === "string" ? [record[key] as string] : [])
      .concat(typeof record.error === "object" ? strings(record.error) : [])
  }
  return strings(error).join(" ")
}

const contextOverflow = /context_length_exceeded|maximum context length|context (window|length)|too many tokens|prompt is too long/i

/** What an error part's or error body's words say, when no status does. */
const reasonOfWords = (words: string): ProviderFailureReason => {
  if (contextOverflow.test(words)) return "context_overflow"
  if (/rate_limit|rate limit/i.test(words)) return "rate_limited"
  if (/overloaded/i.test(words)) return "overloaded"
  if (/server_error|api_error|internal/i.test(words)) return "server"
  if (/authentication|invalid_api_key|permission/i.test(words)) return "authentication"
  if (/invalid_request/i.test(words)) return "invalid_request"
  return "unknown"
}

/** An error part in the stream (a vendor's `error` event): its words decide the reason. */
export const errorPartFailure = (error: unknown): ProviderFailure => {
  const words = errorWords(error)
  return ProviderFailure.of(reasonOfWords(words), words === "" ? "the model's stream reported an error" : words, { cause: error })
}

/** A case-insensitive reader of a header record (`@effect/platform` lowercases the names). */
const headerReader = (headers: Readonly<Record<string, string>>) => ({
  get: (name: string): string | null => headers[name.toLowerCase()] ?? null
})

/**
 * Whether an `AiError` is an event stream's body that broke while it was read: a connection reset
 * mid-response. `@effect/platform` fails a body read with a `ResponseError` `Decode` whose cause is
 * the socket's error, and `@effect/ai` keeps the reason but not the cause. On a 2xx
 * `text/event-stream` response nothing else is `Decode`: the SSE parser does not fail, and an event
 * the schema refuses is `MalformedOutput`. So that pair is the read breaking (`network`, as through
 * the SDKs), not a body that could not be read (`server`).
 */
const isBrokenEventStream = (error: AiError.HttpResponseError): boolean =>
  error.reason === "Decode" && error.response.status >= 200 && error.response.status < 300 &&
  /^\s*text\/event-stream\b/i.test(headerReader(error.response.headers).get("content-type") ?? "")

/**
 * Translates an `AiError`: a transport failure, or an event stream broken mid-read, is `network`; a status decides as for the vendor
 * SDKs (429 `rate_limited` with the server's `retry-after`, 401/403 `authentication`, 5xx
 * `server`), a 400/413 whose body speaks of the context length `context_overflow`; a response that
 * cannot be read (an undecodable body, tool arguments that are not JSON) `server`, since the vendor
 * sent it and a new attempt may not; a request the provider cannot encode `invalid_request`.
 * `now` (from the `Clock`) dates a `retry-after` given as an HTTP date.
 */
export const toFailure = (error: AiError.AiError, now: number): ProviderFailure => {
  const failure = failureOf(error, now)
  if (error._tag !== "HttpRequestError" && error._tag !== "HttpResponseError") return Support.loggableFailure(failure, [])
  // `@effect/ai`'s message names the request's URL as it is (a gateway's key in its path) and holds
  // the whole body (which may echo the key the request carried): the URL shown as every address is,
  // the key's value `[redacted]`, the rest bounded and escaped.
  const url = error.request.url
  const shown = url === "" ? failure : Support.withDetail(failure, failure.detail.split(url).join(Address.shown(url)))
  return Support.loggableFailure(shown, credentialsOf(error.request.headers))
}

/** The request headers that carry a key. */
const credentialHeaders = new Set(["authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"])

/** The values of a request's credential headers (`@effect/ai` keeps them `Redacted`), a bearer token without its scheme. */
const credentialsOf = (headers: unknown): Array<string> => {
  if (typeof headers !== "object" || headers === null) return []
  return Object.entries(headers).flatMap(([name, value]) => {
    if (!credentialHeaders.has(name.toLowerCase())) return []
    const text = Redacted.isRedacted(value) ? Redacted.value(value) : value
    return typeof text === "string" ? [text.replace(/^\s*(Bearer|Basic)\s+/i, "")] : []
  })
}

const failureOf = (error: AiError.AiError, now: number): ProviderFailure => {
  switch (error._tag) {
    case "HttpRequestError":
      return ProviderFailure.of(error.reason === "Transport" ? "network" : "invalid_request", error.message, { cause: error })
    case "HttpResponseError": {
      const status = error.response.status
      const retryAfterMs = Support.retryAfterMs(headerReader(error.response.headers), now)
      const extra = { cause: error, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
      // An event past the bound of `layerBoundedBodies`: `unknown`, not retried, as through the SDKs.
      if (error.reason === "Decode" && error.description === BoundedHttpClient.oversizedEventDescription) {
        return ProviderFailure.of("unknown", BoundedHttpClient.oversizedEventDescription, extra)
      }
      if (isBrokenEventStream(error)) return ProviderFailure.of("network", error.message, extra)
      if (error.reason !== "StatusCode") return ProviderFailure.of("server", error.message, extra)
      if ((status === 400 || status === 413) && contextOverflow.test(error.body ?? "")) {
        return ProviderFailure.of("context_overflow", error.message, extra)
      }
      if (status === 400 && Support.isThinkingRequired(error.body ?? "")) {
        return ProviderFailure.of("invalid_request", `${Support.thinkingRequiredDetail} (${error.message})`, extra)
      }
      return ProviderFailure.of(Support.reasonOfStatus(status), error.message, extra)
    }
    case "MalformedOutput":
      return ProviderFailure.of("server", error.message, { cause: error })
    case "MalformedInput":
      return ProviderFailure.of("invalid_request", error.message, { cause: error })
    case "UnknownError":
      return ProviderFailure.of("unknown", error.message, { cause: error })
  }
}

/** A part of `@effect/ai`'s stream, as `streamText` gives them. */
type Part = Response.AllParts<Record<string, Tool.Any>> | Response.StreamPart<Record<string, Tool.Any>>

const isEmptyObject = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0

/** A call of ours whose parameters `@effect/ai` has begun to hand over (`tool-params-start`), not yet whole. */
interface OpenCall {
  readonly name: string
  text: string
}

/**
 * Whether a failure of the stream is `@effect/ai`'s provider failing to parse the arguments of a
 * call that is still open: its `MalformedOutput`, with the text that came not JSON. The Responses
 * API closes a call the output limit cut (`status: "incomplete"`, then `response.incomplete`), and
 * Anthropic the block, with the arguments that came; `@effect/ai-openai` and `-anthropic` parse
 * them there, fail the whole stream, and never reach the end that says why.
 */
const failedOnOpenCall = (failure: ProviderFailure, open: ReadonlyMap<string, OpenCall>): boolean =>
  (failure.cause as { _tag?: unknown } | undefined)?._tag === "MalformedOutput" &&
  [...open.values()].some((call) => typeof Support.parseArgs(call.text, true) === "string")

/**
 * The stop reason a provider's stream schema refused, if that alone failed the stream: its
 * `MalformedOutput` over a `ParseError` whose every issue is the value at a `delta.stop_reason`
 * (`@effect/ai-anthropic` knows `pause_turn` and `refusal` but not the newer
 * `model_context_window_exceeded`, nor any later one, and fails the stream at the event that says why
 * the response ended).
 */
const refusedStopReason = (failure: ProviderFailure): string | undefined => {
  const cause = failure.cause as { readonly _tag?: unknown; readonly cause?: unknown } | undefined
  if (cause?._tag !== "MalformedOutput" || !ParseResult.isParseError(cause.cause)) return undefined
  const actual = new Set(ParseResult.ArrayFormatter.formatErrorSync(cause.cause).map((issue) =>
    issue.path.slice(-2).join(".") === "delta.stop_reason" ? /, actual ("[^"\\]*")$/.exec(issue.message)?.[1] : undefined
  ))
  const [only] = actual
  return actual.size === 1 && only !== undefined ? JSON.parse(only) as string : undefined
}

/**
 * Anthropic's stop reasons the bridge's schema refuses, read as the vendor adapter reads them
 * (AnthropicModelProvider's `finishReason`): the context window's end is `length`, any other `other`.
 */
const refusedFinishReason = (reason: string): ModelProvider.FinishReason => reason === "model_context_window_exceeded" ? "length" : "other"

/**
 * The parts of `@effect/ai`'s stream as our chunks: each text delta as it arrives, each tool call
 * when the model has finished it, the finish with its usage; an error part fails the stream.
 * Reasoning, sources, metadata and the start/end markers are not ours to record; a tool call or
 * result the provider ran itself (its built-in tools, never ours) is skipped.
 *
 * A call the output limit cut is kept, as the vendor adapters keep it: each call's argument text is
 * gathered from its `tool-params-delta` parts, and a call that never became whole is handed on with
 * that text as a string (even none), which the engine does not run. One still open at the finish
 * comes before it. One whose arguments made the provider's parse fail ends the response there, with
 * the finish `length`: `@effect/ai` gives no other end, and arguments the vendor closed that are not
 * JSON are arguments its output limit cut (the engine tells the model so and asks for smaller calls).
 * And a call closed with no argument text (no `tool-params-delta`), which the provider parses to
 * `{}`, is cut when it is the response's last and the response finished `length`: Anthropic closes
 * the block its `max_tokens` cut before the first byte, and `@effect/ai-anthropic` hands it on as a
 * finished call with no arguments, which a tool with no required argument would run. So such a call
 * is handed on at the next part — as it came, once that part shows it was not the last — or at the
 * finish, with `""` (cut) when the finish is `length` or `content-filter` (Support.cutsLastCall).
 */
export const toChunks = (parts: Stream.Stream<Part, ProviderFailure>): Stream.Stream<ModelProvider.ModelChunk, ProviderFailure> =>
  Stream.suspend(() => {
    const open = new Map<string, OpenCall>()
    // The reasoning blocks streaming, by id: a thinking block's signature so far, a redacted block's data.
    const reasoning = new Map<string, { signature?: string; redacted?: string }>()
    const streamed = Support.streamedCalls()
    const unfinished = (): Array<ModelProvider.ModelChunk> => {
      const calls = [...open].map(([id, call]) => ModelProvider.toolCall(id, call.name, call.text))
      open.clear()
      return calls
    }
    // Reasoning blocks still open (at the finish, or when the stream ended or failed): each ends unsigned, never sent back.
    const cutReasoning = (): Array<ModelProvider.ModelChunk> => {
      const cut = [...reasoning.keys()].map(() => ModelProvider.thinkingBlock({}))
      reasoning.clear()
      return cut
    }
    // A call closed with no argument text and parsed to `{}`: held until the next part says whether it was the last.
    let held: ModelProvider.ModelChunk | undefined
    // The finish part came: a stream that ends without one was cut (see Support.endedEarly).
    let finished = false
    const release = (cut: boolean): Array<ModelProvider.ModelChunk> => {
      const call = held
      held = undefined
      return call?._tag !== "ToolCall" ? [] : [cut ? ModelProvider.toolCall(call.toolCallId, call.tool, "") : call]
    }
    const chunksOf = (part: Part): ReadonlyArray<ModelProvider.ModelChunk> | ProviderFailure => {
      switch (part.type) {
        case "text-delta":
          return part.delta === "" ? [] : [ModelProvider.textDelta(part.delta)]
        case "tool-params-start":
          if (!part.providerExecuted && streamed.takes(open.size)) open.set(part.id, { name: part.name, text: "" })
          return []
        case "tool-params-delta": {
          const call = open.get(part.id)
          if (call !== undefined) call.text = streamed.append(call.text, part.delta)
          return []
        }
        case "tool-call": {
          const started = open.get(part.id)
          open.delete(part.id)
          if (part.providerExecuted) return []
          // Arguments past the bound the vendor adapters keep (Support.maxStreamedChars): `@effect/ai`
          // gathered and parsed them whole, but they are not stored — the call gets the note no tool
          // takes, as through the SDKs (a 10 MB path was stored, run and sent back).
          if (started?.text === Support.argumentsOverLimit) return [ModelProvider.toolCall(part.id, part.name, Support.argumentsOverLimit)]
          const call = ModelProvider.toolCall(part.id, part.name, part.params as Json)
          if (started === undefined || started.text.trim() !== "" || !isEmptyObject(part.params)) return [call]
          held = call
          return []
        }
        case "reasoning-start": {
          // As through the SDK: a block still open (this id started again included) ends unsigned first.
          const cut = cutReasoning()
          const anthropic = anthropicMetadata(part.metadata)
          reasoning.set(part.id, anthropic?.type === "redacted_thinking" && typeof anthropic.redactedData === "string" ? { redacted: anthropic.redactedData } : {})
          return cut
        }
        case "reasoning-delta": {
          // As through the SDK: thinking and its signature count only inside a reasoning block.
          const block = reasoning.get(part.id)
          if (block === undefined) return []
          const anthropic = anthropicMetadata(part.metadata)
          if (anthropic?.type === "thinking" && typeof anthropic.signature === "string") block.signature = (block.signature ?? "") + anthropic.signature
          return part.delta === "" ? [] : [ModelProvider.thinkingDelta(part.delta)]
        }
        case "reasoning-end": {
          const block = reasoning.get(part.id)
          reasoning.delete(part.id)
          return block === undefined ? [] : [ModelProvider.thinkingBlock(block)]
        }
        case "finish":
          finished = true
          return [...cutReasoning(), ...release(Support.cutsLastCall(finishReason(part.reason))), ...unfinished(), ModelProvider.finish(finishReason(part.reason), usageOf(part.usage))]
        case "error":
          return errorPartFailure(part.error)
        default:
          return []
      }
    }
    // One pull a part that gives chunks, none for one that gives nothing: a text delta goes on as it came.
    const chunks = Stream.flattenIterables(Stream.filterMapEffect(parts, (part) => {
      // Any part but the finish after a held call shows it was not the response's last: it was finished.
      const before = part.type === "finish" ? [] : release(false)
      const own = chunksOf(part)
      if (own instanceof ProviderFailure) return Option.some(Effect.fail(own))
      const all = before.length === 0 ? own : [...before, ...own]
      return all.length === 0 ? Option.none() : Option.some(Effect.succeed(all))
    }))
    const cutAtEnd = Stream.suspend(() => Stream.fromIterable(cutReasoning()))
    return Stream.catchAll(Stream.concat(Stream.concat(chunks, cutAtEnd), Support.endedEarly(() => finished, "its finish part")), (failure) => {
      if (failedOnOpenCall(failure, open)) return Stream.fromIterable([...cutReasoning(), ...release(false), ...unfinished(), ModelProvider.finish("length")])
      // A stop reason newer than the provider's schema ended the response: finished as the vendor
      // adapter finishes it. Its usage rode in the refused event and is lost with it.
      const stopReason = refusedStopReason(failure)
      if (stopReason === undefined) return Stream.fail(failure)
      const reason = refusedFinishReason(stopReason)
      return Stream.fromIterable([...cutReasoning(), ...release(Support.cutsLastCall(reason)), ...unfinished(), ModelProvider.finish(reason)])
    })
  })

/** Who a request goes to: the blocks it is sent back are those it wrote. */
interface Writer {
  readonly provider: string
  readonly model: string
}

/**
 * A thinking block as `@effect/ai-anthropic` takes it back (a `reasoning` part with its Anthropic
 * options: the signature, or the redacted data), at its place in the message — only one `writer`
 * wrote; other vendors' reasoning is not carried (their parts need other options).
 */
const reasoningPart = (block: ThinkingBlock, writer: Writer | undefined): Array<Prompt.ReasoningPartEncoded> =>
  writer === undefined || !Transcript.sendableTo(block, writer.provider, writer.model)
    ? []
    : block.redacted !== undefined
    ? [{ type: "reasoning", text: block.text, options: { anthropic: { type: "redacted_thinking", redactedData: block.redacted } } }]
    : block.signature !== undefined
    ? [{ type: "reasoning", text: block.text, options: { anthropic: { type: "thinking", signature: block.signature } } }]
    : []

/**
 * `@effect/ai-anthropic`'s per-request config (`AnthropicLanguageModel.Config`, read by its key: the
 * package is an optional peer, not imported here). Other providers never read it.
 */
const AnthropicConfig = Context.GenericTag<Record<string, unknown>>("@effect/ai-anthropic/AnthropicLanguageModel/Config")

/**
 * A stream whose Anthropic request asks for no thinking (`thinking: {type: "disabled"}` over the
 * config in context, as `AnthropicLanguageModel.withConfigOverride` does): the bridge cannot see
 * whether the model's own config asks for thinking, so it says so whenever the active turn does not
 * open with thinking (a turn without thinking, where it changes nothing, included).
 */
const withoutAnthropicThinking = <A, E, R>(stream: Stream.Stream<A, E, R>): Stream.Stream<A, E, R> =>
  Stream.unwrap(Effect.map(Effect.serviceOption(AnthropicConfig), (config) =>
    Stream.provideService(stream, AnthropicConfig, { ...Option.getOrElse(config, () => ({})), thinking: { type: "disabled" } })))

/**
 * Whether a request may be one of a session with thinking on: it carries thinking, or its active turn
 * follows a compaction's summary (which may have taken the turn's thinking away). Only then does the
 * bridge turn thinking off explicitly — a session without thinking keeps its requests as they were
 * (a change of the thinking parameter invalidates Anthropic's message cache breakpoints).
 */
const mayThink = (messages: ReadonlyArray<ModelProvider.ModelRequest["messages"][number]>): boolean => {
  const lastUser = messages.findLast((m) => m.role === "user")
  return lastUser?.content.startsWith(Transcript.summaryPrefix) === true || messages.some((m) => m.role === "assistant" && m.thinking !== undefined)
}

/** A part's Anthropic metadata (`@effect/ai-anthropic`'s: a block's kind, its signature or redacted data), when it has some. */
const anthropicMetadata = (metadata: unknown): Record<string, unknown> | undefined => {
  const anthropic = typeof metadata === "object" && metadata !== null ? (metadata as Record<string, unknown>).anthropic : undefined
  return typeof anthropic === "object" && anthropic !== null ? anthropic as Record<string, unknown> : undefined
}

/**
 * The provider on a `LanguageModel` service. Time (a `retry-after` date) comes from the `Clock`.
 */
export const fromLanguageModel = (
  languageModel: LanguageModel.Service,
  options: Options
): Effect.Effect<ModelProvider.ModelProvider.Service> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const named = yield* Effect.serviceOption(ProviderName)
    const idleTimeout = options.idleTimeout ?? Duration.minutes(2)
    const stalled = () =>
      ProviderFailure.of("network", `the response stream stalled: no part for ${Duration.format(Duration.decode(idleTimeout))}`)
    const writer: Writer = { provider: options.provider ?? Option.getOrElse(named, () => "effect-ai"), model: options.model }
    return ModelProvider.ModelProvider.of({
      capabilities: {
        ...writer,
        maxContextTokens: options.maxContextTokens ?? defaultMaxContextTokens,
        images: options.images === true
      },
      stream: (request) => {
        // Lone surrogates repaired as the vendor adapters repair theirs (Support.wellFormed): the
        // bridge's requests carry the same log text, and Anthropic refuses one that holds one.
        // As the Anthropic adapter: a turn whose first step lost its thinking (a compaction) goes on without (Transcript.activeTurnThinks).
        const thinks = Transcript.activeTurnThinks(request.messages, (block) => Transcript.sendableTo(block, writer.provider, writer.model))
        const prompt = Support.wellFormed(toPrompt(thinks ? request : { ...request, messages: Transcript.withoutActiveThinking(request.messages) }, writer))
        const parts = request.tools.length === 0
          ? languageModel.streamText({ prompt })
          : languageModel.streamText({ prompt, toolkit: toolkitOf(request.tools), disableToolCallResolution: true, toolChoice: "auto" })
        return toChunks((thinks || !mayThink(request.messages) ? parts : withoutAnthropicThinking(parts)).pipe(
          Stream.mapError((error) => toFailure(error, clock.unsafeCurrentTimeMillis())),
          Stream.timeoutFail(stalled, idleTimeout)
        ))
      }
    })
  })

/** The provider on the `LanguageModel` in context. */
export const make = (options: Options): Effect.Effect<ModelProvider.ModelProvider.Service, never, LanguageModel.LanguageModel> =>
  Effect.flatMap(LanguageModel.LanguageModel, (languageModel) => fromLanguageModel(languageModel, options))

/**
 * The provider as a layer over a `LanguageModel` layer, e.g.
 * `EffectAiModelProvider.layer({ model: "gpt-4.1" }).pipe(Layer.provide(OpenAiLanguageModel.model("gpt-4.1")))`.
 */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider, never, LanguageModel.LanguageModel> =>
  Layer.effect(ModelProvider.ModelProvider, make(options))

/** An event stream's bytes with every line ended by LF: CR and CRLF become LF, also across chunks (neither byte is ever part of a UTF-8 character). */
const lfLines = <E>(bytes: Stream.Stream<Uint8Array, E>): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    let afterCr = false
    return Stream.map(bytes, (chunk) => {
      const out = new Uint8Array(chunk.length)
      let length = 0
      for (const byte of chunk) {
        if (byte === 0x0d) out[length++] = 0x0a
        else if (byte !== 0x0a || !afterCr) out[length++] = byte
        afterCr = byte === 0x0d
      }
      return out.subarray(0, length)
    })
  })

/**
 * An `HttpClient` whose `text/event-stream` responses end every line with LF. `@effect/experimental`'s
 * SSE parser (0.61), under `@effect/ai-anthropic` and `-openai`, joins two events (or loses the last)
 * once a stream's lines switch from CRLF to LF (docs/embedding.md, known limits); the bridge does not
 * own the client that feeds it, so this is for the layer that builds the `LanguageModel`'s client.
 * Other responses are left as they are.
 */
export const withLfEventLines = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, Effect.map((response) =>
    /^\s*text\/event-stream\b/i.test(response.headers["content-type"] ?? "")
      ? HttpClientResponse.fromWeb(
        response.request,
        new globalThis.Response(Stream.toReadableStream(lfLines(response.stream)), { status: response.status, headers: response.headers })
      )
      : response))

/**
 * {@link withLfEventLines} as a layer over the `HttpClient` below it:
 * `Layer.provide(EffectAiModelProvider.layerLfEventLines), Layer.provide(FetchHttpClient.layer)`.
 */
export const layerLfEventLines: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, withLfEventLines)
)

/**
 * An `HttpClient` whose responses are bounded as the vendor adapters' are: an error's body is read
 * to 64 KiB and cut there (the status decides the failure), and one event of a success past 16 MiB
 * fails the response `unknown` (not retried), the connection let go. `@effect/ai`'s providers read
 * both whole; the bridge does not own the client that feeds it, so this is for the layer that
 * builds the `LanguageModel`'s client.
 */
export const withBoundedBodies: (client: HttpClient.HttpClient) => HttpClient.HttpClient = BoundedHttpClient.make

/**
 * {@link withBoundedBodies} as a layer over the `HttpClient` below it:
 * `Layer.provide(EffectAiModelProvider.layerBoundedBodies), Layer.provide(FetchHttpClient.layer)`.
 */
export const layerBoundedBodies: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, withBoundedBodies)
)
