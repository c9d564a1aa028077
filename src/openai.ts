/**
 * `effect-agent/openai`: the OpenAI (and OpenAI-compatible) model provider, on `openai`. A
 * subpath of its own, so that importing `effect-agent` never loads it.
 *
 * @since 0.1.0
 */

/** The OpenAI (and OpenAI-compatible) model provider, on `openai`. */
export * as OpenAiModelProvider from "./layers/OpenAiModelProvider.js"
