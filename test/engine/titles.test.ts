/**
 * Session titles in the engine (issue 23): derived from the first message, renamed with
 * `renameSession` (a `session.titled` event), the same in the live state, the listing, a replayed
 * state and a fork; a hostile title is made plain or refused, never stored raw.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Session from "../../src/domain/Session.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as SessionTitle from "../../src/domain/SessionTitle.js"
import * as SessionView from "../../src/domain/SessionView.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { collect, expectWellFormedLog, memoryEngine } from "../helpers.js"

const model = { responses: Array.from({ length: 6 }, (_, i) => ({ chunks: [`answer ${i + 1}`] })) }

/** The title as every projection of the session's log tells it: they must agree. */
const titles = (sessionId: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const log = yield* collect(engine.replaySession({ sessionId }))
    const live = (yield* engine.sessionState({ sessionId })).title
    const listed = (yield* engine.listSessions).find((s) => s.sessionId === sessionId)!.title
    const replayed = Either.getOrThrow(SessionState.replay(log))!.title
    const summarized = log.reduce(Session.summarize, undefined as Session.SessionSummary | undefined)!.title
    const viewed = SessionView.fold(log).title
    expect({ listed, replayed, summarized, viewed }).toEqual({ listed: live, replayed: live, summarized: live, viewed: live })
    return live
  })

describe("session titles", () => {
  it("derived: first line with text, plain, cut at a word boundary to at most 60 characters with an ellipsis", () => {
    expect(SessionTitle.fromMessage("\n\n  Fix   the build\nthen deploy")).toBe("Fix the build")
    expect(SessionTitle.fromMessage("\x1b[31mred\x1b[0m \x1b]0;title\x07text\x00 \u202eevil")).toBe("red text evil")
    const long = SessionTitle.fromMessage("word ".repeat(100))!
    expect(long).toBe(`${"word ".repeat(11)}word…`)
    expect(Array.from(long).length).toBeLessThanOrEqual(60)
    // One very long word is cut inside it; a surrogate pair is never split.
    expect(SessionTitle.fromMessage("x".repeat(200))).toBe(`${"x".repeat(59)}…`)
    expect(SessionTitle.fromMessage(`${"a".repeat(58)}😀😀😀`)).toBe(`${"a".repeat(58)}😀…`)
    // A control or lone surrogate between two spaces leaves one space; a form feed separates words.
    expect(SessionTitle.fromMessage("a \x01 b \ud800 c\fd")).toBe("a b c d")
    // Every bidi and invisible format character the terminal and ACP escape is dropped (the Arabic
    // letter mark, a zero-width space, a word joiner; a byte-order mark is whitespace to JavaScript, a space); joiners, which shape
    // Persian words and emoji sequences and hide nothing, stay.
    expect(SessionTitle.fromMessage("ab\u061cc d\u200be\u2060f\ufeffg")).toBe("abc def g")
    expect(SessionTitle.fromMessage("می\u200cخواهم 👩\u200d💻")).toBe("می\u200cخواهم 👩\u200d💻")
    expect(SessionTitle.fromMessage("", 1)).toBe("Image")
    expect(SessionTitle.fromMessage(" \n ", 3)).toBe("3 images")
    expect(SessionTitle.fromMessage("")).toBeUndefined()
    // 1 MB on one line: a short title, without reading it all.
    expect(SessionTitle.fromMessage("y".repeat(1 << 20))).toBe(`${"y".repeat(59)}…`)
  })

  it.effect("the first message titles the session; a rename replaces it, later messages do not; every projection agrees", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const session = yield* engine.createSession({ cwd: "/work", client: "test" })
      expect(yield* titles(session.sessionId)).toBeUndefined()
      yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "Refactor the\tparser\nso it streams" }))
      expect(yield* titles(session.sessionId)).toBe("Refactor the parser")
      expect(yield* engine.renameSession({ sessionId: session.sessionId, title: "  Parser \x1b[1mwork\x1b[0m\n" })).toEqual({ title: "Parser work" })
      expect(yield* titles(session.sessionId)).toBe("Parser work")
      yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "and another thing" }))
      expect(yield* titles(session.sessionId)).toBe("Parser work")
      const log = yield* collect(engine.replaySession({ sessionId: session.sessionId }))
      expectWellFormedLog(log)
      const titled = log.filter((e) => e.type === "session.titled")
      expect(titled).toHaveLength(1)
      expect(titled[0]).not.toHaveProperty("turnId")
      expect(titled[0]!.payload).toEqual({ title: "Parser work" })
      // The same title again stores nothing.
      yield* engine.renameSession({ sessionId: session.sessionId, title: "Parser work" })
      expect((yield* collect(engine.replaySession({ sessionId: session.sessionId }))).length).toBe(log.length)
      // A fork carries the title; renaming the fork leaves the source alone.
      const fork = yield* engine.forkSession({ sessionId: session.sessionId })
      expect(yield* titles(fork.sessionId)).toBe("Parser work")
      yield* engine.renameSession({ sessionId: fork.sessionId, title: "The fork" })
      expect(yield* titles(fork.sessionId)).toBe("The fork")
      expect(yield* titles(session.sessionId)).toBe("Parser work")
    }).pipe(Effect.provide(memoryEngine(model))))

  it.effect("named before its first message: the message does not replace the user's title", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const session = yield* engine.createSession({ cwd: "/work", client: "test" })
      yield* engine.renameSession({ sessionId: session.sessionId, title: "Mine" })
      yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage: "hello" }))
      expect(yield* titles(session.sessionId)).toBe("Mine")
    }).pipe(Effect.provide(memoryEngine(model))))

  it.effect("a title that is empty once made plain, or too long, is InvalidInput naming the field; nothing is stored", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const session = yield* engine.createSession({ cwd: "/work", client: "test" })
      for (const title of ["", "  \n\t", "\x1b[2J\x1b[H", "z".repeat(201), "z".repeat(1 << 20)]) {
        const error = yield* Effect.flip(engine.renameSession({ sessionId: session.sessionId, title }))
        expect(error).toMatchObject({ _tag: "InvalidInput", field: "title" })
      }
      expect(yield* collect(engine.replaySession({ sessionId: session.sessionId }))).toHaveLength(1)
      expect(yield* Effect.flip(engine.renameSession({ sessionId: "nope", title: "x" }))).toMatchObject({ _tag: "SessionNotFound" })
      expect((yield* engine.renameSession({ sessionId: session.sessionId, title: "z".repeat(200) })).title).toHaveLength(200)
    }).pipe(Effect.provide(memoryEngine(model))))
})
