/**
 * The model provider port: streams one model response for one request, and reports what the
 * model can take. Implementations: the scripted fake, Anthropic and OpenAI.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Stream from "effect/Stream"
import type { Usage } from "../domain/AgentEvent.js"
import type { ProviderFailure } from "../domain/Errors.js"
import type { Json, JsonObject } from "../domain/Json.js"
import type { Message } from "../domain/Transcript.js"

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
}

/** Why a model response ended. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "other"

/** A piece of a streamed model response. */
export type ModelChunk =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly toolCallId: string; readonly tool: string; readonly args: Json }
  | { readonly _tag: "Finish"; readonly reason: FinishReason; readonly usage?: Usage }

/** What a model can take. */
export interface Capabilities {
  /** Which provider, for logs: "fake", "anthropic", "openai". */
  readonly provider: string
  readonly model: string
  /** The context window: prompt, transcript and tools together must fit. */
  readonly maxContextTokens: number
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
export const finish = (reason: FinishReason, usage?: Usage): ModelChunk =>
  usage === undefined ? { _tag: "Finish", reason } : { _tag: "Finish", reason, usage }
