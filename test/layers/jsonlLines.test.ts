/**
 * The JSONL line splitter: whatever the read chunks (one byte, a multi-byte character cut in two, a
 * buffer the reader reuses), the lines are the file's lines; a line over the cap stops it, naming
 * the line.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as LogLines from "../../src/layers/jsonl/LogLines.js"

/** Pushes `bytes` in chunks of the given sizes through one reused buffer, as the store's reader does. */
const split = (bytes: Uint8Array, sizes: ReadonlyArray<number>, maxLineBytes?: number) => {
  const splitter = new LogLines.Splitter(maxLineBytes)
  const lines: Array<[string, number]> = []
  const buffer = Buffer.alloc(Math.max(1, ...sizes))
  let at = 0
  for (let i = 0; at < bytes.byteLength; i++) {
    const size = Math.min(sizes[i % sizes.length]!, bytes.byteLength - at)
    buffer.set(bytes.subarray(at, at + size))
    at += size
    const failed = splitter.push(buffer.subarray(0, size), (text, number): undefined => {
      lines.push([text, number])
    })
    // Scribbled over, as a reader reusing its buffer would.
    buffer.fill(0x41)
    if (failed !== undefined) return { lines, failed }
  }
  return { lines, rest: splitter.end() }
}

describe("LogLines.Splitter", () => {
  it("property: any chunking of any text gives back its lines, numbered, and the unended rest", () =>
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.string({ unit: "binary", maxLength: 40 }).map((s) => s.replace(/\n/g, " ")), { maxLength: 12 }),
        FastCheck.boolean(),
        FastCheck.array(FastCheck.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 8 }),
        (texts, ended, sizes) => {
          const text = texts.join("\n") + (ended && texts.length > 0 ? "\n" : "")
          const bytes = new TextEncoder().encode(text)
          const { lines, rest } = split(bytes, sizes)
          const whole = text.split("\n")
          const tail = whole.pop()!
          // Lone surrogates become U+FFFD in UTF-8, as in any reader.
          const decoded = (s: string) => new TextDecoder().decode(new TextEncoder().encode(s))
          expect(lines).toEqual(whole.map((line, i) => [decoded(line), i + 1]))
          expect(rest).toEqual(tail === "" ? undefined : { text: decoded(tail), number: whole.length + 1, terminated: false })
        }
      ),
      { numRuns: 500 }
    ))

  it("a line over the cap stops the splitting at that line, whether it is ended in one chunk or spread over many", () => {
    const bytes = new TextEncoder().encode("short\n" + "é".repeat(20) + "\nafter\n")
    for (const sizes of [[1000], [3], [1]]) {
      const { lines, failed } = split(bytes, sizes, 30)
      expect(lines).toEqual([["short", 1]])
      expect(failed).toMatchObject({ _tag: "LineTooLong", number: 2, maxLineBytes: 30 })
    }
    expect(split(bytes, [1000], 40).lines.map(([text]) => text)).toEqual(["short", "é".repeat(20), "after"])
  })
})
