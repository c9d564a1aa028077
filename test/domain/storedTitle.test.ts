/**
 * A title a stored log names (`session.titled`): a log another process wrote, or one that came with
 * a repository's `.effect-agent/`, is not held to what `SessionEngine.setTitle` stores (plain, one
 * line, at most 200 characters). Before, its title was listed as it came — bidi overrides that
 * reorder what the viewer's list and `effect-agent sessions` show (`gnp.exe` read as `exe.png`),
 * terminal escapes, 300 KB in every listing. Now every fold of the log takes it as a title the user
 * gives is stored: made plain and cut to the cap.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Session from "../../src/domain/Session.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionTitle from "../../src/domain/SessionTitle.js"
import * as SessionView from "../../src/domain/SessionView.js"

const hostile = `Notes \u202egnp.exe\u202c \u2066x\u2069 <b>\x1b[31mred\n${"y".repeat(300_000)}`
// U+061C, U+200B–U+200F, U+2028–U+202E, U+2060–U+2069, U+FEFF (FormatCharacters), and C0/C1 controls.
// eslint-disable-next-line no-control-regex
const unprintable = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/

const at = (sequence: number, type: string, payload: object): AgentEvent =>
  ({ id: `evt_${sequence}`, sessionId: "sess_a", sequence, timestamp: "2026-12-06T00:00:00.000Z", type, payload }) as unknown as AgentEvent

const log = [at(1, "session.created", { cwd: "/work", client: "cli" }), at(2, "session.titled", { title: hostile })]

const expectInert = (title: string | undefined) => {
  expect(title).toBeDefined()
  expect(title!.startsWith("Notes gnp.exe x <b>red y")).toBe(true)
  expect(title).not.toMatch(unprintable)
  expect(Array.from(title!).length).toBeLessThanOrEqual(SessionTitle.maxLength)
}

describe("a stored log's session.titled that breaks what a title may be", () => {
  it("is listed plain and cut: the summary (the JSONL index and the SQL stores' title column fold titleChange)", () => {
    const change = Session.titleChange(log[1]!)
    expect(change?._tag).toBe("Set")
    expectInert(change?.title)
    expectInert(Session.summaryOf(Either.getOrThrow(SessionState.replay(log))!).title)
  })

  it("is shown plain and cut by the viewer's fold, in the title and in its note", () => {
    const view = SessionView.fold(log)
    expectInert(view.title)
    expect(JSON.stringify(view)).not.toMatch(unprintable)
    expect(JSON.stringify(view).length).toBeLessThan(5000)
  })

  it("a title this program stored is kept as it is", () => {
    const normalized = SessionTitle.normalize("  My   session \u202e ")
    expect(normalized).toEqual({ title: "My session" })
    const titled = [log[0]!, at(2, "session.titled", { title: "My session" })]
    expect(SessionView.fold(titled).title).toBe("My session")
    expect(Session.titleChange(titled[1]!)?.title).toBe("My session")
  })
})
