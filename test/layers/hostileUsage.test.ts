/**
 * A vendor stream whose usage numbers are not token counts (negative, fractional, text, absurdly
 * large, missing): the turn still completes with its text, and the log holds only valid counts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import { collect, expectWellFormedLog, testTools } from "../helpers.js"
import * as WireServer from "./WireServer.js"

/** Every count in every usage of the log (a turn's, a response's) is a safe, non-negative integer. */
const expectValidCounts = (log: ReadonlyArray<{ readonly payload: unknown }>) => {
  for (const event of log) {
    const usage = (event.payload as { usage?: Record<string, unknown> }).usage
    if (usage === undefined) continue
    for (const [name, count] of Object.entries(usage)) expect(Number.isSafeInteger(count) && (count as number) >= 0, `${(event as { type?: string }).type ?? "summary"} ${name} ${count}`).toBe(true)
  }
}

/** One turn of "hello" in a new session: its events, checked to end final, and the session's log, checked well formed with valid counts. */
const helloTurn = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
  const events = yield* collect(engine.runTurn({ sessionId, userMessage: "hello" }))
  expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
  const log = yield* collect(engine.replaySession({ sessionId }))
  expectWellFormedLog(log)
  expectValidCounts(log)
  return events
})

const hostileValues: ReadonlyArray<unknown> = [-5, 1.5, "12", 1e300, null]

const engine = (provider: Layer.Layer<ModelProvider>, services: Layer.Layer<never> = Layer.empty) =>
  Layer.suspend(() =>
    SessionEngineModule.layer().pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provide(IdGenerator.layerSequential),
      Layer.provide(provider),
      Layer.provide(services)
    )
  )

describe("hostile usage numbers from a vendor", () => {
  let server: WireServer.WireServer
  beforeAll(async () => {
    server = await WireServer.start()
  })
  afterAll(() => server.close())

  const vendors = [
    {
      name: "anthropic" as const,
      layer: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: server.url }),
      rewrite: (body: string, value: unknown) =>
        body.replace(/"input_tokens":412/, `"input_tokens":${JSON.stringify(value)}`).replace(/"output_tokens":15/, `"output_tokens":${JSON.stringify(value)}`)
    },
    {
      name: "openai" as const,
      layer: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: `${server.url}/v1` }),
      rewrite: (body: string, value: unknown) =>
        body.replace(/"prompt_tokens":412/, `"prompt_tokens":${JSON.stringify(value)}`).replace(/"completion_tokens":15/, `"completion_tokens":${JSON.stringify(value)}`)
    }
  ]
  it.effect("anthropic: a second message_start in one response, with other usage — ignored: the turn ends final with the first's usage", () =>
    Effect.gen(function*() {
      const text = WireServer.recording("anthropic", "text")
      const start = text.body.match(/event: message_start\ndata: [^\n]*\n\n/)![0]
      const again = start.replace(/"input_tokens":412/, `"input_tokens":-3`).replace(/"cache_read_input_tokens":128/, `"cache_read_input_tokens":1e308`)
      server.respond({ ...text, body: text.body.replace(start, start + again) })
      const events = yield* helloTurn
      // A response starts once: a second start describes nothing the vendor billed, and taking it
      // would lose the first's input count (the turn read 0 input tokens instead of 412).
      expect(events.at(-1)!.payload).toMatchObject({ usage: { inputTokens: 412, cacheReadTokens: 128 } })
      const [summary] = yield* (yield* SessionEngine).listSessions
      expectValidCounts([{ payload: summary }])
    }).pipe(Effect.provide(engine(vendors[0]!.layer()))))

  it.effect("anthropic: usage twice at the end (two message_delta), the input only there, cache counts hostile — the last counts kept, each a valid count", () =>
    Effect.gen(function*() {
      const text = WireServer.recording("anthropic", "text")
      const start = text.body.match(/event: message_start\ndata: [^\n]*\n\n/)![0]
      const delta = text.body.match(/event: message_delta\ndata: [^\n]*\n\n/)![0]
      const late = (usage: Record<string, unknown>) => delta.replace(/"usage":\{[^}]*\}/, `"usage":${JSON.stringify(usage)}`)
      const body = text.body
        .replace(start, start.replace(/"usage":\{[^}]*\}/, `"usage":{"input_tokens":0,"output_tokens":0}`))
        .replace(delta, late({ output_tokens: 7, input_tokens: 100 }) + late({ output_tokens: 15, input_tokens: 412, cache_read_input_tokens: "128", cache_creation_input_tokens: -4 }))
      server.respond({ ...text, body })
      const events = yield* helloTurn
      expect(events.at(-1)!.payload).toMatchObject({ usage: { inputTokens: 412, outputTokens: 15 } })
    }).pipe(Effect.provide(engine(vendors[0]!.layer()))))

  it.effect("openai: usage twice (two usage chunks), cached_tokens hostile — the last counts kept, each a valid count", () =>
    Effect.gen(function*() {
      const text = WireServer.recording("openai", "text")
      const usage = text.body.match(/data: [^\n]*"usage":\{"prompt_tokens"[^\n]*\n\n/)![0]
      const first = usage.replace(/"prompt_tokens":412/, `"prompt_tokens":100`).replace(/"cached_tokens":128/, `"cached_tokens":1e300`)
      const second = usage.replace(/"cached_tokens":128/, `"cached_tokens":-1`)
      server.respond({ ...text, body: text.body.replace(usage, first + second) })
      const events = yield* helloTurn
      expect(events.at(-1)!.payload).toMatchObject({ usage: { inputTokens: 412, outputTokens: 15 } })
    }).pipe(Effect.provide(engine(vendors[1]!.layer()))))

  for (const vendor of vendors) {
    for (const value of hostileValues) {
      it.effect(`${vendor.name}: usage ${JSON.stringify(value)} — the turn completes, every stored count is a non-negative integer`, () =>
        Effect.gen(function*() {
          const text = WireServer.recording(vendor.name, "text")
          server.respond({ ...text, body: vendor.rewrite(text.body, value) })
          yield* helloTurn
        }).pipe(Effect.provide(engine(vendor.layer()))))
    }

    it.effect(`${vendor.name}: a stop reason no vendor documents — the turn ends final with its text and usage`, () =>
      Effect.gen(function*() {
        const text = WireServer.recording(vendor.name, "text")
        const body = text.body.replace(/"stop_reason":"end_turn"/, `"stop_reason":"brand_new_reason"`).replace(/"finish_reason":"stop"/, `"finish_reason":"brand_new_reason"`)
        expect(body).toContain("brand_new_reason")
        server.respond({ ...text, body })
        const events = yield* helloTurn
        // Pinned: an unknown reason is no error — the response ended, its text is the answer.
        expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final", usage: { inputTokens: 412, outputTokens: 15 } })
        expect(events.some((e) => e.type === "model.delta")).toBe(true)
      }).pipe(Effect.provide(engine(vendor.layer()))))

    it.effect(`${vendor.name}: the largest counts in two responses of one turn, and in two turns — the sums stay valid counts`, () =>
      Effect.gen(function*() {
        const huge = (name: string) => {
          const recorded = WireServer.recording(vendor.name, name)
          return { ...recorded, body: vendor.rewrite(recorded.body, 1e300) }
        }
        server.respond(huge("tool-calls"), huge("text"), huge("text"))
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
        const first = yield* collect(engine.runTurn({ sessionId, userMessage: "read it" }))
        expect(first.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const second = yield* collect(engine.runTurn({ sessionId, userMessage: "again" }))
        expect(second.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        const log = yield* collect(engine.replaySession({ sessionId }))
        expectWellFormedLog(log)
        expectValidCounts(log)
        const [summary] = yield* engine.listSessions
        expectValidCounts([{ payload: summary }])
      }).pipe(Effect.provide(engine(vendor.layer(), Layer.mergeAll(
        testTools({
          read_file: { run: () => Effect.succeed({ result: "contents" }) },
          grep: { run: () => Effect.succeed({ result: "found" }) }
        }),
        PermissionPolicy.layer({ mode: "bypass" })
      )))))
  }
})
