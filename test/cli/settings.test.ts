/**
 * The CLI's rules (issue 8, item 14) as units: the `--allow` / `--deny` flag parser. The settings
 * files' schemas, their one-line errors and the order of flags and file rules are the library's
 * (test/layers/ProjectSettings.integration.test.ts); the settings folder's guard is the policy's
 * (test/layers/PermissionPolicy.test.ts). The subprocess tests are in hardening.integration.test.ts and trust.integration.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Settings from "../../src/cli/Settings.js"
import { leftMessage, right } from "../helpers.js"

describe("--allow / --deny", () => {
  it("shell:<command> is a command rule; <file tool>:<path> a path rule; a bare tool a tool rule", () => {
    expect(right(Settings.parseFlag("allow", "shell:npm test"))).toEqual({ name: "--allow shell:npm test", decision: "allow", tool: "shell", command: "npm test" })
    expect(right(Settings.parseFlag("allow", "write_file:src/**"))).toEqual({ name: "--allow write_file:src/**", decision: "allow", tool: "write_file", path: "src/**" })
    expect(right(Settings.parseFlag("deny", "shell:git push*"))).toEqual({ name: "--deny shell:git push*", decision: "deny", tool: "shell", command: "git push*" })
    expect(right(Settings.parseFlag("allow", "read_file"))).toEqual({ name: "--allow read_file", decision: "allow", tool: "read_file" })
    expect(right(Settings.parseFlag("deny", "*"))).toEqual({ name: "--deny *", decision: "deny", tool: "*" })
    // Only the first colon splits: a command may hold colons of its own.
    expect(right(Settings.parseFlag("allow", "shell:echo a:b"))).toMatchObject({ command: "echo a:b" })
  })

  it("mistakes are one line naming the flag: unknown tool, empty pattern, a pattern without a tool", () => {
    for (const [value, why] of [
      ["Shell:npm test", /unknown tool "Shell"/],
      ["", /expected tool or tool:pattern/],
      ["shell:", /pattern after ':' is empty/],
      ["*:src/**", /a pattern needs a tool/]
    ] as const) {
      const message = leftMessage(Settings.parseFlag("allow", value))
      expect(message).toMatch(why)
      expect(message.startsWith(`--allow ${JSON.stringify(value)}: `)).toBe(true)
      expect(message).not.toContain("\n")
    }
  })

  it("parseFlags keeps every rule and fails on the first bad one", () => {
    expect(right(Settings.parseFlags({ allow: ["grep", "shell:npm test"], deny: ["shell:rm *"] })).map((r) => r.name)).toEqual([
      "--deny shell:rm *",
      "--allow grep",
      "--allow shell:npm test"
    ])
    expect(leftMessage(Settings.parseFlags({ allow: ["grep", "nope"], deny: [] }))).toMatch(/--allow "nope": unknown tool/)
  })
})
