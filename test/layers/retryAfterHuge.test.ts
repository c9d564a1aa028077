/**
 * review51: a 429 whose `retry-after` (or `retry-after-ms`) is past `Number.MAX_SAFE_INTEGER` ms: the
 * wait did not fit `ProviderFailure.retryAfterMs` (`Schema.Int`), translating the failure threw, and
 * the turn ended `internal_error`. Clamped, it is a wait over `Retry.maxRetryAfter`: `rate_limited`,
 * as `retry-after: 999999` is. Failed before.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ProviderTurns from "./providerTurns.js"
import * as WireStreams from "./wireStreams.js"

const server = WireStreams.serverForTests()
const { engine } = WireStreams
const errorResponse = (headers: Record<string, string>) => ({
  status: 429,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "slow down" } })
})
const { anthropic, openai } = WireStreams.vendorLayers(() => server)
const layers = { anthropic, openai }
describe("429 with a retry-after past Number.MAX_SAFE_INTEGER ms", () => {
  for (const [name, layer] of Object.entries(layers)) {
    for (const headers of [{ "retry-after": "1e20" }, { "retry-after-ms": "1e20" }]) {
      it.effect(`${name}: ${JSON.stringify(headers)} ends the turn rate_limited, as retry-after: 999999 does, not internal_error`, () =>
        Effect.gen(function*() {
          server.respond(...Array.from({ length: 6 }, () => errorResponse(headers)))
          const events = yield* ProviderTurns.turnWithRetries("hi")
          expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "rate_limited" })
        }).pipe(Effect.provide(engine(layer))))
    }
  }
})
