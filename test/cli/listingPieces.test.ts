/**
 * A listing written in pieces (cli/Sessions.ts `inPieces`): the pieces, each followed by a newline
 * as `Console.log` writes it, are the lines one after another — whatever the lines' lengths.
 */
import { describe, expect, it } from "vitest"
import { inPieces } from "../../src/cli/Sessions.js"

const written = (pieces: ReadonlyArray<string>) => pieces.map((piece) => `${piece}\n`).join("")

describe("a listing written in pieces", () => {
  it("writes the lines one after another, in pieces of about the size asked", () => {
    const lines = Array.from({ length: 1_000 }, (_, i) => `line ${i} ${"x".repeat(i % 37)} — ·`)
    for (const chars of [1, 10, 100, 4_096, 1_000_000]) {
      const pieces = inPieces(lines, (l) => l, chars)
      expect(written(pieces)).toBe(lines.map((l) => `${l}\n`).join(""))
      // Every piece but the last reached the size; none holds a line more than it needed to.
      for (const piece of pieces.slice(0, -1)) expect(piece.length).toBeGreaterThanOrEqual(chars)
      for (const piece of pieces) expect(piece.slice(0, piece.lastIndexOf("\n") + 1).length - 1).toBeLessThan(chars)
    }
    expect(inPieces(lines, (l) => l)).toHaveLength(1)
    expect(inPieces([], (l: string) => l)).toEqual([])
    expect(written(inPieces(["", "", "a"], (l) => l, 1))).toBe("\n\na\n")
  })
})
