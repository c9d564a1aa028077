/**
 * A model provider on OpenAI's Chat Completions API, streaming through the official SDK
 * (`openai`). With `baseURL` it talks to any OpenAI-compatible server (vLLM, Ollama, LM Studio).
 * The SDK's own retries are off: the engine retries, so the log shows every attempt.
 *
 * @since 0.1.0
 */
import OpenAI from "openai"
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool
} from "openai/resources/chat/completions/completions"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { Usage } from "../domain/AgentEvent.js"
import { ProviderFailure } from "../domain/Errors.js"
import type { ImageRef } from "../domain/Image.js"
import type { Message } from "../domain/Transcript.js"
import * as ModelProvider from "../services/ModelProvider.js"
import * as BoundedFetch from "./providers/BoundedFetch.js"
import * as Support from "./providers/Support.js"

/** Options of the OpenAI provider; `maxOutputTokens` defaults to the server's. */
export type Options = Support.VendorOptions

/** The default model. */
export const defaultModel = "gpt-4.1-mini"

/** Context windows of known models, by name prefix (longer prefixes first). */
export const contextWindows: ReadonlyArray<readonly [string, number]> = [
  ["gpt-4.1", 1_047_576],
  ["gpt-4o", 128_000],
  ["gpt-4-turbo", 128_000],
  ["gpt-5", 400_000],
  ["o4-mini", 200_000],
  ["o3", 200_000],
  ["o1", 200_000],
  ["gpt-3.5-turbo", 16_385]
]

const isContextOverflow = (code: string | undefined, message: string) =>
  code === "context_length_exceeded" || /maximum context length|context (window|length)|too many tokens/i.test(message)

/**
 * Translates what the SDK throws; the vendor's message is kept as `detail`, for logs only. `now` (from
 * the `Clock`) dates a `retry-after` given as an HTTP date; `baseURL`, where the client sends its
 * requests, is named when it could not connect.
 */
export const toFailure = (error: unknown, now: number, baseURL?: string): ProviderFailure => {
  const own = Support.ownFailure(error)
  if (own !== undefined) return own
  const { code, headers, message, status, type } = Support.shapeOf(error)
  const retryAfterMs = Support.retryAfterMs(headers, now)
  const extra = {
    cause: error,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs })
  }
  if (Support.isTooDeep(error)) return ProviderFailure.of("server", Support.tooDeepDetail, extra)
  if (error instanceof OpenAI.APIConnectionError && baseURL !== undefined) return ProviderFailure.of("network", Support.unreachable(message, error, baseURL), extra)
  if (error instanceof OpenAI.APIConnectionError || Support.isBrokenConnection(error)) return ProviderFailure.of("network", message, extra)
  if (isContextOverflow(code, message) && (status === undefined || status === 400 || status === 413)) {
    return ProviderFailure.of("context_overflow", message, extra)
  }
  if (status !== undefined) return ProviderFailure.of(Support.reasonOfStatus(status), message, extra)
  // An error inside the stream has no status: its type says what happened.
  if (type === "server_error") return ProviderFailure.of("server", message, extra)
  if (type === "rate_limit_error" || code === "rate_limit_exceeded") return ProviderFailure.of("rate_limited", message, extra)
  if (type === "invalid_request_error") return ProviderFailure.of("invalid_request", message, extra)
  return ProviderFailure.of("unknown", message, extra)
}

/** The transcript in the Chat Completions shape: the system prompt first, tool results as `tool` messages. */
/** Images as `image_url` parts with data URLs (an image whose bytes the request lacks is left out: the engine put a note in its place). */
const imageParts = (refs: ReadonlyArray<ImageRef>, images: ReadonlyMap<string, Uint8Array>) =>
  refs.flatMap((image) => {
    const bytes = images.get(image.blob)
    return bytes === undefined
      ? []
      : [{ type: "image_url" as const, image_url: { url: `data:${image.mediaType};base64,${Buffer.from(bytes).toString("base64")}` } }]
  })

/**
 * The transcript in the Chat Completions shape: the system prompt first, tool results as `tool`
 * messages. A `tool` message carries text only: the images of a run of tool results follow the run
 * as one user message, each image introduced by the call it came from.
 */
export const toMessages = (
  system: string,
  messages: ReadonlyArray<Message>,
  images: ReadonlyMap<string, Uint8Array> = new Map(),
  tools: ReadonlyArray<{ readonly name: string }> = []
): Array<ChatCompletionMessageParam> => {
  const sentName = Support.sentToolNames(tools, messages)
  const out: Array<ChatCompletionMessageParam> = system === "" ? [] : [{ role: "system", content: system }]
  let toolImages: Array<ChatCompletionContentPart> = []
  const flush = () => {
    if (toolImages.length > 0) out.push({ role: "user", content: toolImages })
    toolImages = []
  }
  for (const message of messages) {
    if (message.role !== "tool") flush()
    switch (message.role) {
      case "user": {
        // Images as data URLs in `image_url` parts; a message without stays a plain string.
        const parts = imageParts(message.images ?? [], images)
        out.push(parts.length === 0
          ? { role: "user", content: message.content }
          : { role: "user", content: [...(message.content === "" ? [] : [{ type: "text" as const, text: message.content }]), ...parts] })
        break
      }
      case "assistant":
        out.push({
          role: "assistant",
          content: message.content === "" ? null : message.content,
          ...(message.toolCalls.length === 0
            ? {}
            : {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.toolCallId,
                type: "function" as const,
                function: { name: sentName(call.tool), arguments: JSON.stringify(Support.argsObject(call.args)) }
              }))
            })
        })
        break
      case "tool": {
        // Chat Completions has no error flag for tool results: the content says so.
        out.push({ role: "tool", tool_call_id: message.toolCallId, content: message.isError ? `Error: ${message.content}` : message.content })
        const parts = imageParts(message.images ?? [], images)
        if (parts.length > 0) toolImages.push({ type: "text", text: `Images from the ${message.tool} call ${message.toolCallId}:` }, ...parts)
        break
      }
    }
  }
  flush()
  return out
}

/** The request body for one model request. */
export const toRequest = (request: ModelProvider.ModelRequest, model: string, maxTokens: number | undefined): ChatCompletionCreateParamsStreaming => ({
  model,
  stream: true,
  stream_options: { include_usage: true },
  messages: toMessages(request.system, request.messages, request.images, request.tools),
  ...(maxTokens === undefined ? {} : { max_completion_tokens: maxTokens }),
  ...(request.tools.length === 0
    ? {}
    : {
      tools: request.tools.map((t): ChatCompletionTool => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.inputSchema as Record<string, unknown> }
      }))
    })
})

const finishReason = (reason: string | null): ModelProvider.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "tool_calls":
    case "function_call":
      return "tool_calls"
    case "length":
      return "length"
    case "content_filter":
      return "content_filter"
    default:
      return "other"
  }
}


/** A tool call being streamed: `rank` orders it (its index, or its place among the calls when it came with none). */
interface StreamedCall {
  readonly rank: number
  id: string
  name: string
  args: string
}

/** A piece's `index` as a number: `"0"` is `0`; none, or one that is no whole number, is `undefined`. */
const indexOf = (index: unknown): number | undefined => {
  const number = typeof index === "string" && index.trim() !== "" ? Number(index) : index
  return typeof number === "number" && Number.isSafeInteger(number) ? number : undefined
}

/** Whether a call's arguments so far are a whole JSON value. */
const isWhole = (args: string): boolean => {
  if (args.trim() === "") return false
  try {
    JSON.parse(args)
    return true
  } catch {
    return false
  }
}

/**
 * Maps the Chat Completions stream to chunks: text deltas as they come; tool calls assembled from
 * their pieces (by index, and by id where a compatible server's indexes say less) and emitted, in index order, when the stream ends; then a finish with the
 * usage the last chunk reports.
 */
export const toChunks = (chunks: Stream.Stream<ChatCompletionChunk, ProviderFailure>): Stream.Stream<ModelProvider.ModelChunk, ProviderFailure> =>
  Stream.suspend(() => {
    // The calls in the order they began; the call streaming at each index, and the last piece's call.
    const tools: Array<StreamedCall> = []
    const open = new Map<number, StreamedCall>()
    let last: StreamedCall | undefined
    const streamed = Support.streamedCalls()
    let finish: string | null = null
    let usage: Usage | undefined
    // The model refused (`refusal` deltas): its words are the answer the user sees, and the turn says
    // it was refused (`content_filter`) rather than answered, though OpenAI ends it `stop`.
    let refused = false
    const body = Support.mapConcatArrays(chunks, (chunk): ReadonlyArray<ModelProvider.ModelChunk> => {
      if (chunk.usage != null) {
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens
        usage = {
          inputTokens: chunk.usage.prompt_tokens,
          outputTokens: chunk.usage.completion_tokens,
          ...(cached == null ? {} : { cacheReadTokens: cached })
        }
      }
      // The SDK hands on any `data:` object of a named event as a chunk: a compatible server's
      // `event: ping` (`{}`) or a status object of its own has no `choices` (or no `delta`).
      const choice = (chunk.choices as ReadonlyArray<ChatCompletionChunk.Choice> | null | undefined)?.[0]
      if (choice == null) return []
      finish = choice.finish_reason ?? finish
      const delta: Partial<ChatCompletionChunk.Choice.Delta> = choice.delta ?? {}
      // Pieces that are no objects (a `null`, `tool_calls` itself an object) are none.
      const pieces: ReadonlyArray<ChatCompletionChunk.Choice.Delta.ToolCall | null> = Array.isArray(delta.tool_calls) ? delta.tool_calls : []
      for (const piece of pieces) {
        if (typeof piece !== "object" || piece === null) continue
        const id = Support.stringField(piece.id)
        const index = indexOf(piece.index)
        let known = index === undefined ? last : open.get(index)
        // A piece with an id of its own starts a new call where one is under way already: with no
        // index, always; at an index in use, once the call there is whole (its arguments parse) —
        // a compatible server (Ollama) gives every parallel call index 0, each whole in one piece
        // with its own id, and three calls read as one `read_filelist_dir` with their arguments run
        // together. A changed id mid-arguments is still the same call (see the first id below).
        if (known !== undefined && id !== "" && known.id !== "" && id !== known.id && (index === undefined || isWhole(known.args))) known = undefined
        if (known === undefined && !streamed.takes(tools.length)) continue
        const tool = known ?? { rank: index ?? tools.length, id: "", name: "", args: "" }
        if (known === undefined) tools.push(tool)
        if (index !== undefined) open.set(index, tool)
        last = tool
        const name = Support.stringField(piece.function?.name)
        // A call's id is the one its first piece gave: one a later piece says otherwise does not
        // change which call it is (its arguments still add up).
        if (tool.id === "") tool.id = id
        // OpenAI names a call in its first piece; a compatible server that repeats the whole name
        // in every piece named it again, not longer ("read_fileread_file" was an unknown tool).
        tool.name = name !== "" && name === tool.name ? tool.name : streamed.append(tool.name, name)
        tool.args = streamed.append(tool.args, Support.stringField(piece.function?.arguments))
      }
      // Text that is no string (a number, an object) is none: it was stored as a delta no schema takes.
      const refusal = Support.stringField((delta as { refusal?: unknown }).refusal)
      if (refusal !== "") {
        refused = true
        return [ModelProvider.textDelta(refusal)]
      }
      const content = Support.stringField(delta.content)
      return content === "" ? [] : [ModelProvider.textDelta(content)]
    })
    const end = Stream.suspend(() => {
      if (finish === null) return Support.endedEarly(() => false, "a finish_reason")
      // In index order (a stable sort: calls begun at one index, or with none, in the order they began).
      const calls = [...tools].sort((a, b) => a.rank - b.rank)
      // The limit or a filter can cut only the last call: the model had finished each one before it.
      const cutAt = Support.cutsLastCall(finishReason(finish)) ? calls.length - 1 : -1
      return Stream.fromIterable([
        ...calls.map((t, i) =>
          ModelProvider.toolCall(t.id === "" ? `call_${t.rank}` : t.id, t.name, Support.parseArgs(t.args, i === cutAt))
        ),
        ModelProvider.finish(refused && finish === "stop" ? "content_filter" : finishReason(finish), usage)
      ])
    })
    return Stream.concat(body, end)
  })

/** Builds the provider; time (a `retry-after` date) comes from the `Clock`. */
export const make = (options: Options): Effect.Effect<ModelProvider.ModelProvider.Service> =>
  Effect.map(Effect.clock, (clock) => {
  const model = options.model ?? defaultModel
  const key = Redacted.value(options.apiKey)
  const client = new OpenAI({
    apiKey: key,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    maxRetries: 0,
    // The engine's idle timeout watches the stream; the SDK's overall timeout must not cut long answers.
    timeout: 60 * 60 * 1000,
    // What the endpoint answers is bounded as it arrives: an error's body, one event of the stream.
    fetch: BoundedFetch.make(),
    // `OPENAI_LOG` makes the SDK log: to stderr, never to stdout (a run's answer, ACP's channel), each line bounded and without the key.
    logger: Support.sdkLogger("openai", [key])
  })
  // The address the client sends to, whoever set it: `baseURL`, or `OPENAI_BASE_URL`, which the SDK reads when it is not given.
  const refused = Support.refusedKey(options.apiKey) ?? Support.refusedBaseUrl(client.baseURL)
  return ModelProvider.ModelProvider.of({
    capabilities: {
      provider: "openai",
      model,
      maxContextTokens: options.maxContextTokens ?? Support.contextWindow(contextWindows, model, 128_000),
      images: true
    },
    // A key no header can carry, or a base URL no request can go to, fails every request saying so, not as the SDK's unknown error.
    stream: (request) =>
      refused !== undefined ? Stream.fail(refused) : toChunks(Support.fromSdk({
        open: (signal) => Support.eventStream(client.chat.completions.create(Support.wellFormed(toRequest(request, model, options.maxOutputTokens)), { signal })),
        // The detail is logged: the key is never in it, whatever the endpoint echoed (Support.loggableDetail).
        toFailure: (error) => Support.loggableFailure(toFailure(error, clock.unsafeCurrentTimeMillis(), client.baseURL), [key]),
        idleTimeout: options.idleTimeout ?? Duration.minutes(2)
      }))
    })
  })

/** The provider as a layer. */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.effect(ModelProvider.ModelProvider, make(options))

/**
 * The options from configuration: `OPENAI_API_KEY` (required, redacted), `OPENAI_MODEL`,
 * `OPENAI_BASE_URL`, `OPENAI_MAX_OUTPUT_TOKENS`, `OPENAI_MAX_CONTEXT_TOKENS`.
 */
export const config: Config.Config<Options> = Support.config("OPENAI")

/**
 * The provider from configuration: `config` by default; pass other `Config` values to read them
 * elsewhere, e.g. `layerConfig({ ...defaults, model: Config.succeed("…") })` or `Config.map(config, …)`.
 */
export const layerConfig = (
  options: Config.Config.Wrap<Options> = config
): Layer.Layer<ModelProvider.ModelProvider, ConfigError.ConfigError> => Support.layerConfig(options, make)
