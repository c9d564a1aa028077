/**
 * The context builder port: builds each model request from the transcript, the tools, and a system
 * prompt, and estimates its tokens. Implementation: the prompt composer, whose prompt is made of
 * named parts so one can tell where every rule came from.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Tokens from "../domain/Tokens.js"
import * as Transcript from "../domain/Transcript.js"
import type { ModelRequest, ToolSpec } from "./ModelProvider.js"
import type { PathFence } from "./ToolRouter.js"

/** Where a part of the system prompt comes from. */
export type PromptSource = "base" | "workspace" | "tools" | "session" | "user" | "project" | "user-file"

/** A named part of the system prompt. Parts are joined by ascending priority, then id. */
export interface PromptPart {
  readonly id: string
  readonly source: PromptSource
  readonly priority: number
  readonly content: string
  /** For a part read from a file (`project`, `user-file`): where from, the sha256 of what was read, whether it was cut. */
  readonly path?: string | undefined
  readonly sha256?: string | undefined
  readonly truncated?: boolean | undefined
}

/**
 * The messages of a transcript as a request carries them, the length of their JSON array, and the
 * share of it each writer's thinking is (`Transcript.writerKey`; absent when they carry none).
 */
export interface Rendering {
  readonly messages: ReadonlyArray<Transcript.Message>
  readonly jsonLength: number
  readonly thinkingChars?: ReadonlyMap<string, number> | undefined
}

/** Who a request goes to: the provider sends back only the thinking this model wrote (`Transcript.sendableTo`). */
export interface Recipient {
  readonly provider: string
  readonly model: string
  /** See `ModelProvider.Capabilities.dropsUnopenedTurnThinking`: the active turn's thinking then is not counted when it is not sent. */
  readonly dropsUnopenedTurnThinking?: boolean | undefined
}

/** What a request is built from. */
export interface ContextInput {
  readonly sessionId: string
  /** The turn the request is for: what a builder reads from files is read once per turn. */
  readonly turnId?: string | undefined
  readonly cwd: string
  readonly transcript: Transcript.Transcript
  readonly tools: ReadonlyArray<ToolSpec>
  /**
   * The transcript's messages and their JSON length, as `Transcript.rendered` gives them — kept up
   * to date by the engine as its events are stored, so a request in turn 2,000 renders only what
   * changed since the last one. A builder may use it in place of rendering the transcript; when it
   * is absent, the transcript is rendered (see {@link renderingOf}).
   */
  readonly rendered?: (() => Rendering) | undefined
  /**
   * The model the request goes to (the engine's provider's): thinking another model wrote, which
   * the provider leaves out, is not counted in the estimate. Absent, all of it is.
   */
  readonly sendsTo?: Recipient | undefined
  /**
   * What the session's read rules fence (a deny or ask rule for `read_file`): a file the builder
   * reads on its own (project instructions) and this fences is left out. Absent, nothing is.
   */
  readonly leaveOut?: PathFence | undefined
}

/** Estimated tokens of a request, by where they come from. */
export interface TokenEstimate {
  readonly instruction: number
  readonly transcript: number
  readonly tools: number
  readonly total: number
}

/** A built request, the parts its system prompt was composed of, and its token estimate. */
export interface BuiltContext {
  readonly request: ModelRequest
  readonly parts: ReadonlyArray<PromptPart>
  readonly tokens: TokenEstimate
}

/** The context builder port. */
export class ContextBuilder extends Context.Tag("effect-agent/ContextBuilder")<ContextBuilder, ContextBuilder.Service>() {}

/** The context builder port. */
export declare namespace ContextBuilder {
  /** What a context builder does. */
  export interface Service {
    /** Builds one model request (and its token estimate) from the session's transcript. */
    readonly build: (input: ContextInput) => Effect.Effect<BuiltContext>
  }
}

/** Joins parts into a system prompt: by priority, then id (code-unit order: no locale reorders it); empty parts left out. */
export const compose = (parts: ReadonlyArray<PromptPart>): string =>
  [...parts]
    .filter((part) => part.content.trim() !== "")
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((part) => part.content.trim())
    .join("\n\n")

const toolTokensOf = new WeakMap<ReadonlyArray<ToolSpec>, number>()

/** The tokens of a request's tools: estimated once per list (the engine's steps reuse one, see `toolSpecs`). */
const toolTokens = (tools: ReadonlyArray<ToolSpec>): number => {
  if (tools.length === 0) return 0
  let tokens = toolTokensOf.get(tools)
  if (tokens === undefined) {
    tokens = Tokens.estimateJson(tools)
    toolTokensOf.set(tools, tokens)
  }
  return tokens
}

/** Whether a request to `to` leaves out the thinking of the active turn of `messages` (it does not open with thinking `to` is sent). */
const dropsActiveThinking = (messages: ReadonlyArray<Transcript.Message>, to: Recipient | undefined): to is Recipient =>
  to?.dropsUnopenedTurnThinking === true && !Transcript.activeTurnThinks(messages, (block) => Transcript.sendableTo(block, to.provider, to.model))

/** The messages as a request to `to` carries them: other models' thinking left out, and the active turn's when it drops it. */
const sentMessages = (messages: ReadonlyArray<Transcript.Message>, to: Recipient | undefined): ReadonlyArray<Transcript.Message> => {
  if (to === undefined) return messages
  const sent = Transcript.sentTo(messages, to)
  return dropsActiveThinking(messages, to) ? Transcript.withoutActiveThinking(sent) : sent
}

/** The token estimate of a request; to `sendsTo`, without the thinking it is not sent. */
export const estimate = (request: ModelRequest, sendsTo?: Recipient): TokenEstimate => {
  const instruction = Tokens.estimate(request.system)
  const transcript = Tokens.estimateJson(sentMessages(request.messages, sendsTo))
  const tools = toolTokens(request.tools)
  return { instruction, transcript, tools, total: instruction + transcript + tools }
}

/** The messages of the input's transcript and the length of their JSON: the engine's rendering when given, else rendered here. */
export const renderingOf = (input: ContextInput | Transcript.Transcript): Rendering =>
  "transcript" in input ? (input.rendered?.() ?? Transcript.rendered(input.transcript)) : Transcript.rendered(input)

/**
 * Builds a request from prompt parts and the input. Its token estimate equals `estimate(request,
 * input.sendsTo)`, but the transcript's share comes from what the transcript keeps rendered per
 * entry, so a long session's request costs what changed since the last one, not the whole
 * conversation again.
 */
export const buildWith = (parts: ReadonlyArray<PromptPart>, input: ContextInput): BuiltContext => {
  const { jsonLength, messages, thinkingChars } = renderingOf(input)
  const request: ModelRequest = { system: compose(parts), messages, tools: input.tools }
  const instruction = Tokens.estimate(request.system)
  const sendsTo = input.sendsTo
  const sent = sendsTo === undefined
    ? jsonLength
    : Transcript.sentJsonLength(jsonLength, thinkingChars, sendsTo) -
      // Only the active turn's messages are looked at again, and only when the request drops their thinking.
      (dropsActiveThinking(messages, sendsTo) ? Transcript.activeThinkingChars(messages, sendsTo) : 0)
  const transcript = Math.ceil(sent / 4)
  const tools = toolTokens(request.tools)
  return { request, parts, tokens: { instruction, transcript, tools, total: instruction + transcript + tools } }
}

/** The builder the engine uses when none is provided: the transcript and tools, no system prompt. */
export const transcriptOnly: ContextBuilder.Service = { build: (input) => Effect.succeed(buildWith([], input)) }
