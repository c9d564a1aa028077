/**
 * A decision on a long line costs the line once and each rule a little, not the line once per rule:
 * a 65,000-word `echo a a a …` (within the 128 KiB line limit) took 130–170 ms per deny or ask rule,
 * on the event loop, because each rule made its own passes over every word of the line (where its
 * program begins, git's settings, a package manager's other names, …). The work is counted
 * (`CommandPattern.visited`: the words and units the matcher visits), never timed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandPattern from "../../src/layers/workspace/CommandPattern.js"
import { shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-line-cost-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const { decide, prepare } = shellDecisions(cwd)

/** Twenty deny and ask rules naming programs each matcher path reads (git's settings, npm's names, runners, make's targets). */
const patterns = [
  "git push*", "npm publish*", "rm -rf*", "curl *", "sudo *", "make deploy*", "npx cowsay*", "pnpm dlx foo*", "docker run*",
  "git reset --hard*", "npm run deploy*", "ssh *", "kubectl delete*", "terraform apply*", "yarn publish*", "chmod -R*", "scp *",
  "git clean*", "dd *", "bun x foo*"
]
const rules: ReadonlyArray<PermissionPolicy.Rule> = patterns.map((command, i) => ({ name: `r${i}`, tool: "shell", command, decision: i % 2 === 0 ? "deny" : "ask" }))

const words = 65_000
const lines = ["echo", "git", "npm", "make"].map((program) => `${program} ${Array.from({ length: words }, () => "a").join(" ")}`)

/** The words and units visited deciding `command` under `rules`, the call prepared beforehand. */
const workOf = async (command: string, under: ReadonlyArray<PermissionPolicy.Rule>) => {
  const call = await prepare(command)
  const before = CommandPattern.visited.count
  const decision = PermissionPolicy.decide({ mode: "default", rules: under }, { sessionId: "s", cwd, call, remembered: [] })
  return { decision, work: CommandPattern.visited.count - before }
}

describe("a decision's cost on a long line", () => {
  it("is bounded by the line's words and the rules, not their product", async () => {
    for (const line of lines) {
      const { decision, work } = await workOf(line, rules)
      expect(decision.decision).toBe("ask")
      // The line read a few times over, and each rule a constant: 65,000 words × 20 rules read twice was 2.6 million.
      expect(work, line.slice(0, 8)).toBeLessThanOrEqual(4 * (2 * words + rules.length))
    }
  }, 120_000)

  it("grows with the rules by a constant each", async () => {
    const one = await workOf(lines[0]!, rules.slice(0, 1))
    const twenty = await workOf(lines[0]!, rules)
    expect(twenty.work - one.work).toBeLessThanOrEqual(1_000 * (rules.length - 1))
  }, 120_000)

  it("a command naming git over and over is read in time linear in its words, and asks", async () => {
    // Each git's line settings were read over the command's words: 8,000 words `git git git …` visited
    // 64 million (6 s under a deny rule, then allowed in bypass); 32,000 (within the line limit) a billion.
    const gits = 8_000
    const line = `git ${Array.from({ length: gits }, () => "git").join(" ")}`
    const { decision, work } = await workOf(line, rules.slice(0, 1))
    expect(work).toBeLessThanOrEqual(16 * (gits + 1))
    expect(decision).toMatchObject({ decision: "ask", policy: "too-much-to-read", reason: expect.stringMatching(/32 gits in one command/) })
    // In bypass too; a deny the line matches still denies, and a few gits are read as before.
    expect(await decide("bypass", line, rules)).toMatchObject({ decision: "ask", policy: "too-much-to-read" })
    expect(await decide("bypass", `git push origin ${line}`, rules)).toMatchObject({ decision: "deny", policy: "r0" })
    expect(await decide("bypass", `git -c alias.x=push ${Array.from({ length: 31 }, () => "git").join(" ")} ; git -c alias.x=push x`, rules))
      .toMatchObject({ decision: "deny", policy: "r0" })
  }, 120_000)

  it("many commands under many rules: a bounded number of the line's commands read in all, then it asks (denies where no rule could allow its hazards)", async () => {
    // Each deny or ask rule read every simple command of the line: 16,000 `a;a;a…` under 100 rules was
    // 1.6 million reads (10 s on a loaded machine), and a settings file may hold 500 rules.
    const many = Array.from({ length: 100 }, (_, i): PermissionPolicy.Rule => ({ name: `m${i}`, tool: "shell", command: `prog${i} x*`, decision: i % 2 === 0 ? "deny" : "ask" }))
    const line = Array.from({ length: 16_000 }, () => "a").join(";")
    const { decision, work } = await workOf(line, many)
    expect(work).toBeLessThanOrEqual(2 * CommandPattern.commandsLimit)
    // No rule here can allow or ask about chaining (none spells it out), so whatever the unread
    // commands hold the line is denied: the hazard check's deny, as on a short line.
    expect(decision).toMatchObject({ decision: "deny", policy: "command-hazards" })
    // With a rule that could allow it, what the unread commands hold decides: it asks, saying why.
    const chaining: PermissionPolicy.Rule = { name: "chain", tool: "shell", command: "a; *", decision: "allow" }
    const unread = await workOf(line, [...many, chaining])
    expect(unread.work).toBeLessThanOrEqual(2 * CommandPattern.commandsLimit)
    expect(unread.decision).toMatchObject({ decision: "ask", policy: "too-much-to-read", reason: expect.stringMatching(/100,000/) })
    expect(await decide("bypass", line, [...many, chaining])).toMatchObject({ decision: "ask", policy: "too-much-to-read" })
    // A deny of what each rule read first still denies; a line of a few hundred commands is decided as before.
    expect(await decide("bypass", `prog4 x; ${line}`, many)).toMatchObject({ decision: "deny", policy: "m4" })
    expect(await decide("bypass", Array.from({ length: 500 }, () => "a").join(";"), many)).toMatchObject({ decision: "deny", policy: "command-hazards" })
  }, 120_000)

  it("decides as before", async () => {
    expect(await decide("bypass", `${lines[0]} ; git push origin`, rules)).toMatchObject({ decision: "deny", policy: "r0" })
    expect(await decide("bypass", `${lines[0]} && npm rum deploy`, rules)).toMatchObject({ decision: "deny", policy: "r10" })
    expect(await decide("bypass", `${lines[1]} && env git -c alias.x=push x`, rules)).toMatchObject({ decision: "deny", policy: "r0" })
    expect(await decide("bypass", `make -C b clean deploy ${lines[0]}`, rules)).toMatchObject({ decision: "ask", policy: "r5" })
    expect(await decide("bypass", `npm exec --yes cowsay ${lines[0]}`, rules)).toMatchObject({ decision: "deny", policy: "r6" })
    expect(await decide("bypass", lines[0]!, rules)).toMatchObject({ decision: "allow", policy: "bypass" })
  }, 120_000)
})
