/**
 * Issue 8, item 8, through the real provider path: a vendor's 429 with `retry-after: 1` (the jittered
 * backoff is then as often longer as shorter: 800–1200 ms) stores `model.retry` with whole
 * milliseconds on the JSONL store, which encodes every event with the schema, and the turn ends
 * normally — 12 turns out of 12, where 9 of 12 used to end `internal_error`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, expectWellFormedLog } from "../helpers.js"
import * as WireServer from "../layers/WireServer.js"

const vendors = ["anthropic", "openai"] as const

for (const vendor of vendors) {
  describe(`${vendor}: a 429 with retry-after: 1 on the JSONL store`, () => {
    let server: WireServer.WireServer
    const dir = mkdtempSync(join(tmpdir(), "effect-agent-retry-wire-"))
    beforeAll(async () => {
      server = await WireServer.start()
    })
    afterAll(async () => {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    })

    const rateLimitedOneSecond = () => {
      const recorded = WireServer.recording(vendor, "rate-limited")
      return { ...recorded, headers: { ...recorded.headers, "retry-after": "1" } }
    }

    const layer = Layer.suspend(() =>
      SessionEngineModule.layer().pipe(
        Layer.provide(JsonlEventStore.layer({ dataDir: dir })),
        Layer.provide(IdGenerator.layer),
        Layer.provide(
          vendor === "anthropic"
            ? AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL: server.url })
            : OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-test"), baseURL: `${server.url}/v1` })
        ),
        Layer.provide(NodeContext.layer)
      )
    )

    it.effect("12 turns: each stores model.retry with an integer delayMs and ends final", () =>
      Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: dir, client: "test" })
        for (let i = 0; i < 12; i++) {
          server.respond(rateLimitedOneSecond(), WireServer.recording(vendor, "text"))
          const events = yield* engine.runTurn({ sessionId, userMessage: `hello ${i}` }).pipe(
            Stream.tap((e) => (e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void)),
            collect
          )
          const retry = events.find((e) => e.type === "model.retry")
          expect(retry?.payload).toMatchObject({ attempt: 1, errorCode: "rate_limited" })
          const delayMs = retry?.type === "model.retry" ? retry.payload.delayMs : NaN
          expect(Number.isInteger(delayMs), `delayMs ${delayMs}`).toBe(true)
          expect(delayMs).toBeGreaterThanOrEqual(1000)
          expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
        }
        // The log on disk reads back whole, every event valid.
        expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
      }).pipe(Effect.provide(layer)))
  })
}
