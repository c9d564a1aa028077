/**
 * The CLI's rules (issue 8, item 14) as units: the `--allow` / `--deny` flag parser, the settings
 * file's schema and its one-line errors naming the bad entry, the order of flags and file rules. The
 * settings folder's guard is the policy's (test/layers/PermissionPolicy.test.ts). The subprocess tests are in hardening.integration.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Settings from "../../src/cli/Settings.js"

const right = <A, E>(either: Either.Either<A, E>): A => {
  if (Either.isLeft(either)) throw new Error(`expected Right, got ${JSON.stringify(either.left)}`)
  return either.right
}
const leftMessage = <A, E extends { readonly message: string }>(either: Either.Either<A, E>): string => {
  if (Either.isRight(either)) throw new Error(`expected Left, got ${JSON.stringify(either.right)}`)
  return either.left.message
}

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

describe("the settings file", () => {
  const shown = ".effect-agent/settings.json"

  it("mode, rules and env are read", () => {
    const file = right(Settings.parseFile(JSON.stringify({
      mode: "acceptEdits",
      rules: [{ name: "tests", decision: "allow", tool: "shell", command: "npm test" }],
      env: { allow: ["NODE_ENV"] }
    }), shown))
    expect(file.mode).toBe("acceptEdits")
    expect(file.rules).toEqual([{ name: "tests", decision: "allow", tool: "shell", command: "npm test" }])
  })

  it("a bad entry is one line naming it", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ rules: [{ name: "a", decision: "deny" }, { name: "b", decision: "maybe" }] }, `${shown}: rules[1].decision: Expected "allow" | "deny" | "ask", actual "maybe"`],
      [{ mode: "yolo" }, `${shown}: mode: Expected "default" | "acceptEdits" | "readOnly", actual "yolo"`],
      // The file comes with the project: it cannot turn every check off, nor allow a whole tool.
      [{ mode: "bypass" }, `${shown}: mode: "bypass" can only be given on the command line (--mode bypass), not by a project's settings`],
      [{ rules: [{ name: "all", decision: "allow", tool: "*" }] }, `${shown}: rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rules: [{ name: "sh", decision: "allow", tool: "shell" }] }, `${shown}: rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rules: [{ name: "any", decision: "allow", command: "rm *" }] }, `${shown}: rules[0]: an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)`],
      [{ rule: [] }, `${shown}: rule: is unexpected, expected: "mode" | "rules" | "env"`],
      [{ rules: [{ name: "x", decision: "deny", tool: "Shell" }] }, `${shown}: rules[0].tool: unknown tool "Shell" (tools: read_file, write_file, edit_file, list_dir, grep, shell, or *)`],
      [{ rules: [{ decision: "deny" }] }, `${shown}: rules[0].name: is missing`],
      [[], `${shown}: Expected {`]
    ]
    for (const [json, expected] of cases) {
      const message = leftMessage(Settings.parseFile(JSON.stringify(json), shown))
      if (Array.isArray(json)) expect(message.startsWith(expected)).toBe(true)
      else expect(message).toBe(expected)
      expect(message).not.toContain("\n")
    }
    expect(leftMessage(Settings.parseFile("{\"rules\":", shown))).toMatch(/^\.effect-agent\/settings\.json: not valid JSON/)
  })

  it("flags come before the file's rules; --mode before the file's mode, which comes before default", () => {
    const file = right(Settings.parseFile(JSON.stringify({ mode: "readOnly", rules: [{ name: "file", decision: "ask", tool: "shell" }] }), shown))
    const flags = right(Settings.parseFlags({ allow: ["shell:npm test"], deny: [] }))
    expect(Settings.policyOptions(file, { mode: undefined, rules: flags })).toEqual({ mode: "readOnly", rules: [...flags, ...file.rules!] })
    expect(Settings.policyOptions(file, { mode: "acceptEdits", rules: [] }).mode).toBe("acceptEdits")
    expect(Settings.policyOptions({}, { mode: undefined, rules: [] }).mode).toBe("default")
  })
})

describe("the settings note", () => {
  it("says in one line what a project's file sets, and nothing for an empty one", () => {
    expect(Settings.describe({ mode: "acceptEdits", rules: [{ name: "t", decision: "allow", tool: "shell", command: "npm test" }], env: { allow: ["CI"] } }))
      .toBe("effect-agent: .effect-agent/settings.json: mode acceptEdits, 1 rule, environment.")
    expect(Settings.describe({})).toBeUndefined()
  })
})
