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

/** Where a part of the system prompt comes from. */
export type PromptSource = "base" | "workspace" | "tools" | "session" | "user"

/** A named part of the system prompt. Parts are joined by ascending priority, then id. */
export interface PromptPart {
  readonly id: string
  readonly source: PromptSource
  readonly priority: number
  readonly content: string
}

/** What a request is built from. */
export interface ContextInput {
  readonly sessionId: string
  readonly cwd: string
  readonly transcript: Transcript.Transcript
  readonly tools: ReadonlyArray<ToolSpec>
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

/** Joins parts into a system prompt: by priority, then id; empty parts left out. */
export const compose = (parts: ReadonlyArray<PromptPart>): string =>
  [...parts]
    .filter((part) => part.content.trim() !== "")
    .sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id))
    .map((part) => part.content.trim())
    .join("\n\n")

/** The token estimate of a request. */
export const estimate = (request: ModelRequest): TokenEstimate => {
  const instruction = Tokens.estimate(request.system)
  const transcript = Tokens.estimateJson(request.messages)
  const tools = request.tools.length === 0 ? 0 : Tokens.estimateJson(request.tools)
  return { instruction, transcript, tools, total: instruction + transcript + tools }
}

type Rendering = () => { readonly messages: ReadonlyArray<Transcript.Message>; readonly jsonLength: number }

// Renderings the engine keeps up to date for the transcripts it hands to a builder (see
// engine/LiveTranscript.ts): a request in turn 2,000 then renders only what changed since the last.
const renderings = new WeakMap<Transcript.Transcript, Rendering>()

/**
 * Hands over, with a transcript, how to get its messages and their JSON length without rendering
 * the whole transcript again.
 *
 * @internal
 */
export const withRendering = (transcript: Transcript.Transcript, rendering: Rendering): Transcript.Transcript => {
  renderings.set(transcript, rendering)
  return transcript
}

/** The messages of a transcript and the length of their JSON, as `Transcript.rendered` gives them. */
export const renderingOf = (transcript: Transcript.Transcript) => renderings.get(transcript)?.() ?? Transcript.rendered(transcript)

/**
 * Builds a request from prompt parts and the input. Its token estimate equals `estimate(request)`,
 * but the transcript's share comes from what the transcript keeps rendered per entry, so a long
 * session's request costs what changed since the last one, not the whole conversation again.
 */
export const buildWith = (parts: ReadonlyArray<PromptPart>, input: ContextInput): BuiltContext => {
  const { jsonLength, messages } = renderingOf(input.transcript)
  const request: ModelRequest = { system: compose(parts), messages, tools: input.tools }
  const instruction = Tokens.estimate(request.system)
  const transcript = Math.ceil(jsonLength / 4)
  const tools = request.tools.length === 0 ? 0 : Tokens.estimateJson(request.tools)
  return { request, parts, tokens: { instruction, transcript, tools, total: instruction + transcript + tools } }
}

/** The builder the engine uses when none is provided: the transcript and tools, no system prompt. */
export const transcriptOnly: ContextBuilder.Service = { build: (input) => Effect.succeed(buildWith([], input)) }
