/**
 * The CLI's policy keeps an ask's reason for the question that asks it (run, chat): once, for the
 * latest decision about that call only, and never more than a bounded number of them.
 *
 * A subagent's call is decided on its own session and again on its parent's (`Subagents.permissions`):
 * the stricter decision stands, the subagent's own on a tie. Its question must carry the reason of the
 * policy whose ask stood — a parent's rule that did not cover the call is not what asked when the
 * subagent's own policy asked too (an embedder's engine may keep other rules for the subagent's session), and its advice
 * ("allow it with …") would not stop the question.
 */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as Policy from "../../src/cli/Policy.js"
import { PermissionEngine, PermissionPolicy } from "../../src/index.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const shell = (toolCallId: string, text: string): PreparedCall => ({
  toolCallId,
  tool: "shell",
  args: { command: text },
  risk: "write",
  sequential: false,
  paths: [],
  scope: `shell:${text}`,
  input: {},
  command: { text, argv: text.split(" "), hazards: [] }
})

describe("Policy.configurable: ask reasons", () => {
  it("an ask's reason is taken once; a later decision about the same call without one clears it", async () => {
    const policy = Policy.configurable()
    await Effect.runPromise(policy.configure({ mode: "default", rules: [{ name: "--allow shell:sed *", decision: "allow", tool: "shell", command: "sed *" }] }))
    const decide = (sessionId: string, call: PreparedCall) =>
      Effect.runPromise(Effect.flatMap(PermissionEngine.PermissionEngine, (engine) => engine.decide({ sessionId, cwd: "/work", call, remembered: [] })).pipe(Effect.provide(policy.layer)))

    expect((await decide("s1", shell("c1", "sed -i s/a/b/ f.txt"))).decision).toBe("ask")
    expect(policy.takeAskReason("s2", "c1")).toBeUndefined()
    expect(policy.takeAskReason("s1", "c1")).toMatchObject({ reason: expect.stringContaining("--allow shell:sed *"), allowCommand: "sed -i s/a/b/ f.txt" })
    expect(policy.takeAskReason("s1", "c1")).toBeUndefined()

    await decide("s1", shell("c2", "sed -i s/a/b/ f.txt"))
    await decide("s1", shell("c2", "touch x"))
    expect(policy.takeAskReason("s1", "c2")).toBeUndefined()

    for (let i = 0; i < 300; i++) await decide("s1", shell(`many${i}`, "sed -i s/a/b/ f.txt"))
    expect(policy.takeAskReason("s1", "many0")).toBeUndefined()
    expect(policy.takeAskReason("s1", "many299")).toBeDefined()
  })
})

const sedI = "sed -i s/a/b/ f.txt"
const sedRule: PermissionPolicy.Rule = { name: "shell:sed *", decision: "allow", tool: "shell", command: "sed *" }
const exactRule: PermissionPolicy.Rule = { name: `shell:${sedI}`, decision: "allow", tool: "shell", command: sedI }
const withRule = { mode: "default" as const, rules: [sedRule] }
const noRule = { mode: "default" as const, rules: [] }
const allowing = { mode: "default" as const, rules: [exactRule] }

/** Decides the call on the subagent's session and on its parent's, as `Subagents.permissions` does, noting each; then the question's reason. */
const reasonOf = (own: PermissionPolicy.Options, parent: PermissionPolicy.Options) => {
  const call = shell("c1", sedI)
  const reasons = PermissionPolicy.askReasons()
  const decided = {
    own: reasons.note({ sessionId: "child", cwd: "/work", call, remembered: [] }, PermissionPolicy.decide(own, { sessionId: "child", cwd: "/work", call, remembered: [] })),
    parent: reasons.note({ sessionId: "parent", cwd: "/work", call, remembered: [] }, PermissionPolicy.decide(parent, { sessionId: "parent", cwd: "/work", call, remembered: [] }))
  }
  const reason = PermissionPolicy.subagentAskReason(reasons.takeAsk, "parent", { childSessionId: "child", childToolCallId: "c1" })
  // Both are taken: nothing is left for a question that will not come.
  expect([reasons.take("child", "c1"), reasons.take("parent", "c1")]).toEqual([undefined, undefined])
  return { decided, reason }
}

describe("PermissionPolicy.subagentAskReason: the reason of the policy whose ask stood", () => {
  it("the subagent's own policy asked with no reason, the parent's with one: none (its own ask stood, on the tie)", () => {
    const { decided, reason } = reasonOf(noRule, withRule)
    expect([decided.own.decision, decided.own.reason, decided.parent.decision]).toEqual(["ask", undefined, "ask"])
    expect(decided.parent.reason).toContain("shell:sed *")
    expect(reason).toBeUndefined()
  })

  it("the subagent's own policy allowed, the parent's asked with a reason: the parent's (its stricter ask stood)", () => {
    const { decided, reason } = reasonOf(allowing, withRule)
    expect(decided.own.decision).toBe("allow")
    expect(reason?.reason).toContain("shell:sed *")
    expect(reason?.allowCommand).toBe(sedI)
  })

  it("both asked with a reason: the subagent's own", () => {
    const own = { mode: "default" as const, rules: [{ ...sedRule, name: "own sed rule" }] }
    expect(reasonOf(own, withRule).reason?.reason).toContain("own sed rule")
  })

  it("the subagent's own asked with a reason, the parent allowed: the subagent's", () => {
    expect(reasonOf(withRule, allowing).reason?.reason).toContain("shell:sed *")
  })
})
