/**
 * A model provider on Anthropic's Messages API, streaming through the official SDK
 * (`@anthropic-ai/sdk`). The SDK's own retries are off: the engine retries, so the log shows every
 * attempt.
 *
 * @since 0.1.0
 */
import Anthropic from "@anthropic-ai/sdk"
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  StopReason,
  Tool
} from "@anthropic-ai/sdk/resources/messages/messages"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { Usage } from "../domain/AgentEvent.js"
import { ProviderFailure } from "../domain/Errors.js"
import type { ImageRef } from "../domain/Image.js"
import * as Transcript from "../domain/Transcript.js"
import type { Message, ThinkingBlock } from "../domain/Transcript.js"
import * as ModelProvider from "../services/ModelProvider.js"
import * as BoundedFetch from "./providers/BoundedFetch.js"
import * as Support from "./providers/Support.js"

/**
 * Options of the Anthropic provider; `maxOutputTokens` defaults to 8192. `promptCaching` (default
 * true): cache breakpoints on the tools, the system prompt and the recent history (see
 * {@link withCacheBreakpoints}); `false` sends none. `thinkingBudget`: asks for extended thinking
 * with this many tokens of budget (`thinking: {type: "enabled", budget_tokens}`); `thinking:
 * "adaptive"`: asks for adaptive thinking (`thinking: {type: "adaptive"}`: the model decides when
 * and how much to think — what current Claude models take, where a budget is deprecated or
 * refused); the two exclude each other, and absent both, none is asked for. `thinkingDisplay`: how
 * the thinking comes back (`summarized`, or `omitted`: signed blocks with no text), with either.
 * `effort`: `output_config.effort`, how much effort the model puts into its response (with
 * adaptive thinking, how much it thinks). See {@link checkedThinking} for the API's rules.
 */
export type Options = Support.VendorOptions & {
  readonly promptCaching?: boolean | undefined
  readonly thinkingBudget?: number | undefined
  readonly thinking?: "adaptive" | undefined
  readonly thinkingDisplay?: ThinkingDisplay | undefined
  readonly effort?: Effort | undefined
}

/** How thinking comes back: `summarized` (its text), or `omitted` (signed blocks with no text). */
export type ThinkingDisplay = "summarized" | "omitted"

/** The display values the API takes. */
export const thinkingDisplays: ReadonlyArray<ThinkingDisplay> = ["summarized", "omitted"]

/** How much effort the model puts into its response (`output_config.effort`). */
export type Effort = "low" | "medium" | "high" | "xhigh" | "max"

/** The effort values the API takes. */
export const efforts: ReadonlyArray<Effort> = ["low", "medium", "high", "xhigh", "max"]

/** What a request asks of thinking: a budget or adaptive thinking, its display, and the effort. */
export type ThinkingOptions = Pick<Options, "thinkingBudget" | "thinking" | "thinkingDisplay" | "effort">

/** The smallest thinking budget the API takes. */
export const minThinkingBudget = 1024

/**
 * Why a thinking budget is one the API refuses with these output tokens, or `undefined`: a whole
 * number of at least {@link minThinkingBudget}, below `max_tokens` (thinking counts toward it). The
 * API also refuses `temperature` and `top_k` with thinking: this adapter sends neither.
 */
export const thinkingBudgetProblem = (budget: number, maxOutputTokens: number): string | undefined =>
  !Number.isSafeInteger(budget)
    ? "must be a whole number of tokens"
    : budget < minThinkingBudget
    ? `must be at least ${minThinkingBudget} tokens (the API's minimum)`
    : budget >= maxOutputTokens
    ? `must be less than the output token limit (${maxOutputTokens}; thinking counts toward it): raise the output token limit or lower the budget`
    : undefined

/** The most output tokens one response may have when the options set none. */
export const defaultMaxOutputTokens = 8192

/**
 * Why these thinking options are ones the API refuses (or that ask for nothing they name), or
 * `undefined`: a budget as {@link thinkingBudgetProblem} says; adaptive thinking has no budget, so
 * both is a contradiction; a display with neither shows nothing; values the API does not know (an
 * embedder's, from JavaScript) are named. The key of the option at fault comes with the problem.
 */
export const thinkingProblem = (options: ThinkingOptions, maxOutputTokens: number): readonly [keyof ThinkingOptions, string] | undefined => {
  if (options.thinking !== undefined && options.thinking !== "adaptive") return ["thinking", `the thinking must be "adaptive" (or a thinkingBudget)`]
  if (options.thinking === "adaptive" && options.thinkingBudget !== undefined) {
    return ["thinking", "adaptive thinking has no budget: ask for adaptive thinking or a thinking budget, not both (the effort sets how much adaptive thinking thinks)"]
  }
  if (options.thinkingBudget !== undefined) {
    const problem = thinkingBudgetProblem(options.thinkingBudget, maxOutputTokens)
    if (problem !== undefined) return ["thinkingBudget", `the thinking budget ${problem}`]
  }
  if (options.thinkingDisplay !== undefined && !thinkingDisplays.includes(options.thinkingDisplay)) {
    return ["thinkingDisplay", `the thinking display must be one of ${thinkingDisplays.join(", ")}`]
  }
  if (options.thinkingDisplay !== undefined && options.thinking === undefined && options.thinkingBudget === undefined) {
    return ["thinkingDisplay", "a thinking display needs thinking asked for: adaptive thinking or a thinking budget"]
  }
  if (options.effort !== undefined && !efforts.includes(options.effort)) return ["effort", `the effort must be one of ${efforts.join(", ")}`]
  return undefined
}

/**
 * The options, or a `ConfigError` naming what the API would refuse in them — found when the provider
 * is made, before any request, rather than as every request's 400 (see {@link thinkingProblem}).
 */
export const checkedThinking = (options: Options): Either.Either<Options, ConfigError.ConfigError> => {
  const problem = thinkingProblem(options, options.maxOutputTokens ?? defaultMaxOutputTokens)
  return problem === undefined ? Either.right(options) : Either.left(ConfigError.InvalidData([problem[0]], problem[1]))
}

/** The default model. */
export const defaultModel = "claude-sonnet-5-5"

/**
 * Context windows of known models, by name prefix. Claude models take 200 000 tokens by default
 * (some more, behind a beta flag); set `maxContextTokens` to use a larger window.
 */
export const contextWindows: ReadonlyArray<readonly [string, number]> = [["claude-", 200_000]]

const isContextOverflow = (message: string) =>
  /prompt is too long|context (window|limit|length)|exceed(s|ed)? (the )?context|too many (input )?tokens/i.test(message)

/**
 * Translates what the SDK throws; the vendor's message is kept as `detail`, for logs only. `now` (from
 * the `Clock`) dates a `retry-after` given as an HTTP date; `baseURL`, where the client sends its
 * requests, is named when it could not connect.
 */
export const toFailure = (error: unknown, now: number, baseURL?: string): ProviderFailure => {
  const own = Support.ownFailure(error)
  if (own !== undefined) return own
  const { headers, message, status, type } = Support.shapeOf(error)
  const extra = {
    cause: error,
    ...(status === undefined ? {} : { status }),
    ...(() => {
      const retryAfterMs = Support.retryAfterMs(headers, now)
      return retryAfterMs === undefined ? {} : { retryAfterMs }
    })()
  }
  if (Support.isTooDeep(error)) return ProviderFailure.of("server", Support.tooDeepDetail, extra)
  if (error instanceof Anthropic.APIConnectionError && baseURL !== undefined) return ProviderFailure.of("network", Support.unreachable(message, error, baseURL), extra)
  if (error instanceof Anthropic.APIConnectionError || Support.isBrokenConnection(error)) return ProviderFailure.of("network", message, extra)
  if (type === "overloaded_error" || status === 529) return ProviderFailure.of("overloaded", message, extra)
  if (type === "rate_limit_error") return ProviderFailure.of("rate_limited", message, extra)
  if (type === "authentication_error" || type === "permission_error") return ProviderFailure.of("authentication", message, extra)
  if ((type === "invalid_request_error" || status === 400 || status === 413) && isContextOverflow(message)) {
    return ProviderFailure.of("context_overflow", message, extra)
  }
  if ((type === "invalid_request_error" || status === 400) && Support.isThinkingRequired(message)) {
    return ProviderFailure.of("invalid_request", `${Support.thinkingRequiredDetail} (${message})`, extra)
  }
  if (type === "invalid_request_error" || type === "not_found_error" || type === "request_too_large") {
    return ProviderFailure.of("invalid_request", message, extra)
  }
  if (type === "api_error" || type === "timeout_error") return ProviderFailure.of("server", message, extra)
  if (status !== undefined) return ProviderFailure.of(Support.reasonOfStatus(status), message, extra)
  return ProviderFailure.of("unknown", message, extra)
}

/** Images as `image` blocks with a base64 source (an image whose bytes the request lacks is left out: the engine put a note in its place). */
const imageBlocks = (refs: ReadonlyArray<ImageRef>, images: ReadonlyMap<string, Uint8Array>) =>
  refs.flatMap((image) => {
    const bytes = images.get(image.blob)
    return bytes === undefined
      ? []
      : [{ type: "image" as const, source: { type: "base64" as const, media_type: image.mediaType, data: Buffer.from(bytes).toString("base64") } }]
  })

/**
 * A thinking block as the API takes it back, unmodified — only one `model` wrote: a signature is its
 * writer's, and another model's (or provider's) is left out, as thinking from before a switch is the
 * other model's, not this one's to continue.
 */
const thinkingBlock = (block: ThinkingBlock, model: string | undefined): Array<ContentBlockParam> =>
  model === undefined || !Transcript.sendableTo(block, "anthropic", model)
    ? []
    : block.redacted !== undefined
    ? [{ type: "redacted_thinking", data: block.redacted }]
    : block.signature !== undefined
    ? [{ type: "thinking", thinking: block.text, signature: block.signature }]
    : []

/**
 * The transcript in the Messages API's shape: tool results are user content, and a role never
 * repeats. `model`: the model the request goes to, whose own thinking blocks are sent back in each
 * assistant message where the response gave them (Transcript.inResponseOrder), as the API requires
 * of a turn with tool use (none without it).
 */
export const toMessages = (
  messages: ReadonlyArray<Message>,
  images: ReadonlyMap<string, Uint8Array> = new Map(),
  tools: ReadonlyArray<{ readonly name: string }> = [],
  model?: string
): Array<MessageParam> => {
  const sentName = Support.sentToolNames(tools, messages)
  const out: Array<{ role: "user" | "assistant"; content: Array<ContentBlockParam> }> = []
  const push = (role: "user" | "assistant", blocks: ReadonlyArray<ContentBlockParam>) => {
    if (blocks.length === 0) return
    const last = out.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else out.push({ role, content: [...blocks] })
  }
  for (const message of messages) {
    switch (message.role) {
      case "user":
        push("user", [
          // Images first, as Anthropic advises; an empty text block is refused by the API, so none is sent.
          ...imageBlocks(message.images ?? [], images),
          ...(message.content === "" && message.images !== undefined ? [] : [{ type: "text" as const, text: message.content }])
        ])
        break
      case "assistant":
        push(
          "assistant",
          Transcript.inResponseOrder<ContentBlockParam>(message, message.thinking ?? [], {
            thinking: (block) => thinkingBlock(block, model),
            text: (text) => ({ type: "text", text }),
            call: (call) => ({ type: "tool_use", id: call.toolCallId, name: sentName(call.tool), input: Support.argsObject(call.args) })
          })
        )
        break
      case "tool":
        push("user", [{
          type: "tool_result",
          tool_use_id: message.toolCallId,
          // A result with images is a list of blocks: its text, then the images.
          content: message.images === undefined
            ? message.content
            : [{ type: "text" as const, text: message.content }, ...imageBlocks(message.images, images)],
          is_error: message.isError
        }])
        break
    }
  }
  return out
}

/**
 * The `thinking` and `output_config` a request carries, and its messages. A budget asks for
 * thinking only when the active assistant turn opens with this model's thinking (or none has
 * begun): the API refuses a turn that toggles it (see Transcript.activeTurnThinks), so such a
 * request asks for none and carries none of the turn's blocks. Adaptive thinking is asked for in
 * every request: the model decides at each step whether to think, so a turn that does not open with
 * thinking (a step it chose not to think in, or one a compaction summarised away) is one an adaptive
 * response may be; "disabled" mid-turn would change the turn's thinking configuration, which the
 * API refuses (and some models take no "disabled"). What remains of the turn's blocks goes back in place.
 */
const thinkingOf = (request: ModelProvider.ModelRequest, model: string, asked: ThinkingOptions) => {
  const display = asked.thinkingDisplay === undefined ? {} : { display: asked.thinkingDisplay }
  const output = asked.effort === undefined ? {} : { output_config: { effort: asked.effort } }
  if (asked.thinking === "adaptive") return { params: { thinking: { type: "adaptive" as const, ...display }, ...output }, messages: request.messages }
  const budget = asked.thinkingBudget !== undefined && Transcript.activeTurnThinks(request.messages, (block) => Transcript.sendableTo(block, "anthropic", model))
    ? asked.thinkingBudget
    : undefined
  return {
    params: { ...(budget === undefined ? {} : { thinking: { type: "enabled" as const, budget_tokens: budget, ...display } }), ...output },
    messages: budget === asked.thinkingBudget ? request.messages : Transcript.withoutActiveThinking(request.messages)
  }
}

/**
 * The request body for one model request; with `promptCaching` (the default), its cache breakpoints;
 * with `thinking` (a budget, or {@link ThinkingOptions}), thinking asked for as {@link thinkingOf} says.
 */
export const toRequest = (
  request: ModelProvider.ModelRequest,
  model: string,
  maxTokens: number,
  promptCaching = true,
  thinking: number | ThinkingOptions = {}
): MessageCreateParamsStreaming => {
  const { messages, params } = thinkingOf(request, model, typeof thinking === "number" ? { thinkingBudget: thinking } : thinking)
  const body: MessageCreateParamsStreaming = {
    model,
    max_tokens: maxTokens,
    stream: true,
    ...params,
    ...(request.system === "" ? {} : { system: request.system }),
    messages: toMessages(messages, request.images, request.tools, model),
    ...(request.tools.length === 0
      ? {}
      : { tools: request.tools.map((t): Tool => ({ name: t.name, description: t.description, input_schema: t.inputSchema as Tool["input_schema"] })) })
  }
  return promptCaching ? withCacheBreakpoints(body) : body
}

const ephemeral = { type: "ephemeral" } as const

/** How many cache breakpoints the history gets: with the tools' and the system prompt's, the API's limit of four. */
const historyBreakpoints = 2

/**
 * The body with Anthropic's prompt-cache breakpoints (`cache_control`): on the last tool (the tools
 * are the prompt's first part), on the system prompt, and on the last block of the last two user
 * messages (a user's message or tool results) — the last caches the conversation for the next
 * request, the one before still matches it when a turn adds a step. Four in all, as the API allows.
 */
export const withCacheBreakpoints = (body: MessageCreateParamsStreaming): MessageCreateParamsStreaming => {
  const tools = body.tools?.map((tool, i, all) => (i === all.length - 1 ? { ...tool, cache_control: ephemeral } : tool))
  const system = typeof body.system === "string" ? [{ type: "text" as const, text: body.system, cache_control: ephemeral }] : body.system
  let marked = 0
  const messages = [...body.messages]
  for (let i = messages.length - 1; i >= 0 && marked < historyBreakpoints; i--) {
    const message = messages[i]!
    if (message.role !== "user" || typeof message.content === "string" || message.content.length === 0) continue
    const content = [...message.content]
    content[content.length - 1] = { ...content.at(-1)!, cache_control: ephemeral } as ContentBlockParam
    messages[i] = { ...message, content }
    marked++
  }
  return { ...body, ...(tools === undefined ? {} : { tools }), ...(system === undefined ? {} : { system }), messages }
}

const finishReason = (reason: StopReason | null): ModelProvider.FinishReason => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "tool_use":
      return "tool_calls"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "refusal":
      return "content_filter"
    default:
      return "other"
  }
}


/**
 * Maps the Messages stream to chunks: text deltas as they come, each tool call once its
 * `input_json_delta` pieces are complete (one with none, at the next event: see `held`), and a
 * finish with usage at `message_stop`.
 */
export const toChunks = (events: Stream.Stream<RawMessageStreamEvent, ProviderFailure>): Stream.Stream<ModelProvider.ModelChunk, ProviderFailure> =>
  Stream.suspend(() => {
    const tools = new Map<number, { id: string; name: string; json: string }>()
    // The thinking blocks streaming, by index: a thinking block's signature so far, a redacted block's data.
    const thinking = new Map<number, { signature: string } | { redacted: string }>()
    const streamed = Support.streamedCalls()
    let usage: Usage = { inputTokens: 0, outputTokens: 0 }
    let stop: StopReason | null = null
    let started = false
    // `message_stop` came: the response is whole. A stream that ends before it was cut (the connection
    // closed early), and what may come after it is no part of the response.
    let stopped = false
    // A tool block closed with no argument text: a finished call with none (`{}`) — unless it is the
    // response's last and the output limit (or a refusal) ended the response, which cut it before
    // its first byte (Anthropic closes the blocks it cuts). So it is handed on at the next event, once that says it
    // was not the last, or at the end, with the stop reason known.
    let held: { readonly id: string; readonly name: string } | undefined = undefined
    const release = (cut: boolean): ReadonlyArray<ModelProvider.ModelChunk> => {
      if (held === undefined) return []
      const call = ModelProvider.toolCall(held.id, held.name, cut ? "" : {})
      held = undefined
      return [call]
    }
    // Thinking blocks at these indexes never stopped (open when another block started — at their index
    // too, a proxy's splice —, at message_stop or when the stream ended): each ends here unsigned, shown and never sent back.
    // Left open, the next block's text joined it and went back under that block's signature: a modified
    // block, which the API refuses in every later request to the model.
    const cutThinking = (indexes: ReadonlyArray<number>): ReadonlyArray<ModelProvider.ModelChunk> =>
      indexes.flatMap((index) => (thinking.delete(index) ? [ModelProvider.thinkingBlock({})] : []))
    const chunksOf = (event: RawMessageStreamEvent): ReadonlyArray<ModelProvider.ModelChunk> => {
      switch (event.type) {
        case "message_start": {
          // A response starts once. A second start (a proxy's splice, a hostile stream) describes
          // nothing billed: taking its usage lost the first's input count (read 0 instead of 412).
          if (started) return []
          started = true
          // A compatible endpoint may send no usage (or no message): the counts stay 0, the text is kept.
          const u: Partial<Anthropic.Usage> = event.message?.usage ?? {}
          usage = {
            inputTokens: u.input_tokens ?? 0,
            outputTokens: u.output_tokens ?? 0,
            ...(u.cache_read_input_tokens == null ? {} : { cacheReadTokens: u.cache_read_input_tokens }),
            ...(u.cache_creation_input_tokens == null ? {} : { cacheWriteTokens: u.cache_creation_input_tokens })
          }
          return []
        }
        case "content_block_start": {
          // A block started again at the index of a tool block never stopped: that call is not lost
          // (it was, overwritten) but handed on as one the stream never stopped (see message_stop).
          const replaced = tools.get(event.index)
          tools.delete(event.index)
          // A thinking block still open ends here too: blocks stream one at a time, and a response's
          // thinking deltas belong to its latest block (the transcript joins them).
          const before = [...(replaced === undefined ? [] : [ModelProvider.toolCall(replaced.id, replaced.name, replaced.json)]), ...cutThinking([...thinking.keys()])]
          const block = event.content_block as Partial<typeof event.content_block> | undefined
          if (block?.type === "tool_use" && streamed.takes(tools.size)) {
            // An id or name that is no string is none: the engine gives the call an id of its own, and no tool has no name.
            tools.set(event.index, { id: Support.stringField(block.id), name: Support.stringField(block.name), json: "" })
          }
          if (block?.type === "thinking") {
            // A start may carry the block's first text and signature (the API sends them empty, then deltas).
            thinking.set(event.index, { signature: Support.stringField(block.signature) })
            const text = Support.stringField(block.thinking)
            return text === "" ? before : [...before, ModelProvider.thinkingDelta(text)]
          }
          if (block?.type === "redacted_thinking") thinking.set(event.index, { redacted: Support.stringField(block.data) })
          const text = block?.type === "text" ? Support.stringField(block.text) : ""
          return text === "" ? before : [...before, ModelProvider.textDelta(text)]
        }
        case "content_block_delta": {
          // A delta whose text is no string (or that has no delta) carries nothing.
          const delta = event.delta as Partial<typeof event.delta> | undefined
          if (delta?.type === "text_delta") return typeof delta.text === "string" ? [ModelProvider.textDelta(delta.text)] : []
          // Thinking and its signature count only inside a thinking block: a signature elsewhere signs nothing.
          if (delta?.type === "thinking_delta" || delta?.type === "signature_delta") {
            const block = thinking.get(event.index)
            if (block === undefined || !("signature" in block)) return []
            if (delta.type === "signature_delta") block.signature += Support.stringField(delta.signature)
            const text = delta.type === "thinking_delta" ? Support.stringField(delta.thinking) : ""
            return text === "" ? [] : [ModelProvider.thinkingDelta(text)]
          }
          if (delta?.type === "input_json_delta") {
            const tool = tools.get(event.index)
            if (tool !== undefined) tool.json = streamed.append(tool.json, Support.stringField(delta.partial_json))
          }
          return []
        }
        case "content_block_stop": {
          const block = thinking.get(event.index)
          if (block !== undefined) {
            thinking.delete(event.index)
            // A thinking block the stream did not sign is handed on unsigned: shown, never sent back.
            return [ModelProvider.thinkingBlock("signature" in block ? { signature: block.signature === "" ? undefined : block.signature } : block)]
          }
          const tool = tools.get(event.index)
          if (tool === undefined) return []
          tools.delete(event.index)
          if (tool.json.trim() !== "") return [ModelProvider.toolCall(tool.id, tool.name, Support.parseArgs(tool.json))]
          held = { id: tool.id, name: tool.name }
          return []
        }
        case "message_delta": {
          stop = event.delta?.stop_reason ?? stop
          // message_delta's usage is cumulative for the response; one without (a compatible endpoint's) changes none.
          const u: Partial<typeof event.usage> = event.usage ?? {}
          usage = {
            ...usage,
            ...(u.output_tokens == null ? {} : { outputTokens: u.output_tokens }),
            ...(u.input_tokens == null ? {} : { inputTokens: u.input_tokens }),
            ...(u.cache_read_input_tokens == null ? {} : { cacheReadTokens: u.cache_read_input_tokens }),
            ...(u.cache_creation_input_tokens == null ? {} : { cacheWriteTokens: u.cache_creation_input_tokens })
          }
          return []
        }
        case "message_stop": {
          stopped = true
          // A tool block never stopped (the stream cut inside it): its call, with what came of its
          // arguments as a string (even none), which no tool takes — never `{}`, which some would.
          const unfinished = [...tools.values()].map((tool) => ModelProvider.toolCall(tool.id, tool.name, tool.json))
          tools.clear()
          return [...cutThinking([...thinking.keys()]), ...release(Support.cutsLastCall(finishReason(stop))), ...unfinished, ModelProvider.finish(finishReason(stop), usage)]
        }
        default:
          return []
      }
    }
    const body = Support.mapConcatArrays(events, (event) =>
      stopped
        ? []
        : held === undefined || event.type === "message_delta" || event.type === "message_stop"
        ? chunksOf(event)
        : [...release(false), ...chunksOf(event)])
    const cutAtEnd = Stream.suspend(() => Stream.fromIterable(cutThinking([...thinking.keys()])))
    return Stream.concat(Stream.concat(body, cutAtEnd), Support.endedEarly(() => stopped, "message_stop"))
  })

/**
 * A provider's failure for every request when its thinking options are ones the API refuses (a layer
 * built from options: {@link layerConfig} refuses it when it is built): `invalid_request`, saying
 * why, with no request sent.
 */
const refusedThinking = (options: Options): ProviderFailure | undefined =>
  Either.match(checkedThinking(options), { onLeft: (error) => ProviderFailure.of("invalid_request", error.message), onRight: () => undefined })

/**
 * Builds the provider; time (a `retry-after` date) comes from the `Clock`. Options the API would
 * refuse every request of fail every request, saying why, before sending it (see {@link checkedThinking}).
 */
export const make = (options: Options): Effect.Effect<ModelProvider.ModelProvider.Service> =>
  Effect.map(Effect.clock, (clock) => {
  const model = options.model ?? defaultModel
  const key = Redacted.value(options.apiKey)
  const client = new Anthropic({
    apiKey: key,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    maxRetries: 0,
    // The engine's idle timeout watches the stream; the SDK's overall timeout must not cut long answers.
    timeout: 60 * 60 * 1000,
    // What the endpoint answers is bounded as it arrives: an error's body, one event of the stream.
    fetch: BoundedFetch.make(),
    // `ANTHROPIC_LOG` makes the SDK log: to stderr, never to stdout (a run's answer, ACP's channel), each line bounded and without the key.
    logger: Support.sdkLogger("anthropic", [key])
  })
  // The address the client sends to, whoever set it: `baseURL`, or `ANTHROPIC_BASE_URL`, which the SDK reads when it is not given.
  const refused = Support.refusedKey(options.apiKey) ?? Support.refusedBaseUrl(client.baseURL) ?? refusedThinking(options)
  const maxTokens = options.maxOutputTokens ?? defaultMaxOutputTokens
  return ModelProvider.ModelProvider.of({
    capabilities: {
      provider: "anthropic",
      model,
      maxContextTokens: options.maxContextTokens ?? Support.contextWindow(contextWindows, model, 200_000),
      images: true,
      // With a budget a turn that does not open with thinking is sent without its blocks (see thinkingOf).
      ...(options.thinkingBudget === undefined ? {} : { dropsUnopenedTurnThinking: true })
    },
    // A key no header can carry, or a base URL no request can go to, fails every request saying so, not as the SDK's unknown error.
    stream: (request) =>
      refused !== undefined ? Stream.fail(refused) : toChunks(Support.fromSdk({
        open: (signal) =>
          Support.eventStream(
            client.messages.create(Support.wellFormed(toRequest(request, model, maxTokens, options.promptCaching ?? true, options)), { signal })
          ),
        // The detail is logged: the key is never in it, whatever the endpoint echoed (Support.loggableDetail).
        toFailure: (error) => Support.loggableFailure(toFailure(error, clock.unsafeCurrentTimeMillis(), client.baseURL), [key]),
        idleTimeout: options.idleTimeout ?? Duration.minutes(2)
      }))
    })
  })

/** The provider as a layer. */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.effect(ModelProvider.ModelProvider, make(options))

/** The environment variable of each thinking option, as {@link config} reads it. */
export const thinkingVariables = {
  thinkingBudget: "ANTHROPIC_THINKING_BUDGET",
  thinking: "ANTHROPIC_THINKING",
  thinkingDisplay: "ANTHROPIC_THINKING_DISPLAY",
  effort: "ANTHROPIC_EFFORT"
} as const

/**
 * Each thinking option from configuration, none when its variable is unset; a value it cannot be
 * fails naming the variable. Apart from the rest, so that a caller laying its own value over one
 * (the CLI's flags) reads only the others: a variable it replaced cannot fail it.
 */
export const thinkingConfigs = {
  thinkingBudget: Config.option(Config.integer(thinkingVariables.thinkingBudget)),
  thinking: Config.option(Config.literal("adaptive")(thinkingVariables.thinking)),
  thinkingDisplay: Config.option(Config.literal(...thinkingDisplays)(thinkingVariables.thinkingDisplay)),
  effort: Config.option(Config.literal(...efforts)(thinkingVariables.effort))
}

/**
 * The options from configuration but the thinking ones: `ANTHROPIC_API_KEY` (required, redacted),
 * `ANTHROPIC_MODEL`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MAX_OUTPUT_TOKENS`, `ANTHROPIC_MAX_CONTEXT_TOKENS`.
 */
export const connectionConfig: Config.Config<Options> = Support.config("ANTHROPIC")

/**
 * The options from configuration: {@link connectionConfig}'s, and {@link thinkingConfigs}':
 * `ANTHROPIC_THINKING_BUDGET` (extended thinking's budget in tokens), `ANTHROPIC_THINKING`
 * (`adaptive`), `ANTHROPIC_THINKING_DISPLAY` (`summarized`, `omitted`), `ANTHROPIC_EFFORT` (`low` …
 * `max`); absent, none is asked for.
 */
export const config: Config.Config<Options> = Config.zipWith(
  connectionConfig,
  Config.all(thinkingConfigs),
  // Only the options set: an absent one is no key at all, as before these existed.
  (options, thinking): Options => ({
    ...options,
    ...Option.match(thinking.thinkingBudget, { onNone: () => ({}), onSome: (thinkingBudget) => ({ thinkingBudget }) }),
    ...Option.match(thinking.thinking, { onNone: () => ({}), onSome: (thinking) => ({ thinking }) }),
    ...Option.match(thinking.thinkingDisplay, { onNone: () => ({}), onSome: (thinkingDisplay) => ({ thinkingDisplay }) }),
    ...Option.match(thinking.effort, { onNone: () => ({}), onSome: (effort) => ({ effort }) })
  })
)

/**
 * The provider from configuration: `config` by default; pass other `Config` values to read them
 * elsewhere, e.g. `layerConfig({ ...defaults, model: Config.succeed("…") })` or `Config.map(config, …)`.
 */
export const layerConfig = (
  options: Config.Config.Wrap<Options> = config
): Layer.Layer<ModelProvider.ModelProvider, ConfigError.ConfigError> =>
  // A thinking budget the API refuses fails the layer as it is built, before any request.
  Support.layerConfig(options, (checked) => Effect.flatMap(checkedThinking(checked), make))
