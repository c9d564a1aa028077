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

  it("a title is read as normalize would store it whatever it holds: the quick test for an already plain title misses nothing plain drops", () => {
    // Format characters past the first list (soft hyphen, U+206A–F, the Arabic number signs, tag characters that
    // carry a hidden ASCII text), separators, non-ASCII spaces, lone surrogates: each must take the long way.
    const hostileChars = ["\u00ad", "\u0600", "\u180e", "\u206a", "\u206f", "\ufff9", "\u{e0041}\u{e0042}", "\u2028", "\u00a0", "\u3000", "\ud800", "\x85"]
    for (const c of hostileChars) {
      const title = `a${c}b`
      const normalized = SessionTitle.normalize(title)
      expect("title" in normalized ? normalized.title : undefined, JSON.stringify(title)).toBe(SessionTitle.stored(title))
    }
    // Emoji (a surrogate pair, a variation selector, joiners) are kept as they are.
    expect(SessionTitle.stored("ship it \u{1f680} \u2764\ufe0f \u{1f469}\u200d\u{1f4bb}")).toBe("ship it \u{1f680} \u2764\ufe0f \u{1f469}\u200d\u{1f4bb}")
  })

  it("a title this program stored is kept as it is", () => {
    const normalized = SessionTitle.normalize("  My   session \u202e ")
    expect(normalized).toEqual({ title: "My session" })
    const titled = [log[0]!, at(2, "session.titled", { title: "My session" })]
    expect(SessionView.fold(titled).title).toBe("My session")
    expect(Session.titleChange(titled[1]!)?.title).toBe("My session")
  })
})
