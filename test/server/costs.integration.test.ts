/**
 * Usage and cost over HTTP and in the viewer: the session list and a session's state carry its
 * totals; the viewer, in a real headless Chromium, shows them in the list and the state panel, each
 * turn's cost under it, and a prompt-cache break as a line of its turn.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { collect } from "../helpers.js"
import { browser as chromium } from "./chromium.js"
import { startIn } from "./harness.js"

const browser = chromium()

describe("usage and cost over HTTP and in the viewer", () => {
  it.scopedLive("GET /sessions and GET /sessions/:id carry the totals; the viewer shows them, each turn's cost and the cache break", () =>
    Effect.gen(function*() {
      const token = "viewer-costs-token-0123456789"
      const { cwd, server } = yield* startIn({ token,
        // The built-in price of claude-haiku-4-5: $1 in, $5 out, $0.10 cache read, $1.25 cache write per million.
        model: { provider: "anthropic", model: "claude-haiku-4-5" },
        responses: [
          { chunks: ["first"], usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 500, cacheWriteTokens: 0 } },
          { chunks: ["second"], usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 1000 } }
        ]
      })
      const { sessionId } = yield* server.engine.createSession({ cwd, client: "test" })
      for (const message of ["one", "two"]) yield* collect(server.engine.runTurn({ sessionId, userMessage: message }))
      const turns = (yield* collect(server.engine.replaySession({ sessionId }))).filter((e) => e.type === "turn.started").map((e) => e.turnId!)

      const get = (path: string) =>
        Effect.promise(async () => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>)
      // $0.0002 (100 + 50 + 50 per million) and $0.0014 (100 + 50 + 1250).
      const totals = { usage: { inputTokens: 200, outputTokens: 20, cacheReadTokens: 500, cacheWriteTokens: 1000 }, cost: 0.0016 }
      const listed = (yield* get("/sessions")).find((s: any) => s.sessionId === sessionId)
      expect(listed).toMatchObject(totals)
      expect(yield* get(`/sessions/${sessionId}`)).toMatchObject({ ...totals, phase: "idle" })

      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.waitForSelector(`[data-totals=${sessionId}]`))
      expect(yield* Effect.promise(() => page.textContent(`[data-totals=${sessionId}]`)))
        .toBe("tokens in 200 · out 20 · cache read 500 · cache write 1000 — $0.0016")
      yield* Effect.promise(() => page.click(`[data-session=${sessionId}]`))
      yield* Effect.promise(() => page.waitForSelector(`[data-turn-cost=${turns[1]}]`))
      expect(yield* Effect.promise(() => page.textContent(`[data-turn-cost=${turns[0]}]`)))
        .toBe("tokens in 100 · out 10 · cache read 500 · cache write 0 — $0.0002")
      expect(yield* Effect.promise(() => page.textContent(`[data-turn=${turns[1]}] [data-event='cache.break']`)))
        .toBe("prompt cache break: read 500 → 0 tokens; no prompt part changed (the cache expired?)")
      expect(yield* Effect.promise(() => page.textContent("#usage"))).toBe("tokens in 200 · out 20 · cache read 500 · cache write 1000 — $0.0016")
      expect(errors).toEqual([])
    }), { timeout: 120_000 })
})
