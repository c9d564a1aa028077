/**
 * The viewer's tree view in a real headless Chromium: a `task` call shows its subagent nested under
 * it — a link to the subagent's session, its task, what its tree used — and, live, the subagent's
 * call waiting for the user with buttons that answer it on the subagent's session.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { browser as chromium, openSession } from "./chromium.js"
import { startIn, storedEvents } from "./harness.js"

const browser = chromium()

describe("the viewer's subagents", () => {
  it.scopedLive("a subagent nested under its task call, its ask answered with the call's Allow button, its session a link", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        token: "viewer-subagents-token-0123456789",
        responses: [
          { toolCalls: [{ tool: "task", args: { description: "write a.txt", prompt: "child: write" }, id: "task_1" }] },
          { chunks: ["Delegated."] }
        ],
        subagents: {
          "child: write": [
            { toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "child" } }], usage: { inputTokens: 30, outputTokens: 4 } },
            { chunks: ["Written."] }
          ]
        }
      })
      const { context } = yield* browser
      const { errors, page } = yield* openSession(context, server)
      const parentId = (yield* Effect.promise(() => page.textContent("#title")))!.trim()
      yield* Effect.promise(() => page.fill("#message", "delegate"))
      yield* Effect.promise(() => page.click("#send"))
      // The ask, nested under the task call, labelled with the subagent.
      const asking = "[data-call=task_1] .subagent [data-asking] button[data-action=allow]"
      yield* Effect.promise(() => page.waitForSelector(asking))
      expect(yield* Effect.promise(() => page.textContent("[data-call=task_1] .subagent"))).toContain("write a.txt")
      expect(yield* Effect.promise(() => page.textContent("[data-call=task_1] .subagent [data-asking]"))).toContain("write_file (write)")
      yield* Effect.promise(() => page.click(asking))
      yield* Effect.promise(() => page.waitForSelector(".turn [data-end=final]"))
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("child")
      // Settled: no button left; the tree's usage and how the subagent ended, under the call.
      expect(yield* Effect.promise(() => page.locator("[data-call=task_1] [data-asking]").count())).toBe(0)
      const nested = (yield* Effect.promise(() => page.textContent("[data-call=task_1] .subagent")))!
      expect(nested).toContain("2 steps · tokens in 30 · out 4")
      expect(nested).toContain("final")
      const childId = (yield* Effect.promise(() => page.getAttribute("[data-call=task_1] .subagent", "data-subagent")))!
      const child = yield* storedEvents(server, childId)
      expect(child.filter((e) => e.type === "permission.resolved").map((e) => (e.payload as { actor: string }).actor)).toEqual(["policy", "user"])
      // The link opens the subagent's own session, whose log says whose it is.
      yield* Effect.promise(() => page.click("[data-call=task_1] .subagent-link"))
      yield* Effect.promise(() => page.waitForSelector(`#title:has-text('${childId}')`))
      yield* Effect.promise(() => page.waitForSelector(".turn [data-end=final]"))
      expect(parentId).not.toBe(childId)
      expect(errors).toEqual([])
    }))
})
