/**
 * The viewer on a heavy log, in a real headless Chromium: a turn of 500 tool calls, a single
 * 400 KB text delta, 120 short turns — each past its bound (200 items of a turn, 100,000
 * characters of a text, 50 turns) by enough that every "Show" button is pressed more than once.
 * The page draws exactly the bounded part of it — the latest turns, the latest items of a turn, the
 * start of a huge text — and every event stays reachable: "Show earlier" buttons and "Show all" on a
 * cut text. The bounds are counts, so a log this size proves what one of 145,000 events did (20,000
 * turns, 5,000 calls, 10 MB: 80–146 s under load, for the same assertions). The test counts DOM nodes
 * and characters, never time; the page's own timings are printed (EFFECT_AGENT_VIEWER_METRICS=1).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { browser as chromium, watchedPage } from "./chromium.js"
import { liveUntil, start, startIn, storedEvents } from "./harness.js"

const browser = chromium()

interface Globals {
  readonly document: { querySelectorAll: (selector: string) => { length: number }; getElementById: (id: string) => { textContent: string } | null }
  readonly effectAgentViewer: { sequences: () => Array<number> }
  readonly metrics: { longTasks: number; longest: number; opened: number }
  readonly performance: { now: () => number; memory?: { usedJSHeapSize: number } }
}
const page$ = <A>(page: Page, f: () => A) => Effect.promise(() => page.evaluate(f))
const count = (page: Page, selector: string) => Effect.promise(() => page.locator(selector).count())
/** Presses `selector` until it is gone (each press shows more): how many presses it took. */
const pressAll = (page: Page, selector: string) =>
  Effect.promise(async () => {
    for (let presses = 0; ; presses++) {
      const button = page.locator(selector).first()
      if ((await button.count()) === 0) return presses
      await button.dispatchEvent("click")
    }
  })

describe("the viewer on a heavy log", () => {
  it.scopedLive("500 calls, a 400 KB delta, 122 turns: exactly the bounded part drawn, every event reachable", () =>
    Effect.gen(function*() {
      const big = "0123456789 abcdefghijklmnopqrstuvwxyz\n".repeat(400 * 1024 / 38)
      const token = "heavy-test-token-0123456789"
      const { cwd, dataDir, server: first } = yield* startIn({
        token,
        responses: [
          { toolCalls: Array.from({ length: 100 }, (_, i) => ({ tool: "read_file", args: { path: `missing-${i}.txt` }, id: `call_${i}` })) },
          { chunks: ["read them"] },
          { chunks: [big] },
          { chunks: ["one", " line"] }
        ]
      })
      const { sessionId } = yield* first.client.sessions.create({ payload: {} })
      for (const message of ["calls", "big", "short"]) {
        const { lastSequence } = yield* first.client.sessions.get({ path: { id: sessionId } })
        const { turnId } = yield* first.client.sessions.startTurn({ path: { id: sessionId }, payload: { message } })
        // The next turn starts once this one has ended.
        yield* Effect.promise(() => liveUntil(`${first.url}/sessions/${sessionId}/live`, { token, after: lastSequence }, (e) => e.type === "turn.completed" && e.turnId === turnId))
      }
      yield* first.stop
      // The engine stores at most 100 calls a turn and joins deltas: the heavy log is made of these
      // real turns' events, copied — the calls 5 times into their turn, the short turn 120 times.
      const file = join(dataDir, "sessions", `${sessionId}.jsonl`)
      const [header, ...lines] = readFileSync(file, "utf8").trimEnd().split("\n")
      const real = lines.map((line) => JSON.parse(line) as { turnId?: string; type: string; payload: { toolCallId?: string } })
      const turns = [...new Set(real.flatMap((e) => e.turnId === undefined ? [] : [e.turnId]))]
      const of = (turnId: string) => real.filter((e) => e.turnId === turnId)
      const calls = of(turns[0]!)
      const callEvents = calls.filter((e) => e.payload.toolCallId !== undefined)
      const end = calls.findIndex((e) => e.type === "turn.completed")
      // The heavy turns last, where the page opens: the short copies first.
      const heavy = [
        ...real.filter((e) => e.turnId === undefined),
        ...Array.from({ length: 120 }, (_, copy) => of(turns[2]!).map((e) => ({ ...e, turnId: `${e.turnId}_${copy}` }))).flat(),
        ...calls.slice(0, end),
        ...Array.from({ length: 4 }, (_, copy) => callEvents.map((e) => JSON.parse(JSON.stringify(e).replaceAll(/"call_(\d+)"/g, `"call_${copy + 1}_$1"`)))).flat(),
        ...calls.slice(end),
        ...of(turns[1]!)
      ].map((e, i) => ({ ...e, id: `evt_heavy_${i}`, sequence: i + 1 }))
      writeFileSync(file, [header, ...heavy.map((e) => JSON.stringify(e))].join("\n") + "\n")
      rmSync(join(dataDir, "index.json"), { force: true })
      const server = yield* start({ cwd, dataDir, token })
      const stored = yield* storedEvents(server, sessionId)
      expect(stored.length).toBe(heavy.length)


      const { context } = yield* browser
      const { errors, page } = yield* watchedPage(context)
      // The page's own measures: long tasks (over 50 ms) while it opens the session.
      yield* Effect.promise(() =>
        page.addInitScript(() => {
          const scope = globalThis as unknown as { metrics: Globals["metrics"]; PerformanceObserver: new(f: (list: { getEntries: () => Array<{ duration: number }> }) => void) => { observe: (o: object) => void } }
          scope.metrics = { longTasks: 0, longest: 0, opened: 0 }
          new scope.PerformanceObserver((list) => {
            for (const entry of list.getEntries()) {
              scope.metrics.longTasks += entry.duration
              scope.metrics.longest = Math.max(scope.metrics.longest, entry.duration)
            }
          }).observe({ type: "longtask", buffered: true })
        })
      )
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      const started = yield* page$(page, () => (globalThis as unknown as Globals).performance.now())
      yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
      yield* Effect.promise(() =>
        page.waitForFunction((n) => (globalThis as unknown as Globals).effectAgentViewer.sequences().length === n, stored.length, { timeout: 300_000, polling: 500 })
      )
      // Drawn as of the last event (the state panel's sequence), not only received: a render may be waiting.
      yield* Effect.promise(() =>
        page.waitForFunction((n) => (globalThis as unknown as Globals).document.getElementById("sequence")?.textContent === String(n), stored.length, { timeout: 300_000, polling: 500 })
      )
      const opened = yield* page$(page, () => {
        const g = globalThis as unknown as Globals
        return { at: g.performance.now(), heap: g.performance.memory?.usedJSHeapSize ?? 0, ...g.metrics }
      })
      const nodes = yield* count(page, "#view *")
      const chars = yield* page$(page, () => (globalThis as unknown as Globals).document.getElementById("view")!.textContent.length)
      if (process.env.EFFECT_AGENT_VIEWER_METRICS !== undefined) {
        process.stderr.write(`viewer metrics: ${stored.length} events, opened in ${Math.round(opened.at - started)} ms, long tasks ${Math.round(opened.longTasks)} ms (longest ${Math.round(opened.longest)} ms), heap ${Math.round(opened.heap / 1e6)} MB, ${nodes} nodes, ${chars} characters in #view\n`)
      }
      // Bounded: the latest of each, not 500 calls, 122 turns and 400 KB of text.
      expect(yield* count(page, ".turn")).toBe(50)
      // The turn's latest 200 items: calls (the copies come after its text).
      expect(yield* count(page, "[data-call]")).toBe(200)
      expect(yield* count(page, "[data-more=text]")).toBe(1)
      expect(nodes).toBeLessThan(6000)
      expect(chars).toBeLessThan(200_000)

      // Every event reachable: the earlier calls, the whole text, the earlier turns.
      expect(yield* pressAll(page, "[data-more=items]")).toBe(2)
      expect(yield* count(page, "[data-call]")).toBe(500)
      expect(yield* pressAll(page, "[data-more=text]")).toBe(1)
      const whole = yield* page$(page, () => (globalThis as unknown as Globals).document.getElementById("view")!.textContent.length)
      expect(whole).toBeGreaterThan(big.length)
      yield* Effect.promise(() => page.locator("[data-more=turns]").first().dispatchEvent("click"))
      expect(yield* count(page, ".turn")).toBe(100)
      yield* Effect.promise(() => page.locator("[data-more=turns]").nth(1).dispatchEvent("click"))
      expect(yield* count(page, ".turn")).toBe(122)
      expect(errors).toEqual([])
    }), { timeout: 300_000 })
})
