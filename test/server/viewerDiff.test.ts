/**
 * The viewer's diff of an edit (`editDiff` in the page's rich.js, run here in Node): the model
 * writes both sides. Two long, wholly different texts made the line diff run for minutes (20,000
 * lines: 223 s), freezing the viewer's tab; past a time limit the edit is shown as all of the old
 * text removed and all of the new added.
 */
import { describe, expect, it } from "vitest"
// @ts-expect-error The page's own module (plain JavaScript, no types).
import { editDiff } from "../../src/server/viewer/editDiff.js"

type Line = { readonly kind: "add" | "remove" | "same"; readonly text: string }

describe("the viewer's edit diff", () => {
  it("a small edit is a diff line by line", () => {
    const lines = editDiff("edit_file", { path: "a.ts", oldString: "one\ntwo\nthree", newString: "one\n2\nthree" }) as ReadonlyArray<Line>
    expect(lines).toEqual([
      { kind: "same", text: "one" },
      { kind: "remove", text: "two" },
      { kind: "add", text: "2" },
      { kind: "same", text: "three" }
    ])
  })

  it("two long, wholly different sides are shown removed then added, without running the diff for minutes", () => {
    const side = (tag: string) => Array.from({ length: 20_000 }, (_, i) => `line ${tag} ${i}`).join("\n")
    const lines = editDiff("edit_file", { path: "a.ts", oldString: side("a"), newString: side("b") }) as ReadonlyArray<Line>
    expect(lines).toHaveLength(40_000)
    expect(lines.slice(0, 20_000).every((l) => l.kind === "remove")).toBe(true)
    expect(lines.slice(20_000).every((l) => l.kind === "add")).toBe(true)
    expect(lines[20_000]).toEqual({ kind: "add", text: "line b 0" })
  }, 120_000)
})
