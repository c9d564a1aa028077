/**
 * `effect-agent/effect-ai`: a model provider on any `@effect/ai` `LanguageModel` (`@effect/ai`
 * 0.37 and its providers, optional peer dependencies). A subpath of its own, so that importing
 * `effect-agent` never loads `@effect/ai`.
 *
 * @since 0.6.0
 */

/** Any `@effect/ai` `LanguageModel` as a `ModelProvider`: `layer`, `make`, `fromLanguageModel`; the engine runs the tools. */
export * as EffectAiModelProvider from "./layers/EffectAiModelProvider.js"
