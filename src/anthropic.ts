/**
 * `effect-agent/anthropic`: the Anthropic model provider, on `@anthropic-ai/sdk`. A
 * subpath of its own, so that importing `effect-agent` never loads it.
 *
 * @since 0.1.0
 */

/** The Anthropic model provider, on `@anthropic-ai/sdk`. */
export * as AnthropicModelProvider from "./layers/AnthropicModelProvider.js"
