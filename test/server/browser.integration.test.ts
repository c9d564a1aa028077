/**
 * The web session viewer in a real headless Chromium (the one the npm package @sparticuz/chromium
 * ships, driven by playwright-core: `npm ci` is the whole setup, nothing is downloaded). Through
 * the page only: log in with the one-time URL, start a session, send a message and see the scripted
 * model's reply, approve a tool call with its button, restart the server mid-turn and see the page
 * resume without a duplicated event, cancel a turn with its button, scrub the timeline back to the approval;
 * steer a running turn with Send, queue and drop follow-ups, compact and fork with their buttons.
 *
 * The screenshot in docs/ comes from viewerRich.integration.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import type { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
import { expectWellFormedLog } from "../helpers.js"
import { browser as chromium, expectKeyed, pageKeyOf, sessionRequests, watchedPage } from "./chromium.js"
import { liveUntil, start, startIn, storedEvents } from "./harness.js"

const browser = chromium()

/** What the page functions use of the browser's globals (the tests are compiled without the DOM's types). */
interface PageElement {
  textContent: string | null
  value: string
  disabled?: boolean
  dataset: Record<string, string | undefined>
  dispatchEvent: (event: unknown) => boolean
}
interface PageGlobals {
  readonly document: {
    readonly cookie: string
    getElementById: (id: string) => PageElement | null
    querySelector: (selector: string) => PageElement | null
  }
}

/** Starts a session with the page's button; answers its id once the page has opened it. */
const startSession = (page: Page) =>
  Effect.gen(function*() {
    yield* Effect.promise(() => page.click("text=Start session"))
    yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("title")?.textContent?.startsWith("sess_") === true))
    return (yield* Effect.promise(() => page.textContent("#title")))!
  })

const deltas = (events: ReadonlyArray<AgentEvent.AgentEvent>, turnId: string) =>
  events.filter((e) => e.type === "model.delta" && e.turnId === turnId).map((e) => (e.payload as { text: string }).text).join("")

describe("the web session viewer in Chromium", () => {
  it.scopedLive("start a session, stream a reply, approve a call, survive a server restart mid-turn, scrub the timeline", () =>
    Effect.gen(function*() {
      const ticks = Array.from({ length: 60 }, (_, i) => `tick${i} `)
      const responses = [
        { chunks: ["Hello", " from", " the", " scripted", " model."], delay: "30 millis" },
        { chunks: ["I will write a note."], toolCalls: [{ tool: "write_file", args: { path: "note.txt", content: "from the browser" } }] },
        { chunks: ["The note is written."] },
        { chunks: ticks, delay: "100 millis" }
      ]
      const token = "browser-test-token-0123456789"
      const { cwd, dataDir, server: first } = yield* startIn({ token, responses })
      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      const requests = sessionRequests(page, first.url)

      // Without the cookie the page is refused; the one-time URL sets it (HttpOnly, SameSite=Strict) and works once.
      const refused = yield* Effect.promise(() => page.goto(`${first.url}/`))
      expect(refused?.status()).toBe(401)
      const code = first.config.loginCodes.issue()
      yield* Effect.promise(() => page.goto(`${first.url}/login?code=${code}`))
      expect(new URL(page.url()).pathname).toBe("/")
      const cookies = yield* Effect.promise(() => context.cookies())
      expect(cookies).toEqual([expect.objectContaining({ name: `effect_agent_session_${first.port}`, httpOnly: true, sameSite: "Strict" })])
      expect(cookies[0]!.value).not.toContain(token)
      expect(yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie))).toBe("")
      const reused = yield* Effect.promise(() => context.request.get(`${first.url}/login?code=${code}`, { maxRedirects: 0 }))
      expect(reused.status()).toBe(401)

      // Start a session and send a message: the scripted reply streams in.
      const sessionId = yield* startSession(page)
      yield* Effect.promise(() => page.fill("#message", "say hello"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(1) [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(1) .text"))).toBe("Hello from the scripted model.")
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(1) .user"))).toBe("say hello")

      // A write asks: approve it with its button; the tool runs and the turn ends.
      yield* Effect.promise(() => page.fill("#message", "write a note"))
      yield* Effect.promise(() => page.press("#message", "Enter"))
      yield* Effect.promise(() => page.waitForSelector("[data-call][data-status=awaiting_approval] button[data-action=allow]"))
      expect(yield* Effect.promise(() => page.textContent("#phase"))).toBe("waiting for approval")
      yield* Effect.promise(() => page.click("[data-call] button[data-action=allow]"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(2) [data-end=final]"))
      expect(yield* Effect.promise(() => page.getAttribute(".turn:nth-of-type(2) [data-call]", "data-status"))).toBe("completed")
      expect(readFileSync(join(cwd, "note.txt"), "utf8")).toBe("from the browser")

      // Mid-turn, the server stops (the turn is cancelled) and starts again on the same port and data dir.
      yield* Effect.promise(() => page.fill("#message", "count slowly"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelector(".turn:nth-of-type(3) .text")?.textContent?.includes("tick2") === true))
      yield* first.stop
      const second = yield* start({ cwd, dataDir, token, port: first.port, responses: [{ chunks: ticks, delay: "100 millis" }] })
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(3) [data-end=cancelled]"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("status")?.dataset["state"] === "live"))
      const stored = yield* storedEvents(second, sessionId)
      expectWellFormedLog(stored)
      const shown = yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as { effectAgentViewer: { sequences: () => Array<number> } }).effectAgentViewer.sequences()))
      expect(shown).toEqual(stored.map((e) => e.sequence))
      const third = stored.filter((e) => e.type === "turn.started")[2]!.turnId!
      // The answer is rendered as Markdown: its text, up to surrounding whitespace.
      expect((yield* Effect.promise(() => page.textContent(".turn:nth-of-type(3) .text")))?.trim()).toBe(deltas(stored, third).trim())

      // The page keeps working against the new server: a turn cancelled with the button, then another that streams in.
      yield* Effect.promise(() => page.fill("#message", "count again"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelector(".turn:nth-of-type(4) .text")?.textContent?.includes("tick1") === true))
      yield* Effect.promise(() => page.click("#cancel"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(4) [data-end=cancelled]"))
      yield* Effect.promise(() => page.fill("#message", "still there?"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(5) [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(5) .text"))).toBe("Echo: still there?")

      // Scrub back to the approval question: the state as of then, from the log alone.
      const asked = stored.find((e) => e.type === "permission.resolved" && e.payload.decision === "ask")!
      yield* Effect.promise(() =>
        page.evaluate((at) => {
          const range = (globalThis as unknown as PageGlobals).document.getElementById("scrub")!
          range.value = String(at)
          range.dispatchEvent(new Event("input", { bubbles: true }))
        }, asked.sequence)
      )
      expect(yield* Effect.promise(() => page.textContent("#phase"))).toBe("waiting for approval")
      expect(yield* Effect.promise(() => page.textContent("#sequence"))).toBe(String(asked.sequence))
      expect(yield* Effect.promise(() => page.textContent("#open-calls"))).toContain("write_file — awaiting approval")
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(2)
      expect(yield* Effect.promise(() => page.textContent("#view"))).not.toContain("The note is written.")
      expect(yield* Effect.promise(() => page.locator("button[data-action=allow]").count())).toBe(0)
      yield* Effect.promise(() => page.click("#live"))
      expect(yield* Effect.promise(() => page.textContent("#phase"))).toBe("idle")
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(5)

      // A follow-up queued through the engine (as `chat` does) is shown where it was queued, then runs as its own turn, labelled so.
      yield* second.engine.followUp({ sessionId, message: "one more" })
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(6)[data-follow-up] [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent("#view > [data-event='followup.queued']"))).toBe("follow-up queued: one more")
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(6) .text"))).toBe("Echo: one more")
      expect(yield* Effect.promise(() => page.textContent("#follow-ups"))).toBe("none queued")
      expect(errors).toEqual([])
      // Every read and change the page made carried its key in a header, none in a URL: the list, the
      // live stream (reopened after the restart), the approval, the turns, the cancel.
      expectKeyed(requests, yield* Effect.promise(() => pageKeyOf(page)))
      const paths = new Set(requests.map((r) => `${r.method} ${new URL(r.url).pathname.replace(sessionId, ":id").replace(/approvals\/[^/]+$/, "approvals/:call")}`))
      expect([...paths].sort()).toEqual([
        "GET /sessions",
        "GET /sessions/:id/live",
        "POST /sessions",
        "POST /sessions/:id/approvals/:call",
        "POST /sessions/:id/cancel",
        "POST /sessions/:id/turns"
      ])
      expect(requests.filter((r) => r.url.includes("/live")).length).toBeGreaterThan(1)
    }), { timeout: 120_000 })

  it.scopedLive("Send steers a running turn, Queue as follow-up queues one, Drop drops, Compact answers its error, Fork opens the fork", () =>
    Effect.gen(function*() {
      const token = "browser-test-token-0123456789"
      const responses = [
        // Paused on its write while the page steers it and queues behind it.
        { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "n.txt", content: "n" } }] },
        { chunks: ["Written, and steered."] },
        { chunks: ["The follow-up ran."] },
        { chunks: ["Writing again."], toolCalls: [{ tool: "write_file", args: { path: "m.txt", content: "m" } }] }
      ]
      const { server } = yield* startIn({ token, responses })
      const { context } = yield* browser
      const page = context.pages()[0] ?? (yield* Effect.promise(() => context.newPage()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      const sessionId = yield* startSession(page)
      expect(yield* Effect.promise(() => page.isDisabled("#followup"))).toBe(true)
      expect(yield* Effect.promise(() => page.isDisabled("#compact"))).toBe(true)

      // While the turn waits for its approval, Send is Steer and a follow-up can be queued.
      yield* Effect.promise(() => page.fill("#message", "write n"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector("[data-call][data-status=awaiting_approval] button[data-action=allow]"))
      expect(yield* Effect.promise(() => page.textContent("#send"))).toBe("Steer")
      yield* Effect.promise(() => page.fill("#message", "also say steered"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("message")?.value === ""))
      yield* Effect.promise(() => page.fill("#message", "then this"))
      yield* Effect.promise(() => page.click("#followup"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("follow-ups")?.textContent?.startsWith("then this") === true))
      yield* Effect.promise(() => page.click("[data-call] button[data-action=allow]"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(2)[data-follow-up] [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(1) [data-event='turn.steered']"))).toBe("steered: also say steered")
      expect(yield* Effect.promise(() => page.textContent(".turn:nth-of-type(2) .text"))).toBe("The follow-up ran.")
      expect(yield* Effect.promise(() => page.textContent("#send"))).toBe("Send")

      // Queued behind another paused turn, then dropped with its button; the turn is cancelled.
      yield* Effect.promise(() => page.fill("#message", "write m"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector("[data-call][data-status=awaiting_approval]"))
      yield* Effect.promise(() => page.fill("#message", "never runs"))
      yield* Effect.promise(() => page.click("#followup"))
      // Read the state once the page shows the follow-up: the click only sends it (read at once, the
      // state could come before the follow-up was stored — [] — on a loaded machine).
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("follow-ups")?.textContent?.startsWith("never runs") === true))
      // The page drops what it shows, by id: a follow-up another client queued after it drew the list stays queued.
      const shown = (yield* Effect.promise(() => fetch(`${server.url}/sessions/${sessionId}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json()))) as { followUps: ReadonlyArray<{ queueId: string }> }
      const dropRequest = page.waitForRequest((r) => r.method() === "DELETE" && r.url().includes("/followups"))
      yield* Effect.promise(() => page.click("#drop-followups"))
      expect(new URL((yield* Effect.promise(() => dropRequest)).url()).searchParams.getAll("queueId")).toEqual(shown.followUps.map((f) => f.queueId))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("follow-ups")?.textContent === "none queued"))
      yield* Effect.promise(() => page.click("#cancel"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(3) [data-end=cancelled]"))

      // Compact on a session this small: asked for, it is compacted all but its last turn (the fake model
      // writes the summary); asked again, the server's answer (nothing to compact) is shown and nothing is stored.
      yield* Effect.promise(() => page.click("#compact"))
      yield* Effect.promise(() => page.waitForSelector("[data-event='session.compacted']"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("compact")?.disabled === false))
      const before = (yield* storedEvents(server, sessionId)).length
      yield* Effect.promise(() => page.click("#compact"))
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.getElementById("status")?.textContent?.startsWith("Nothing to compact") === true))
      expect((yield* storedEvents(server, sessionId)).length).toBe(before)

      // Fork: the page opens the new session, whose log is the source's up to its last turn, then session.forked.
      yield* Effect.promise(() => page.click("#fork"))
      yield* Effect.promise(() => page.waitForSelector("#view > [data-event='session.forked']"))
      const forkId = (yield* Effect.promise(() => page.textContent("#title")))!
      expect(forkId).not.toBe(sessionId)
      const forked = yield* storedEvents(server, forkId)
      expect(forked.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: sessionId, atSequence: before } })
      expect(yield* Effect.promise(() => page.locator(".turn").count())).toBe(3)
      // The list is reloaded when the fork opens; its answer arrives after the fork's first event is drawn.
      yield* Effect.promise(() => page.waitForSelector(`#sessions li[data-session='${forkId}'].current`))
      expect(yield* Effect.promise(() => page.locator(`#sessions li[data-session='${forkId}']`).count())).toBe(1)
      const log = yield* storedEvents(server, sessionId)
      expectWellFormedLog(log)
      expect(log.find((e) => e.type === "followup.dropped")).toBeDefined()
      expect(errors).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("a message typed while the last one's answer is on its way stays in the box", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { context } = yield* browser
      const { errors, page } = yield* watchedPage(context)
      // When the page has taken each answer to a POST of a message (its handlers are microtasks of the body's read: a task later, all ran).
      yield* Effect.promise(() =>
        page.addInitScript(() => {
          const scope = globalThis as unknown as { answered: Array<string>; setTimeout: (f: () => void) => void; Response: { prototype: { text: () => Promise<string>; url: string } } }
          scope.answered = []
          const text = scope.Response.prototype.text
          scope.Response.prototype.text = function(this: { url: string }) {
            return text.call(this).then((body) => {
              scope.setTimeout(() => scope.answered.push(new URL(this.url).pathname.split("/").at(-1)!))
              return body
            })
          }
        })
      )
      // A slow client: the answer to the turn's start comes after the turn's events (on /live) were drawn.
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      yield* Effect.promise(() =>
        page.route((url) => url.pathname.endsWith("/turns"), async (route) => {
          const response = await route.fetch()
          await released
          await route.fulfill({ response })
        })
      )
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* startSession(page)
      yield* Effect.promise(() => page.fill("#message", "first"))
      yield* Effect.promise(() => page.click("#send"))
      yield* Effect.promise(() => page.waitForSelector(".turn:nth-of-type(1) [data-end=final]"))
      yield* Effect.promise(() => page.fill("#message", "the next one, half typed"))
      release()
      yield* Effect.promise(() => page.waitForFunction(() => (globalThis as unknown as { answered: Array<string> }).answered.includes("turns")))
      expect(yield* Effect.promise(() => page.inputValue("#message"))).toBe("the next one, half typed")
      expect(errors).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("the live stream is read with the page's key; an event past a gap reopens it from the last event shown", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["one", " two", " three", " four"] }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "count" } })
      yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed"))
      const stored = yield* storedEvents(server, session.sessionId)
      expect(stored.length).toBeGreaterThan(5)

      const { context } = yield* browser
      const page = yield* Effect.promise(() => context.newPage())
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      const requests = sessionRequests(page, server.url)
      // The first stream the page opens is not the server's: events 1 to 3, then 5 — event 4 lost on the way.
      const livePath = `/sessions/${session.sessionId}/live`
      let served = 0
      yield* Effect.promise(() =>
        page.route((url) => url.pathname === livePath, (route) =>
          served++ > 0
            ? route.continue()
            : route.fulfill({ status: 200, contentType: "text/event-stream", body: [...stored.slice(0, 3), stored[4]!].map(Live.encode).join("") }))
      )
      yield* Effect.promise(() => page.goto(`${server.url}/login?code=${server.config.loginCodes.issue()}`))
      yield* Effect.promise(() => page.click(`[data-session="${session.sessionId}"]`))
      yield* Effect.promise(() =>
        page.waitForFunction((n) => (globalThis as unknown as { effectAgentViewer: { sequences: () => Array<number> } }).effectAgentViewer.sequences().length === n, stored.length)
      )
      // Every event once, in order: the gap reopened the stream after event 3, and the server's own stream filled it.
      const shown = yield* Effect.promise(() => page.evaluate(() => (globalThis as unknown as { effectAgentViewer: { sequences: () => Array<number> } }).effectAgentViewer.sequences()))
      expect(shown).toEqual(stored.map((e) => e.sequence))
      yield* Effect.promise(() => page.waitForSelector(".turn [data-end=final]"))
      expect(yield* Effect.promise(() => page.textContent(".turn .text"))).toBe("one two three four")
      const live = requests.filter((r) => new URL(r.url).pathname === livePath).map((r) => new URL(r.url).search)
      expect(live).toEqual(["?after=0", "?after=3"])
      expectKeyed(requests, yield* Effect.promise(() => pageKeyOf(page)))
      expect(errors).toEqual([])
    }), { timeout: 120_000 })
})
