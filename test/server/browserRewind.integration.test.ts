/**
 * The viewer's rewind control in a real headless Chromium: scrub the timeline to the end of a turn,
 * "Rewind here" (confirmed), and the session and its files go back — the later turn shown as
 * rewound; a file changed outside the agent is listed and overwritten only once confirmed.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { Page } from "playwright-core"
import { browser as chromium, expectKeyed, pageKeyOf, sessionRequests } from "./chromium.js"
import { start, startIn, storedEvents } from "./harness.js"

const browser = chromium()

interface PageGlobals {
  readonly document: {
    getElementById: (id: string) => { value: string; textContent: string | null; dispatchEvent: (event: unknown) => boolean } | null
  }
}

const scrubTo = (page: Page, at: number) =>
  Effect.promise(() =>
    page.evaluate((at) => {
      const range = (globalThis as unknown as PageGlobals).document.getElementById("scrub")!
      range.value = String(at)
      range.dispatchEvent(new Event("input", { bubbles: true }))
    }, at)
  )

describe("the viewer's rewind control in Chromium", () => {
  it.scopedLive("scrub to the end of a turn, Rewind here: the files and the conversation go back; changed files are listed before they are overwritten", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ checkpoints: true,
        policy: { mode: "acceptEdits" },
        responses: [
          { chunks: ["Writing a."], toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "a\n" } }] },
          { chunks: ["Wrote a."] },
          { chunks: ["Writing b."], toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "b\n" } }] },
          { chunks: ["Wrote b."] }
        ]
      })
      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      const dialogs: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      const requests = sessionRequests(page, server.url)
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message())
        void dialog.accept()
      })
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click("text=Start session"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("title")?.textContent?.startsWith("sess_") === true))
      const sessionId = (yield* Effect.promise(() => page.textContent("#title")))!
      for (const [n, message] of [[1, "write a"], [2, "write b"]] as const) {
        yield* Effect.promise(() => page.fill("#message", message))
        yield* Effect.promise(() => page.click("#send"))
        yield* Effect.promise(() => page.waitForSelector(`.turn:nth-of-type(${n}) [data-end=final]`))
      }
      expect(readFileSync(join(cwd, "b.txt"), "utf8")).toBe("b\n")
      const firstEnd = (yield* storedEvents(server, sessionId)).find((e) => e.type === "turn.completed")!.sequence

      // Live, there is no rewind control; scrubbed to the end of the first turn, there is.
      expect(yield* Effect.promise(() => page.isHidden("#rewind"))).toBe(true)
      yield* scrubTo(page, firstEnd)
      expect(yield* Effect.promise(() => page.isEnabled("#rewind"))).toBe(true)
      yield* Effect.promise(() => page.click("#rewind"))
      yield* Effect.promise(() => page.waitForSelector("#view > [data-event='session.rewound']"))
      expect(existsSync(join(cwd, "b.txt"))).toBe(false)
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("a\n")
      expect(yield* Effect.promise(() => page.locator(".turn[data-abandoned]").count())).toBe(1)
      expect(yield* Effect.promise(() => page.textContent(".turn[data-abandoned] .user"))).toBe("write b")
      expect(yield* Effect.promise(() => page.isHidden("#rewind"))).toBe(true)
      expect(dialogs).toHaveLength(1)

      // A file changed outside the agent: the page lists it and overwrites it only once confirmed.
      writeFileSync(join(cwd, "a.txt"), "mine\n")
      yield* scrubTo(page, 1)
      yield* Effect.promise(() => page.click("#rewind"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("status")?.textContent?.startsWith("Rewound to #1:") === true))
      expect(dialogs).toHaveLength(3)
      expect(dialogs[2]).toContain("a.txt")
      expect(existsSync(join(cwd, "a.txt"))).toBe(false)
      const events = yield* storedEvents(server, sessionId)
      expect(events.filter((e) => e.type === "session.rewound").map((e) => e.payload)).toMatchObject([
        { toSequence: firstEnd },
        { toSequence: 1, forced: ["a.txt"] }
      ])
      expect(errors).toEqual([])
      // The rewinds and every read went with the page's key.
      expectKeyed(requests, yield* Effect.promise(() => pageKeyOf(page)))
      expect(requests.filter((r) => r.method === "POST" && r.url.endsWith("/rewind")).length).toBeGreaterThan(0)
    }), { timeout: 120_000 })

  it.scopedLive("a log of 300 retries (a turn kept, a turn rewound, each time) shows every rewound turn as rewound and the others not", () =>
    Effect.gen(function*() {
      // The session is made by a server, its retries written to its log while none runs, then read by another.
      const { cwd, dataDir, server: first } = yield* startIn()
      const { sessionId } = yield* first.client.sessions.create({ payload: {} })
      yield* first.stop
      const retries = 300
      const lines: Array<string> = []
      let sequence = 1
      const event = (type: string, turnId: string | undefined, payload: object) =>
        lines.push(JSON.stringify({ id: `evt_r${++sequence}`, sessionId, sequence, timestamp: "2026-01-01T00:00:00.000Z", type, ...(turnId === undefined ? {} : { turnId }), payload }))
      const turn = (turnId: string, content: string) => {
        event("turn.started", turnId, { promptPreview: content })
        event("user.message", turnId, { content })
        event("model.delta", turnId, { text: `re ${content}` })
        event("turn.completed", turnId, { stopReason: "final" })
        return sequence
      }
      for (let i = 0; i < retries; i++) {
        const kept = turn(`turn_k${i}`, `kept ${i}`)
        turn(`turn_r${i}`, `retried ${i}`)
        event("session.rewound", undefined, { toSequence: kept, changes: [] })
      }
      appendFileSync(join(dataDir, "sessions", `${sessionId}.jsonl`), lines.join("\n") + "\n")
      const server = yield* start({ cwd, dataDir })
      const { context } = yield* browser
      const page = yield* Effect.promise(() => context.newPage())
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click(`[data-session="${sessionId}"]`))
      yield* Effect.promise(() =>
        page.waitForFunction((n) => (globalThis as unknown as { effectAgentViewer: { sequences: () => Array<number> } }).effectAgentViewer.sequences().length === n, sequence)
      )
      yield* Effect.promise(() => page.waitForSelector(`.turn[data-turn="turn_r${retries - 1}"][data-abandoned]`))
      // Every turn, not only the latest the page draws at first.
      yield* Effect.promise(() => page.click("[data-more=turns]:has-text('Show all')"))
      const abandoned = yield* Effect.promise(() => page.locator(".turn[data-abandoned] .user").allTextContents())
      const kept = yield* Effect.promise(() => page.locator(".turn:not([data-abandoned]) .user").allTextContents())
      expect(abandoned).toEqual(Array.from({ length: retries }, (_, i) => `retried ${i}`))
      expect(kept).toEqual(Array.from({ length: retries }, (_, i) => `kept ${i}`))
      expect(errors).toEqual([])
    }), { timeout: 120_000 })
})
