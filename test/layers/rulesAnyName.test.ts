/**
 * leftovers43 item 1. A deny or ask path rule fences a file however a call names it. A relative rule
 * (`../secrets/**`) was matched against the path relative to the cwd only when the file was inside
 * it, and against the text as written: the same file named absolutely (`/…/secrets/key`) passed it —
 * in `bypass`, read. The reverse too: an absolute rule written through a link (the cwd as the user
 * names it) missed `private/k` written relative; and a rule's own `./x` or `a//b` matched nothing.
 * Failed on main: each "deny" below was an allow. Allow rules stay exact: they are not widened.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-rules-any-name-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
const cwd = NodePath.join(root, "ws")
// The cwd as the user names it: through a link, as /home → /usr/home.
const linkedCwd = NodePath.join(root, "ws_link")
NodeFs.mkdirSync(NodePath.join(cwd, "private"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(cwd, "src"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(root, "secrets"), { recursive: true })
NodeFs.writeFileSync(NodePath.join(root, "secrets", "key"), "outside\n")
NodeFs.writeFileSync(NodePath.join(cwd, "private", "k"), "inside\n")
NodeFs.symlinkSync(cwd, linkedCwd)

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (tool: string, args: Record<string, unknown>, at: string): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool, args: args as never }, at))
const decide = async (rules: ReadonlyArray<PermissionPolicy.Rule>, tool: string, args: Record<string, unknown>, at = cwd, mode: PermissionPolicy.Mode = "bypass") =>
  PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd: at, call: await prepare(tool, args, at), remembered: [] })
const deny = (path: string): PermissionPolicy.Rule => ({ name: "fenced", decision: "deny", path })
const denied = { decision: "deny", policy: "fenced" }

describe("a relative deny rule fences the file however the call names it", () => {
  const names = (at: string) => [
    "../secrets/key",
    `${root}/secrets/key`,
    `${root}//secrets/./key`,
    `${at}/../secrets/key`
  ]
  for (const at of [cwd, linkedCwd]) {
    it.each(names(at))(`deny ../secrets/** denies read_file %s in bypass (cwd ${at === cwd ? "real" : "through a link"})`, async (path) => {
      expect(await decide([deny("../secrets/**")], "read_file", { path }, at)).toMatchObject(denied)
      expect(await decide([{ ...deny("../secrets/**"), decision: "ask" }], "read_file", { path }, at)).toMatchObject({ decision: "ask", policy: "fenced" })
    })
  }

  it("a shell line naming it absolutely is denied (the folder too), and a walk of a folder above it asks", async () => {
    expect(await decide([deny("../secrets/**")], "shell", { command: `cat ${root}/secrets/key` })).toMatchObject(denied)
    expect(await decide([deny("../secrets/**")], "shell", { command: `grep -r x ${root}/secrets` })).toMatchObject(denied)
    expect(await decide([deny("../secrets/**")], "shell", { command: `grep -r x ${root}` })).toMatchObject({ decision: "ask", policy: "fenced" })
    expect(await decide([deny("../secrets/**")], "shell", { command: `grep -r x ${root}/ws/src` })).toEqual({ decision: "allow", policy: "bypass" })
  })
})

describe("an absolute deny rule fences the file named relative", () => {
  for (const [label, rule] of [["real", `${cwd}/private/**`], ["through the link", `${linkedCwd}/private/**`]] as const) {
    it.each(["private/k", "./private/k", "private//k", "src/../private/k"])(`a rule written ${label} denies read_file %s`, async (path) => {
      expect(await decide([deny(rule)], "read_file", { path }, linkedCwd)).toMatchObject(denied)
      expect(await decide([deny(rule)], "read_file", { path }, cwd)).toMatchObject(denied)
    })
  }
})

describe("a rule's own ./ and // name what they would without them", () => {
  it.each(["./private/**", "private//**", "./private//k", "src/../private/k", `${root}/./ws//private/**`])("deny %s denies read_file private/k", async (rule) => {
    expect(await decide([deny(rule)], "read_file", { path: "private/k" })).toMatchObject(denied)
    expect(await decide([deny(rule)], "read_file", { path: `${cwd}/private/k` })).toMatchObject(denied)
  })

  it("an allow rule's ./ and // are read the same way, and it is not widened otherwise", async () => {
    const allow = (path: string): PermissionPolicy.Rule => ({ name: "allowed", decision: "allow", tool: "write_file", path })
    const write = { path: "src/a.ts", content: "x" }
    expect(await decide([allow("./src/**")], "write_file", write, cwd, "default")).toEqual({ decision: "allow", policy: "allowed" })
    expect(await decide([allow("src//**")], "write_file", write, cwd, "default")).toEqual({ decision: "allow", policy: "allowed" })
    // `..` is a link's parent, not the word's: an allow never reads it away.
    expect(await decide([allow("private/../src/**")], "write_file", write, cwd, "default")).toMatchObject({ decision: "ask" })
    // An allow matches the real path relative to the cwd only: not the text written, not outside.
    expect(await decide([allow("../secrets/**")], "read_file", { path: "../secrets/key" }, cwd, "readOnly")).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    expect(await decide([allow(`${linkedCwd}/src/**`)], "write_file", write, linkedCwd, "default")).toMatchObject({ decision: "ask" })
  })
})
