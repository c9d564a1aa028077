/**
 * Red team round 19: the characters a summary must show as escapes. The trust summary of a project's
 * `.mcp.json` (and every name or rule shown through `FormatCharacters.escapeUnprintable`) escaped
 * controls and a fixed list of bidi and zero-width characters, and missed others that show as
 * nothing or as something else: the soft hyphen (U+00AD), U+206A–U+206F, the tag characters
 * (U+E0000–U+E007F, which carry whole hidden ASCII texts), variation selectors, private-use and
 * unassigned code points, line and paragraph separators and the non-ASCII spaces (`npx\u00a0evil`
 * reads as `npx evil`). Now whole Unicode categories are escaped (Cc, Cf, Co, Cn, Cs, Zl, Zp, Zs
 * but the ASCII space) and the variation selectors, astral ones as `\u{…}`. Failed before: every
 * character of the list but U+2028 came through as it was.
 */
import { describe, expect, it } from "vitest"
import * as FormatCharacters from "../../src/domain/FormatCharacters.js"
import * as McpConfig from "../../src/layers/mcp/McpConfig.js"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"

const hidden: ReadonlyArray<readonly [string, string]> = [
  ["\u00ad", "\\u00ad"], ["\u206a", "\\u206a"], ["\u206f", "\\u206f"], ["\u{e0041}", "\\u{e0041}"], ["\u{e007f}", "\\u{e007f}"],
  ["\ufe0f", "\\ufe0f"], ["\u{e0100}", "\\u{e0100}"], ["\ue000", "\\ue000"], ["\u{f0000}", "\\u{f0000}"], ["\u0378", "\\u0378"],
  ["\u2028", "\\u2028"], ["\u2029", "\\u2029"], ["\u00a0", "\\u00a0"], ["\u3000", "\\u3000"], ["\u2007", "\\u2007"], ["\u180e", "\\u180e"],
  ["\ud800", "\\ud800"], ["\u202e", "\\u202e"], ["\u001b", "\\u001b"], ["\u0085", "\\u0085"]
]

describe("escapeUnprintable escapes whole categories", () => {
  for (const [c, shown] of hidden) {
    it(`${shown}`, () => {
      expect(FormatCharacters.escapeUnprintable(`a${c}b`)).toBe(`a${shown}b`)
      expect(FormatCharacters.isPrintable(`a${c}b`)).toBe(false)
    })
  }
  it("keeps what shows as itself: ASCII, letters of any script, emoji, the ASCII space", () => {
    for (const text of ["npx -y server", "café ü ß", "日本語", "Ελληνικά", "😀", "a b"]) {
      expect(FormatCharacters.escapeUnprintable(text)).toBe(text)
      expect(FormatCharacters.isPrintable(text)).toBe(true)
    }
  })
  it("a trust summary's server line shows a hidden tag text and a non-breaking space", () => {
    const smuggled = [..."rm -rf ~"].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("")
    const line = ProjectSettings.escapeControls(McpConfig.describe(`docs${smuggled}`, { command: "npx\u00a0evil", args: ["x\u00ady"] }))
    expect(line).not.toMatch(/[\u{e0000}-\u{e007f}\u00a0\u00ad]/u)
    expect(line).toContain("\\u{e0072}\\u{e006d}")
    expect(line).toContain("npx\\u00a0evil")
  })
})
