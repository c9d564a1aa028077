/**
 * The CLI's policy keeps an ask's reason for the question that asks it (run, chat): once, for the
 * latest decision about that call only, and never more than a bounded number of them.
 */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as Policy from "../../src/cli/Policy.js"
import { PermissionEngine } from "../../src/index.js"
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
