/**
 * The @effect/ai bridge on a fake `LanguageModel` that streams what a reasoning model's provider
 * does — reasoning parts around and between text, sources, metadata, files, a provider-run tool —
 * and parts of types newer than the bridge: nothing of them reaches the assistant's text or the next
 * request; reasoning is stored as thinking (unsigned here: shown, never sent); nothing crashes.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import { expectWellFormedLog } from "../helpers.js"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

const secret = "SECRET-REASONING"

/** A reasoning model's stream: thinking first, text with thinking between its deltas, then a finish. */
const reasoningParts: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "response-metadata", id: "resp_1", modelId: "fake-reasoner", timestamp: new Date(0).toISOString() },
  { type: "reasoning-start", id: "r1" },
  { type: "reasoning-delta", id: "r1", delta: `${secret} one` },
  { type: "reasoning-end", id: "r1", metadata: { anthropic: { signature: "sig-abc" } } as never },
  { type: "text-start", id: "t1" },
  { type: "text-delta", id: "t1", delta: "The answer" },
  { type: "reasoning-start", id: "r2" },
  { type: "reasoning-delta", id: "r2", delta: `${secret} two` },
  { type: "reasoning-end", id: "r2" },
  { type: "text-delta", id: "t1", delta: " is 42." },
  { type: "text-end", id: "t1" },
  { type: "source", sourceType: "url", id: "s1", url: "https://example.com/secret", title: `${secret} source` },
  { type: "file", mediaType: "text/plain", data: Buffer.from(secret).toString("base64") },
  { type: "finish", reason: "stop", usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reasoningTokens: 3 } }
]

/** `@effect/ai`'s own `LanguageModel.make` streaming `parts` for every request; the prompts it was sent. */
const fakeModel = (parts: ReadonlyArray<unknown>, prompts: Array<Prompt.Prompt>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: () => Effect.die("not used"),
      streamText: (options) => {
        prompts.push(options.prompt)
        return Stream.fromIterable(parts as ReadonlyArray<Response.StreamPartEncoded>)
      }
    })
  )

/** The bridge on a `LanguageModel` service written by hand, which hands its parts on undecoded. */
const rawModel = (parts: ReadonlyArray<unknown>) =>
  Layer.succeed(LanguageModel.LanguageModel, {
    generateText: () => Effect.die("not used"),
    generateObject: () => Effect.die("not used"),
    streamText: () => Stream.fromIterable(parts)
  } as unknown as LanguageModel.Service)

const bridge = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
  WireStreams.engine(() => EffectAiModelProvider.layer({ model: "fake-reasoner" }).pipe(Layer.provide(model)))

describe("the @effect/ai bridge on a reasoning model", () => {
  it.effect("reasoning, sources, metadata and files are not the answer: the text is, in the log and the next prompt; reasoning is thinking; the turn ends final", () => {
    const prompts: Array<Prompt.Prompt> = []
    return Effect.gen(function*() {
      const { events, sessionId } = yield* WireStreams.turn("what is the answer?")
      expect(WireStreams.deltasOf(events).join("")).toBe("The answer is 42.")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", usage: { inputTokens: 10, outputTokens: 5 } })
      expect(events.filter((e) => e.type === "model.thinking_delta").map((e) => e.payload.text)).toEqual([`${secret} one`, `${secret} two`])
      yield* WireStreams.turn("and?", sessionId)
      const logged = yield* WireStreams.replay(sessionId)
      expect(JSON.stringify(logged.filter((e) => e.type !== "model.thinking_delta"))).not.toContain(secret)
      const assistant = prompts[1]!.content.find((m) => m.role === "assistant")!
      expect(assistant.content).toEqual([expect.objectContaining({ type: "text", text: "The answer is 42." })])
      expect(JSON.stringify(prompts[1])).not.toContain(secret)
      expectWellFormedLog(yield* WireStreams.replay(sessionId))
    }).pipe(Effect.provide(bridge(fakeModel(reasoningParts, prompts))))
  })

  it.effect("a response of reasoning alone: no text, no delta, the turn ends final", () =>
    Effect.gen(function*() {
      const { events } = yield* WireStreams.turn("think")
      expect(WireStreams.deltasOf(events)).toEqual([])
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(bridge(fakeModel(reasoningParts.filter((p) => !p.type.startsWith("text")), [])))))
})

describe("the @effect/ai bridge on parts newer than it", () => {
  const future = [
    { type: "text-delta", id: "t1", delta: "Hello" },
    { type: "reasoning-summary-delta", id: "r1", delta: secret },
    { type: "audio-delta", id: "a1", data: secret },
    { type: "text-delta", id: "t1", delta: ", world" },
    { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }
  ]

  it.effect("handed on undecoded by a LanguageModel written by hand: skipped, the text intact, the turn final", () =>
    Effect.gen(function*() {
      const { events, sessionId } = yield* WireStreams.turn("hi")
      expect(WireStreams.deltasOf(events).join("")).toBe("Hello, world")
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(JSON.stringify(yield* WireStreams.replay(sessionId))).not.toContain(secret)
    }).pipe(Effect.provide(bridge(rawModel(future)))))

  // `LanguageModel.make` decodes the parts against its schema, which has no such types: its
  // MalformedOutput is a response that could not be read (`server`), retried as one.
  it.effect("through LanguageModel.make, which decodes every part: a typed failure (server), retried, never a defect", () =>
    Effect.gen(function*() {
      const events = yield* ProviderTurns.turnWithRetries("hi")
      expect(events.filter((e) => e.type === "model.retry").map((e) => e.payload)).toMatchObject([1, 2, 3, 4].map(() => ({ errorCode: "server" })))
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "server" })
      expect(JSON.stringify(events)).not.toContain(secret)
    }).pipe(Effect.provide(bridge(fakeModel(future, [])))))
})
