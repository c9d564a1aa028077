/**
 * A line that runs more commands inside others than a decision reads (`CommandPattern.readingLimit`,
 * counted over every deny and ask rule) asks, in every mode, with the reason: before, every rule read
 * every command again (`watch 'a b'` 10,000 times against 50 rules held the decision, and a `serve`'s
 * event loop, for seconds, then allowed it in `bypass`). A deny rule that matched a command read before
 * the limit still denies; a line within it is decided as before.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as CommandPattern from "../../src/layers/workspace/CommandPattern.js"
import { shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-reading-bound-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide } = shellDecisions(cwd)

const rules: ReadonlyArray<PermissionPolicy.Rule> = [
  ...Array.from({ length: 25 }, (_, i): PermissionPolicy.Rule => ({ name: `d${i}`, tool: "shell", command: `git push${i}*`, decision: "deny" })),
  ...Array.from({ length: 25 }, (_, i): PermissionPolicy.Rule => ({ name: `a${i}`, tool: "shell", command: `cmd${i} *`, decision: "allow" })),
  { name: "watch", tool: "shell", command: "watch 'a b'", decision: "allow" }
]
const hostile = "watch 'a b' ".repeat(10_000)

describe("the reading bound", () => {
  it("a line past it asks, even in bypass, saying why", async () => {
    for (const mode of ["bypass", "acceptEdits", "readOnly", "default"] as const) {
      expect(await decide(mode, hostile, rules)).toMatchObject({ decision: "ask", policy: "too-much-to-read", reason: expect.stringMatching(/20,000/) })
    }
    // `bash -c 'a b' && …` repeated, under a rule that spells out the chaining: the same.
    expect(await decide("bypass", "bash -c 'a b' && ".repeat(6_000) + "true", [...rules, { name: "all", tool: "shell", command: "bash -c * && *", decision: "allow" }]))
      .toMatchObject({ decision: "ask", policy: "too-much-to-read" })
  }, 120_000)

  it("a line with shell syntax no rule spells out is denied past it, as its short form is (redteam15)", async () => {
    // Before, the bound was decided first: each of these asked (too-much-to-read) where the short line is denied.
    const all: PermissionPolicy.Rule = { name: "all", tool: "shell", command: "*", decision: "allow" }
    const gits = Array.from({ length: 8_000 }, () => "git").join(" ")
    for (const [short, long] of [
      ["bash -c 'a b' && true", "bash -c 'a b' && ".repeat(6_000) + "true"],
      ["watch 'a b' > out", `${hostile}> out`],
      ["watch 'a b' $(x)", `${hostile}$(x)`],
      ["git git git | x", `git ${gits} | x`]
    ] as const) {
      for (const withAll of [rules, [...rules, all]]) {
        expect(await decide("default", short, withAll), short).toMatchObject({ decision: "deny", policy: "command-hazards" })
        expect(await decide("bypass", long, withAll), short).toMatchObject({ decision: "deny", policy: "command-hazards" })
      }
    }
  }, 120_000)

  it("a deny rule matching what was read first still denies", async () => {
    expect(await decide("bypass", `watch 'git push3 origin' ${hostile}`, rules)).toMatchObject({ decision: "deny", policy: "d3" })
    expect(await decide("bypass", `sh -c 'git push7 x'; ${"sh -c 'a b'; ".repeat(8_000)}`, rules)).toMatchObject({ decision: "deny", policy: "d7" })
  }, 120_000)

  it("is counted over the commands read inside others, not the line's own", () => {
    const reading = CommandPattern.budget(100)
    const within = "sh -c 'a b'; ".repeat(50)
    expect(CommandPattern.matchesAnywhere("git push*", within, CommandLine.tokenize(within), 0, reading)).toBe(false)
    expect(reading.left).toBeGreaterThanOrEqual(0)
    const past = "sh -c 'a b'; ".repeat(200)
    expect(() => CommandPattern.matchesAnywhere("git push*", past, CommandLine.tokenize(past), 0, CommandPattern.budget(100))).toThrow(CommandPattern.TooMuchToRead)
    // 20,000 commands of the line itself read under one rule: nothing spent.
    const flat = "a && ".repeat(20_000) + "a"
    const unspent = CommandPattern.budget(1)
    expect(CommandPattern.matchesAnywhere("git push*", flat, CommandLine.tokenize(flat), 0, unspent)).toBe(false)
    expect(unspent.left).toBe(1)
  })

  it("a line within it is decided as before", async () => {
    expect(await decide("bypass", "watch 'a b' ".repeat(100), rules)).toMatchObject({ decision: "allow", policy: "bypass" })
    expect(await decide("bypass", "watch 'git push4 x' ".repeat(100), rules)).toMatchObject({ decision: "deny", policy: "d4" })
  }, 60_000)
})
