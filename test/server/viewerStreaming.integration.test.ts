/**
 * A streamed delta's render on a long session, in a real headless Chromium: what the page changes in
 * the document for each render (DOM mutations, counted with a MutationObserver) does not grow with
 * the turns shown. Each render used to draw the "Show earlier" line anew and insert it before the old
 * one, which moved every turn kept in the page after it: 50 turns moved per render, 150 once "Show 50
 * earlier" was pressed twice, each move a layout of the whole list. Counts, never time.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { browser as chromium, watchedPage } from "./chromium.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { liveUntil, type Running, start, startIn, storedEvents } from "./harness.js"

const browser = chromium()

interface Viewer {
  readonly effectAgentViewer: { sequences: () => Array<number>; folded?: () => number }
}
interface Globals {
  readonly document: { getElementById: (id: string) => { textContent: string } | null; querySelectorAll: (selector: string) => { length: number } }
  readonly MutationObserver: new(f: (records: Array<unknown>) => void) => { observe: (node: unknown, options: object) => void; disconnect: () => void }
  mutationsPerRender: Array<number>
  watch?: { disconnect: () => void }
}
const page$ = <A>(page: Page, f: () => A) => Effect.promise(() => page.evaluate(f))

/** The mutation records of each render of `#view` (one observer callback a render), from now on. */
const countMutations = (page: Page) =>
  page$(page, () => {
    const g = globalThis as unknown as Globals
    g.watch?.disconnect()
    g.mutationsPerRender = []
    const observer = new g.MutationObserver((records) => g.mutationsPerRender.push(records.length))
    observer.observe(g.document.getElementById("view"), { childList: true, subtree: true, attributes: true, characterData: true })
    g.watch = observer
  })

/** Starts a turn whose answer streams in `chunks` deltas and waits until the page shows it ended: the mutations of each render meanwhile. */
const streamTurn = (server: Running, page: Page, sessionId: string, token: string) =>
  Effect.gen(function*() {
    const ended = yield* page$(page, () => (globalThis as unknown as Globals).document.querySelectorAll(".turn [data-end]").length)
    yield* countMutations(page)
    const { lastSequence } = yield* server.client.sessions.get({ path: { id: sessionId } })
    const { turnId } = yield* server.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "stream" } })
    yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${sessionId}/live`, { token, after: lastSequence }, (e) => e.type === "turn.completed" && e.turnId === turnId))
    yield* Effect.promise(() =>
      page.waitForFunction(([selector, n]) => (globalThis as unknown as Globals).document.querySelectorAll(selector).length > n, [`[data-turn="${turnId}"] [data-end]`, 0] as const)
    )
    const renders = yield* page$(page, () => (globalThis as unknown as Globals).mutationsPerRender)
    expect(ended).toBeGreaterThan(0)
    return renders
  })

/** A session of `turns` copies of one short turn, in a fresh data directory; the server started on it answers with `responses`. */
const longSession = (turns: number, responses: ReadonlyArray<FakeModelProvider.ScriptedResponse> = []) =>
  Effect.gen(function*() {
    const token = "streaming-test-token-0123456789"
    const { cwd, dataDir, server: first } = yield* startIn({ token, responses: [{ chunks: ["one", " line"] }] })
    const { sessionId } = yield* first.client.sessions.create({ payload: {} })
    const { turnId } = yield* first.client.sessions.startTurn({ path: { id: sessionId }, payload: { message: "short" } })
    yield* Effect.promise(() => liveUntil(`${first.url}/sessions/${sessionId}/live`, { token }, (e) => e.type === "turn.completed" && e.turnId === turnId))
    yield* first.stop
    const file = join(dataDir, "sessions", `${sessionId}.jsonl`)
    const [header, ...lines] = readFileSync(file, "utf8").trimEnd().split("\n")
    const real = lines.map((line) => JSON.parse(line) as { turnId?: string })
    const long = [
      ...real.filter((e) => e.turnId === undefined),
      ...Array.from({ length: turns }, (_, copy) => real.filter((e) => e.turnId !== undefined).map((e) => ({ ...e, turnId: `${e.turnId}_${copy}` }))).flat()
    ].map((e, i) => ({ ...e, id: `evt_long_${i}`, sequence: i + 1 }))
    writeFileSync(file, [header, ...long.map((e) => JSON.stringify(e))].join("\n") + "\n")
    rmSync(join(dataDir, "index.json"), { force: true })
    const server = yield* start({ cwd, dataDir, token, responses })
    expect((yield* storedEvents(server, sessionId)).length).toBe(long.length)
    const { context } = yield* browser
    const { errors, page } = yield* watchedPage(context)
    yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
    yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
    yield* Effect.promise(() => page.waitForFunction((n) => (globalThis as unknown as Viewer).effectAgentViewer.sequences().length === n, long.length))
    // Drawn as of the last event (the state panel's sequence), not only received.
    yield* Effect.promise(() => page.waitForFunction((n) => (globalThis as unknown as Globals).document.getElementById("sequence")?.textContent === String(n), long.length))
    return { errors, events: long.length, page, server, sessionId, token }
  })

describe("the viewer streams a turn of a long session", () => {
  it.scopedLive("a render's DOM mutations do not grow with the turns shown (50, then 150)", () =>
    Effect.gen(function*() {
      // Two answers streamed a word at a time, one for each count of turns shown; 300 turns: more
      // than the page shows at first (50) or after two "Show 50 earlier" (150).
      const streamed = { chunks: Array.from({ length: 40 }, (_, i) => `word${i} `), delay: "20ms" }
      const { errors, page, server, sessionId, token } = yield* longSession(300, [streamed, streamed])

      const fifty = yield* streamTurn(server, page, sessionId, token)
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(50)
      for (let press = 0; press < 2; press++) yield* Effect.promise(() => page.locator("[data-more=turns]").first().click())
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(150)
      const hundredFifty = yield* streamTurn(server, page, sessionId, token)
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(150)

      if (process.env.EFFECT_AGENT_VIEWER_METRICS !== undefined) {
        process.stderr.write(`mutations per render: 50 turns shown ${JSON.stringify(fifty)}; 150 shown ${JSON.stringify(hundredFifty)}\n`)
      }
      // A handful per render (the open turn drawn again, the state of the line of buttons), whatever is shown.
      expect(fifty.length).toBeGreaterThan(0)
      expect(Math.max(...fifty)).toBeLessThan(20)
      expect(Math.max(...hundredFifty)).toBeLessThan(20)
      expect(errors).toEqual([])
    }), { timeout: 180_000 })

  it.scopedLive("dragging the timeline forward folds the events it passes, not the log's prefix again at each step", () =>
    Effect.gen(function*() {
      const { errors, events, page } = yield* longSession(300)
      const folded = () => Effect.promise(() => page.evaluate(() => (globalThis as unknown as Viewer).effectAgentViewer.folded?.()))
      /** Moves the timeline to `at`, as a drag does (an input event), and waits for the page to show it. */
      const scrubTo = (at: number) =>
        Effect.promise(async () => {
          await page.evaluate((at) => {
            const scrub = (globalThis as unknown as { document: { getElementById: (id: string) => { value: string; dispatchEvent: (e: unknown) => void } } }).document.getElementById("scrub")
            scrub.value = String(at)
            scrub.dispatchEvent(new (globalThis as unknown as { Event: new(type: string, init: object) => unknown }).Event("input", { bubbles: true }))
          }, at)
          await page.waitForFunction((at) => (globalThis as unknown as Globals).document.getElementById("position")?.textContent.startsWith(`#${at} `), at)
        })
      const start = events - 200
      yield* scrubTo(start)
      const before = yield* folded()
      for (let at = start + 1; at <= start + 20; at++) yield* scrubTo(at)
      const after = yield* folded()
      // Twenty steps of one event: twenty events folded (each step used to fold the whole prefix, about 1,600 events).
      expect(typeof before).toBe("number")
      expect(after! - before!).toBe(20)
      expect(errors).toEqual([])
    }), { timeout: 180_000 })
})
