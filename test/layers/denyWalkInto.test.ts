/**
 * A read of a whole tree concerns the deny and ask path rules for paths below it: with a deny of
 * `/etc/**`, `grep -r x /` reads `/etc/shadow`'s neighbours as surely as `grep -r x /etc` does. Before,
 * in `bypass`, `grep -r x /`, `ls -R /`, `find / -name passwd` and the `grep` tool on `/` ran, and
 * `grep -r API_KEY .` ran past a deny of `.env` in every mode that allows reads inside cwd. The built-in
 * `grep` tool's own walk is fenced instead (it leaves those paths out): it answers.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-walk-into-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
mkdirSync(join(cwd, "src"))
mkdirSync(join(cwd, "config"))
writeFileSync(join(cwd, ".env"), "API_KEY=secret\n")
writeFileSync(join(cwd, "src", "a.ts"), "export {}\n")
const { decide } = shellDecisions(cwd)

const rule = (decision: "deny" | "ask", path: string): PermissionPolicy.Rule => ({ name: `${decision}-rule`, path, decision })

/** The grep tool's call over `path`, prepared. */
const grepCall = (path: string) => {
  const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
  return Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "grep", args: { pattern: "x", path } }, cwd))
}

/** The grep tool's decision; `fenced`: the engine running it applies the policy's fence to its walk. */
const grepTool = async (mode: PermissionPolicy.Mode, path: string, rules: ReadonlyArray<PermissionPolicy.Rule>, fenced = true) =>
  PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd, call: await grepCall(path), remembered: [], fenced })

const grepFence = async (path: string, rules: ReadonlyArray<PermissionPolicy.Rule>) =>
  PermissionPolicy.fence({ rules }, { sessionId: "s", cwd, call: await grepCall(path), remembered: [] })

describe("a walk that may reach what a deny or ask rule fences asks", () => {
  for (const command of ["grep -r x /", "ls -R /", "find / -name passwd", "du -a /", "nice grep -r x /"]) {
    it(`${command} with a deny of /etc/** asks in bypass`, async () => {
      expect(await decide("bypass", command, [rule("deny", "/etc/**")])).toMatchObject({ decision: "ask", policy: "deny-rule" })
      expect(await decide("bypass", command, [rule("ask", "/etc/**")])).toMatchObject({ decision: "ask", policy: "ask-rule" })
    })
  }

  it("the grep tool on / answers instead, its walk fenced: it leaves out what the rule matches (test/engine/grepFence.test.ts)", async () => {
    expect(await grepTool("bypass", "/", [rule("deny", "/etc/**")])).toMatchObject({ decision: "allow" })
    // Where nothing will apply the fence (an engine wrapping the policy with `decide` alone), it asks.
    expect(await grepTool("bypass", "/", [rule("deny", "/etc/**")], false)).toMatchObject({ decision: "ask", policy: "deny-rule" })
    const fence = await grepFence("/", [rule("deny", "/etc/**")])
    expect(fence?.({ real: "/etc/shadow", relative: undefined, written: "/etc/shadow" })).toBe(true)
    expect(fence?.({ real: "/etc", relative: undefined, written: "/etc" })).toBe(true)
    expect(fence?.({ real: "/usr/lib/x", relative: undefined, written: "/usr/lib/x" })).toBe(false)
  })

  it("a deny of a file in cwd concerns a walk of cwd, in every mode", async () => {
    for (const mode of ["default", "acceptEdits", "bypass"] as const) {
      expect(await decide(mode, "grep -r API_KEY .", [rule("deny", ".env")])).toMatchObject({ decision: "ask", policy: "deny-rule" })
      // The grep tool's own walk leaves `.env` out instead of asking.
      expect(await grepTool(mode, ".", [rule("deny", ".env")])).toMatchObject({ decision: "allow" })
      expect(await grepTool(mode, ".", [rule("deny", ".env")], false)).toMatchObject({ decision: "ask", policy: "deny-rule" })
      const fence = await grepFence(".", [rule("deny", ".env")])
      expect(fence?.({ real: join(cwd, ".env"), relative: ".env", written: ".env" })).toBe(true)
      // By what a link leads to, and by the name it was reached by.
      expect(fence?.({ real: join(cwd, ".env"), relative: ".env", written: "src/link" })).toBe(true)
      expect(fence?.({ real: join(cwd, "src", "a.ts"), relative: "src/a.ts", written: ".env" })).toBe(true)
      expect(fence?.({ real: join(cwd, "src", "a.ts"), relative: "src/a.ts", written: "src/a.ts" })).toBe(false)
    }
    const decision = await decide("default", "grep -r API_KEY .", [rule("deny", ".env")])
    expect(decision.reason).toContain(`the rule "deny-rule" forbids`)
  })

  it("a walk of a folder above cwd reaches a relative rule's paths", async () => {
    expect(await decide("bypass", `grep -r API_KEY ${join(cwd, "..")}`, [rule("deny", ".env")])).toMatchObject({ decision: "ask" })
  })

  it("a walk that cannot reach the rule's paths is decided as before", async () => {
    expect(await decide("bypass", "grep -r x /usr", [rule("deny", "/etc/**")])).toMatchObject({ decision: "allow" })
    expect(await decide("bypass", "grep -r x src", [rule("deny", "config/**")])).toMatchObject({ decision: "allow" })
    expect(await grepTool("default", "src", [rule("deny", ".env")])).toMatchObject({ decision: "allow" })
    // Not a walk: the folder itself is not read below.
    expect(await decide("bypass", "ls /", [rule("deny", "/etc/**")])).toMatchObject({ decision: "allow" })
    expect(await decide("bypass", "cat src/a.ts", [rule("deny", ".env")])).toMatchObject({ decision: "allow" })
  })

  it("a rule's tool and command must still match", async () => {
    const onlyCat: PermissionPolicy.Rule = { name: "cat-etc", tool: "shell", command: "cat*", path: "/etc/**", decision: "deny" }
    expect(await decide("bypass", "grep -r x /", [onlyCat])).toMatchObject({ decision: "allow" })
    const onlyReadFile: PermissionPolicy.Rule = { name: "read-etc", tool: "read_file", path: "/etc/**", decision: "deny" }
    expect(await decide("bypass", "grep -r x /", [onlyReadFile])).toMatchObject({ decision: "allow" })
  })

  it("a deny that matches outright still denies", async () => {
    expect(await decide("bypass", "grep -r x /etc", [rule("deny", "/etc/**")])).toMatchObject({ decision: "deny" })
  })
})
