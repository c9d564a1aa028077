/**
 * Globs met by the permission checks match in linear time. They were regular expressions, which
 * backtrack exponentially in the stars on a text that almost matches — `*a*a*a*a*a*a*b` against 100
 * `a`s ran 53 s, holding the event loop. Each surface is hostile on both sides: a deny rule from a
 * cloned project's settings against a path or command line the model wrote, and a glob in a shell
 * command against the file names of a repository. And the matcher answers exactly as the regular
 * expressions did, on every small case.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as CommandPaths from "../../src/layers/workspace/CommandPaths.js"
import * as CommandPattern from "../../src/layers/workspace/CommandPattern.js"
import * as Glob from "../../src/layers/workspace/Glob.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const cwd = "/work"
const call = (fields: Partial<PreparedCall>): PreparedCall => ({
  toolCallId: "c1",
  tool: "read_file",
  args: {},
  risk: "read",
  sequential: false,
  paths: [],
  scope: "read_file",
  input: {},
  ...fields
})
const decide = (rules: ReadonlyArray<PermissionPolicy.Rule>, c: PreparedCall) =>
  PermissionPolicy.decide({ mode: "default", rules }, { sessionId: "s", cwd, call: c, remembered: [] }).decision

const almost = "a".repeat(3000)

describe("globs in linear time", () => {
  it("a project's deny path rule with many stars against a long path the model asked for", () => {
    const path = `${cwd}/${almost}`
    const c = call({ paths: [{ requested: path, resolved: path, insideCwd: true, access: "read" }] })
    expect(decide([{ name: "project", decision: "deny", path: "**a**a**a**a**a**a**a**a**a**a**b" }], c)).toBe("allow")
    expect(decide([{ name: "project", decision: "deny", path: "*a*a*a*a*a*a*a*a*a*a*a" }], c)).toBe("deny")
  })

  it("a deny command rule with many stars against a long command line", () => {
    const text = `echo ${almost}`
    const c = call({ tool: "shell", risk: "write", command: { text, argv: ["echo", almost], hazards: [] }, scope: "shell:echo" })
    expect(CommandPattern.matchesAnywhere("*a*a*a*a*a*a*a*a*a*a*b", text)).toBe(false)
    expect(decide([{ name: "project", decision: "deny", command: "*a*a*a*a*a*a*a*a*a*a*b" }], c)).toBe("ask")
    expect(decide([{ name: "project", decision: "deny", command: "echo *a*a*a*a*a*a*a*a*a*a" }], c)).toBe("deny")
  })

  it("a shell glob with many stars against a repository's long file name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "effect-agent-glob-"))
    try {
      writeFileSync(join(dir, "a".repeat(250)), "")
      writeFileSync(join(dir, `${"a".repeat(200)}b`), "")
      const word = CommandLine.tokenize("*a*a*a*a*a*a*a*a*a*a*b").tokens[0] as CommandLine.Word
      expect(await CommandPaths.expandGlob(word, dir, dir, 1000)).toEqual([join(dir, `${"a".repeat(200)}b`)])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("answers as the regular expressions did, on every glob and text up to a small size", () => {
    // The old constructions: `*` → `.*` (or `[^/]*`), `?` → `.` (or `[^/]`), the rest literal.
    const asRegex = (glob: string, crosses: boolean) =>
      new RegExp(`^${[...glob].map((c) => c === "*" ? (crosses ? ".*" : "[^/]*") : c === "?" ? (crosses ? "." : "[^/]") : c.replace(/[.+^${}()|[\]\\/]/g, "\\$&")).join("")}$`, "s")
    const alphabet = ["a", "/", "*", "?"]
    const words = (n: number): Array<string> => n === 0 ? [""] : words(n - 1).flatMap((w) => [w, ...alphabet.map((c) => w + c)])
    const globs = [...new Set(words(4))]
    const texts = [...new Set(words(4).map((w) => w.replaceAll("*", "b").replaceAll("?", "\n")))]
    for (const crosses of [true, false]) {
      for (const glob of globs) {
        const units = Array.from(glob, (c): Glob.Unit => c === "*" ? { k: "star", crosses } : c === "?" ? { k: "one", crosses } : { k: "lit", c })
        const ours = Glob.compile(units)
        const theirs = asRegex(glob, crosses)
        for (const text of texts) expect([glob, text, crosses, ours.test(text)]).toEqual([glob, text, crosses, theirs.test(text)])
      }
    }
    // Characters outside the basic plane are matched unit by unit, as before.
    expect(Glob.anyText("*😀*").test("x😀y")).toBe(true)
    expect(Glob.anyText("?").test("😀")).toBe(false)
  })
})
