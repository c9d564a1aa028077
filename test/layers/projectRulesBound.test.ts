/**
 * Red team 13: a project's settings file bounds what its rules cost. Every decision matches the call
 * against every deny and ask rule — a project's apply untrusted — synchronously, on the event loop
 * every session of a `serve` shares, and a rule's cost grows with its pattern. A 1 MiB
 * `.effect-agent/settings.json` holding 12,500 deny rules made each `shell` decision take 2 to 5 s,
 * one deny rule of a 400 KB pattern 6 s, for every command of every session in the clone. A
 * project's file now holds at most 500 rules, and their patterns at most 16 KiB in all; one past
 * either is refused as invalid, naming it.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"

const shown = ".effect-agent/settings.json"
const parsed = (json: unknown) => ProjectSettings.parseProject(JSON.stringify(json), shown)
const message = (json: unknown) => {
  const result = parsed(json)
  return Either.isLeft(result) ? result.left.message : "(accepted)"
}
const deny = (command: string) => ({ tool: "shell", command, decision: "deny" })

describe("a project's rules are bounded", () => {
  it("at most 500 rules", () => {
    expect(Either.isRight(parsed({ rules: Array.from({ length: 500 }, (_, i) => deny(`x${i}`)) }))).toBe(true)
    expect(message({ rules: Array.from({ length: 501 }, (_, i) => deny(`x${i}`)) })).toContain("at most 500 rules")
  })

  it("at most 16 KiB of patterns in all, one rule's or many's", () => {
    expect(message({ rules: [deny("x ".repeat(200_000))] })).toContain("16384 characters")
    expect(message({ rules: [{ tool: "read_file", path: "a/".repeat(20_000), decision: "ask" }] })).toContain("16384 characters")
    expect(message({ rules: Array.from({ length: 400 }, (_, i) => deny(`${i} ${"y".repeat(100)}`)) })).toContain("16384 characters")
    expect(Either.isRight(parsed({ rules: Array.from({ length: 150 }, (_, i) => deny(`${i} ${"y".repeat(100)}`)) }))).toBe(true)
  })

  it("your own settings file is yours: not bounded", () => {
    const user = ProjectSettings.parseUser(JSON.stringify({ rules: Array.from({ length: 600 }, (_, i) => deny(`x${i}`)) }), "settings.json")
    expect(Either.isRight(user)).toBe(true)
  })
})
