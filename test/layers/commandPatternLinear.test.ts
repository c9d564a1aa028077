/**
 * The command-pattern matcher reads a line once per rule in a single forward pass (a set of pattern
 * positions), and a decision tokenizes a long line once, not once per rule: 51 rules on a 128 KiB
 * line the model wrote took a decision 27 s, holding the event loop (now well under a second; the
 * times are in the commit, not asserted here). This checks the pass against the table it replaced
 * — every pattern and line over a small alphabet of words, wildcards, quotes and operators — and a
 * decision on a long line against the same decision on a short one.
 */
import { describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandPattern from "../../src/layers/workspace/CommandPattern.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const free = (u: CommandPattern.Unit) => u.k === "sep" || (u.k === "ch" && u.free)
const same = (p: CommandPattern.PatternUnit, u: CommandPattern.Unit): boolean =>
  p.k === "lit" ? u.k === "ch" && u.c === p.c
  : p.k === "one" ? u.k === "ch" && u.free
  : p.k === "sep" ? u.k === "sep"
  : p.k === "op" ? u.k === "op" && u.op === p.op
  : p.k === "dyn" ? u.k === "dyn" && u.raw === p.raw
  : false

/** The dynamic-programming table the matcher used before: the oracle. */
const byTable = (pattern: ReadonlyArray<CommandPattern.PatternUnit>, units: ReadonlyArray<CommandPattern.Unit>): boolean => {
  const n = units.length
  let next = Array.from({ length: n + 1 }, (_, j) => j === n)
  for (let i = pattern.length - 1; i >= 0; i--) {
    const p = pattern[i]!
    const current = new Array<boolean>(n + 1).fill(false)
    for (let j = n; j >= 0; j--) {
      current[j] = p.k === "star" ? next[j]! || (j < n && free(units[j]!) && current[j + 1]!) : j < n && same(p, units[j]!) && next[j + 1]!
    }
    next = current
  }
  return next[0]!
}

const strings = (alphabet: ReadonlyArray<string>, length: number): Array<string> => {
  const out = [""]
  let layer = [""]
  for (let l = 0; l < length; l++) {
    layer = layer.flatMap((s) => alphabet.map((a) => s + a))
    out.push(...layer)
  }
  return out
}

describe("command patterns, matched in one pass", () => {
  it("agree with the table they replaced on every small pattern and line", () => {
    const patterns = strings(["a", "*", "?", " ", "|", "'*'"], 3)
    const lines = strings(["a", " ", "|", "*", "$x", "\n"], 4).map((line) => ({ line, units: CommandPattern.lineUnits(line) }))
    let compared = 0
    for (const pattern of patterns) {
      const compiled = CommandPattern.compile(pattern)
      if (compiled === undefined) continue
      for (const { line, units } of lines) {
        const matched = CommandPattern.matches(pattern, line)
        if (matched !== byTable(compiled.units, units)) expect({ pattern, line, matched }).toEqual({ pattern, line, matched: !matched })
        compared++
      }
    }
    expect(compared).toBeGreaterThan(300_000)
  }, 120_000)

  it("a decision on a long line is the decision on its short form, whatever line was decided before", () => {
    const call = (text: string): PreparedCall => ({
      toolCallId: "c1",
      tool: "shell",
      args: {},
      risk: "write",
      sequential: false,
      paths: [],
      scope: "shell:echo",
      input: {},
      command: { text, argv: text.split(" "), hazards: [] }
    })
    const rules: Array<PermissionPolicy.Rule> = [
      ...Array.from({ length: 25 }, (_, i): PermissionPolicy.Rule => ({ name: `a${i}`, tool: "shell", command: `cmd${i} *`, decision: "allow" })),
      ...Array.from({ length: 25 }, (_, i): PermissionPolicy.Rule => ({ name: `d${i}`, tool: "shell", command: `rm${i} -rf *`, decision: "deny" })),
      { name: "echo", tool: "shell", command: "echo *", decision: "allow" }
    ]
    const decide = (text: string) => PermissionPolicy.decide({ mode: "default", rules }, { sessionId: "s", cwd: "/w", call: call(text), remembered: [] })
    const long = (unit: string) => `echo ${unit.repeat(Math.floor(120_000 / unit.length))}`
    expect(decide(long("a "))).toEqual(decide("echo a a"))
    expect(decide(long("a && "))).toEqual(decide("echo a && a"))
    expect(decide(`${long("a ")} && rm7 -rf /`)).toEqual(decide("echo a && rm7 -rf /"))
    expect(decide(`${long("a ")} && rm7 -rf /`)).toMatchObject({ decision: "deny", policy: "d7" })
    // The same long line decided twice, with another line between: the same answers.
    const line = long("b ")
    expect(decide(line)).toEqual(decide("echo b"))
    expect(decide(long("c "))).toEqual(decide("echo c"))
    expect(decide(line)).toEqual(decide("echo b"))
  }, 120_000)
})
